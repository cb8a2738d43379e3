// The CUDA-free part of memsamples.hpp that has no support/ file of its own: error text, byte
// counts and buffer sizing, and the runner. Nothing here calls into libcuda, so the unit tests run
// on machines without a driver. The rest of the CUDA-free code is in support/*.cpp, the driver
// half in memsamples_cuda.cpp and memsamples_check.cpp.
#include "memsamples.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

#include "support/devices.hpp"

namespace memsamples {

// --------------------------------------------------------------------------------------- errors

std::string formatCallFailure(std::string_view call, std::string_view file, int line,
                              std::string_view description) {
  const std::size_t slash = file.find_last_of('/');
  const std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  return std::string(call) + " failed at " + std::string(base) + ":" + std::to_string(line) + ": " +
         std::string(description);
}

// --------------------------------------------------------------------------------------- sizing

std::string formatBytes(std::uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text,
                value < 10    ? "%.2f %s"
                : value < 100 ? "%.1f %s"
                              : "%.0f %s",
                value, units[unit]);
  return text;
}

std::uint64_t chooseBufferBytes(const std::optional<std::uint64_t>& requested,
                                std::uint64_t defaultBytes, std::uint64_t freeBytes, int buffers,
                                std::uint64_t elementBytes, std::string_view where) {
  const auto count = static_cast<std::uint64_t>(buffers);
  if (requested) {
    if (*requested % elementBytes != 0) {
      throw UsageError("--size " + std::to_string(*requested) + " is not a multiple of " +
                       std::to_string(elementBytes) + " bytes (one element)");
    }
    if (*requested > freeBytes / count) {
      const std::uint64_t limit = freeBytes / count;
      // Rounded figures could read "1.00 GiB ... at most 1.00 GiB": then give exact bytes.
      const bool sameText = formatBytes(*requested) == formatBytes(limit);
      const auto show = [sameText](std::uint64_t bytes) {
        return sameText ? std::to_string(bytes) + " bytes" : formatBytes(bytes);
      };
      throw UsageError("--size " + show(*requested) + " needs " + std::to_string(buffers) +
                       " buffers but " + std::string(where) + " has only " + show(freeBytes) +
                       " free; choose at most " + show(limit));
    }
    return *requested;
  }
  constexpr std::uint64_t kStep = 2ull << 20;
  const std::uint64_t budget = freeBytes / 10 * 8 / count / kStep * kStep;
  const std::uint64_t bytes = std::min(defaultBytes, budget);
  if (bytes < elementBytes) {
    throw std::runtime_error(std::string(where) + " has only " + formatBytes(freeBytes) +
                             " free, too little for " + std::to_string(buffers) + " buffers");
  }
  return bytes;
}

// --------------------------------------------------------------------------------------- runner

std::ostream& Report::out() {
  if (humanText_ != nullptr)
    return *humanText_;
  static thread_local std::ostream discard(nullptr);  // a stream without buffer drops everything
  return discard;
}

namespace {

// The compute modes that explain a CUDA_ERROR_DEVICE_UNAVAILABLE, or "" when none does.
std::string unavailableDeviceReason() {
  const ComputeModeSource source = computeModeSource();
  return source == nullptr ? "" : deviceUnavailableExplanation(source());
}

}  // namespace

int runSample(CommandLine& commandLine, const CommonOptions& options, int argc,
              const char* const* argv, const std::function<Verdict(Report&)>& body) {
  const std::string& program = commandLine.program();
  try {
    if (!commandLine.parse(argc, argv))
      return kExitPass;
  } catch (const UsageError& error) {
    std::cerr << program << ": " << error.what() << "\nRun '" << program
              << " --help' for the options.\n";
    return kExitFail;
  }

  // Open the JSON destination before any GPU work so that a bad path costs nothing.
  std::ofstream jsonFile;
  const bool jsonToStdout = options.jsonPath == "-";
  if (!options.jsonPath.empty() && !jsonToStdout) {
    jsonFile.open(options.jsonPath);
    if (!jsonFile) {
      std::cerr << program << ": cannot open --json file '" << options.jsonPath
                << "': " << std::strerror(errno) << '\n';
      return kExitFail;
    }
  }
  // With JSON on stdout, people's text moves to stderr so that stdout stays machine-readable.
  std::ostream& verdictStream = jsonToStdout ? std::cerr : std::cout;
  Report report(options.quiet ? nullptr : &verdictStream);

  std::string verdict;
  std::string detail;
  int exitCode = kExitFail;
  const auto waive = [&](const std::string& reason) {
    verdict = "WAIVED";
    detail = reason;
    exitCode = kExitWaived;
    verdictStream << "WAIVED: " << detail << '\n';
  };
  const auto fail = [&](const std::string& error) {
    verdict = "FAIL";
    detail = error;
    std::cerr << program << ": error: " << detail << '\n';
    verdictStream << "Result = FAIL\n";
  };
  try {
    exitCode = body(report) == Verdict::Pass ? kExitPass : kExitFail;
    verdict = exitCode == kExitPass ? "PASS" : "FAIL";
    verdictStream << "Result = " << verdict << '\n';
  } catch (const WaivedError& waived) {
    waive(waived.what());
  } catch (const UsageError& error) {
    verdict = "FAIL";
    detail = error.what();
    std::cerr << program << ": " << detail << "\nRun '" << program << " --help' for the options.\n";
  } catch (const CudaError& error) {
    // The device is there but cannot be used now (in compute mode EXCLUSIVE_PROCESS another
    // process has a context on it): that is the machine's state, not a fault of the sample.
    // Only where a compute mode explains it; on devices in DEFAULT mode it is an error.
    const std::string what = error.what();
    if (error.result() != CUDA_ERROR_DEVICE_UNAVAILABLE) {
      fail(what);
    } else if (const std::string why = unavailableDeviceReason(); !why.empty()) {
      waive(what + " (another process holds the device, or its compute mode forbids this one: " +
            why + ")");
    } else {
      fail(what + " (no device is in an exclusive or prohibited compute mode, so nothing "
                  "about this machine explains it)");
    }
  } catch (const std::exception& error) {
    fail(error.what());
  }

  if (!options.jsonPath.empty()) {
    JsonObject& json = report.json();
    JsonObject result;
    result.set("sample", program).set("verdict", verdict);
    if (!detail.empty())
      result.set(verdict == "WAIVED" ? "reason" : "error", detail);
    result.set("results", json);
    std::ostream& sink = jsonToStdout ? std::cout : static_cast<std::ostream&>(jsonFile);
    sink << result.dump() << std::endl;
    if (!sink) {
      std::cerr << program << ": writing the JSON result to '" << options.jsonPath << "' failed\n";
      return kExitFail;
    }
  }
  verdictStream.flush();
  return exitCode;
}

}  // namespace memsamples
