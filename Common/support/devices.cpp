// The CUDA-free device rules of support/devices.hpp: default device, --device check, compute
// modes, which GPU beside the chosen one a run leaves out, driver results, versions and entry
// points, topology shape, VMM granularity, theoretical bandwidth. Unit tested in ctest/unit/common
// (cli_test, compute_mode_test, left_out_test, errors_test, driver_version_test, sysfs_test).
#include "support/devices.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "memsamples.hpp"

namespace memsamples {

bool isUnusableDriverResult(CUresult result) {
  switch (result) {
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return true;
    default:
      return false;
  }
}

std::string formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string driverTooOldReason(int driverVersion, int builtVersion) {
  // Minor version compatibility: any driver of the toolkit's major version starts the program.
  const int neededMajor = builtVersion / 1000;
  if (driverVersion / 1000 >= neededMajor)
    return "";
  return "the NVIDIA driver supports CUDA " + formatCudaVersion(driverVersion) +
         ", but this sample was built with CUDA " + formatCudaVersion(builtVersion) +
         " and needs a driver for CUDA " + formatCudaVersion(neededMajor * 1000) + " or newer";
}

std::string missingEntryPointReason(std::string_view name, int driverVersion, int builtVersion) {
  const std::string built = formatCudaVersion(builtVersion);
  std::string reason = "the NVIDIA driver (CUDA " + formatCudaVersion(driverVersion) + ") has no " +
                       std::string(name) + ", which this sample (built with CUDA " + built +
                       ") needs";
  if (driverVersion < builtVersion)
    reason += "; a driver for CUDA " + built + " or newer has it";
  return reason;
}

std::string computeModeName(int mode) {
  switch (mode) {
    case CU_COMPUTEMODE_DEFAULT:
      return "DEFAULT (CU_COMPUTEMODE_DEFAULT)";
    case CU_COMPUTEMODE_PROHIBITED:
      return "PROHIBITED (CU_COMPUTEMODE_PROHIBITED)";
    case CU_COMPUTEMODE_EXCLUSIVE_PROCESS:
      return "EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS)";
    default:
      return std::to_string(mode) + " (unknown to this build)";
  }
}

std::string computeModeProblem(int ordinal, int mode, DeviceUse use) {
  const std::string device =
      "device " + std::to_string(ordinal) + " is in compute mode " + computeModeName(mode);
  if (mode == CU_COMPUTEMODE_PROHIBITED)
    return device + ": no context can be created";
  if (mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS && use == DeviceUse::SeveralProcesses) {
    return device +
           ": one process at a time may have a context on it, and this sample needs "
           "several";
  }
  return "";
}

std::optional<std::string> whyNoContext(const ExtraGpu& gpu) {
  if (!gpu.computeModeProblem.empty())
    return gpu.computeModeProblem;
  if (gpu.contextRefused.empty())
    return std::nullopt;
  std::string why =
      "device " + std::to_string(gpu.ordinal) + " refused a context (" + gpu.contextRefused + ")";
  // In EXCLUSIVE_PROCESS mode a refusal means another process holds the GPU's one context.
  if (gpu.computeMode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS)
    why += ": it is in compute mode " + computeModeName(gpu.computeMode) +
           " and another process holds it";
  return why;
}

std::optional<std::string> whyLeftOut(const ExtraGpu& gpu, const BuffersPerGpu& need,
                                      std::string_view hint) {
  if (std::optional<std::string> why = whyNoContext(gpu))
    return why;

  // The share chooseBufferBytes() leaves a device: 80 % of its free memory.
  const std::uint64_t share = gpu.freeBytes / 10 * 8;
  if (need.bytes <= share / static_cast<std::uint64_t>(need.count))
    return std::nullopt;

  std::string why = "device " + std::to_string(gpu.ordinal) + " has only " +
                    formatBytes(gpu.freeBytes) + " free, too little for " +
                    std::to_string(need.count) + " " + need.noun + " of " + formatBytes(need.bytes);
  if (!hint.empty())
    why += " (" + std::string(hint) + ")";
  return why;
}

std::string deviceUnavailableExplanation(const std::vector<int>& computeModes) {
  std::string explanation;
  for (std::size_t ordinal = 0; ordinal < computeModes.size(); ++ordinal) {
    const int mode = computeModes[ordinal];
    if (mode != CU_COMPUTEMODE_EXCLUSIVE_PROCESS && mode != CU_COMPUTEMODE_PROHIBITED)
      continue;
    explanation += (explanation.empty() ? "" : ", ") + std::string("device ") +
                   std::to_string(ordinal) + " is in compute mode " + computeModeName(mode);
  }
  return explanation;
}

namespace {
ComputeModeSource installedComputeModeSource = nullptr;
}  // namespace

void setComputeModeSource(ComputeModeSource source) {
  installedComputeModeSource = source;
}

ComputeModeSource computeModeSource() {
  return installedComputeModeSource;
}

int chooseDevice(const std::vector<DeviceScore>& devices, const std::optional<long long>& requested,
                 DeviceUse use) {
  const int count = static_cast<int>(devices.size());
  if (count == 0)
    throw WaivedError("no CUDA device found");
  if (requested) {
    const int ordinal = validateDeviceOrdinal(*requested, count);
    const std::string problem = computeModeProblem(ordinal, devices[ordinal].computeMode, use);
    if (!problem.empty())
      throw WaivedError(problem);
    return ordinal;
  }
  // The fastest of the devices that can be used; the others do not compete.
  std::vector<int> usable;
  std::vector<DeviceScore> scores;
  std::string problems;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    const std::string problem = computeModeProblem(ordinal, devices[ordinal].computeMode, use);
    if (problem.empty()) {
      usable.push_back(ordinal);
      scores.push_back(devices[ordinal]);
    } else {
      problems += (problems.empty() ? "" : "; ") + problem;
    }
  }
  if (usable.empty()) {
    throw WaivedError(count == 1 ? problems
                                 : "none of the " + std::to_string(count) +
                                       " devices can be used: " + problems);
  }
  return usable[static_cast<std::size_t>(pickFastestDevice(scores))];
}

int pickFastestDevice(const std::vector<DeviceScore>& devices) {
  if (devices.empty())
    throw std::invalid_argument("pickFastestDevice: no devices");
  int best = 0;
  long long bestScore = -1;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const long long score =
        static_cast<long long>(devices[i].multiprocessors) * devices[i].clockKHz;
    if (score > bestScore) {
      bestScore = score;
      best = static_cast<int>(i);
    }
  }
  return best;
}

int validateDeviceOrdinal(long long requested, int deviceCount) {
  if (requested < 0 || requested >= deviceCount) {
    const std::string valid =
        deviceCount == 1 ? "valid: 0" : "valid: 0.." + std::to_string(deviceCount - 1);
    throw UsageError("--device " + std::to_string(requested) +
                     " is out of range: this machine has " + std::to_string(deviceCount) +
                     (deviceCount == 1 ? " CUDA device (" : " CUDA devices (") + valid + ")");
  }
  return static_cast<int>(requested);
}

double peakBandwidthGBps(int memoryClockKHz, int busWidthBits) {
  return static_cast<double>(memoryClockKHz) * 1e3 * 2.0 * busWidthBits / 8.0 / 1e9;
}

std::size_t allocationGranularity(std::size_t bytes, std::size_t minimum, std::size_t recommended) {
  if (minimum == 0)
    throw std::invalid_argument("allocationGranularity: the minimum granularity is 0");
  const bool usable = recommended > 0 && recommended % minimum == 0;
  return usable && bytes >= recommended ? recommended : minimum;
}

void DeviceTopology::checkShape() const {
  const auto count = static_cast<std::size_t>(deviceCount());
  if (canAccessPeer.size() != count) {
    throw std::invalid_argument("device topology: the peer matrix has " +
                                std::to_string(canAccessPeer.size()) + " rows for " +
                                std::to_string(count) + " devices");
  }
  for (const std::vector<bool>& row : canAccessPeer) {
    if (row.size() != count) {
      throw std::invalid_argument("device topology: a peer matrix row has " +
                                  std::to_string(row.size()) + " columns for " +
                                  std::to_string(count) + " devices");
    }
  }
}

}  // namespace memsamples
