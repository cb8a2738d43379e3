// The CUDA-free half of the Common helper: parsing, paths, statistics, JSON and the runner.
// Nothing here calls into libcuda, so the unit tests run on machines without a driver.
#include "memsamples.hpp"

#include <unistd.h>

#include <sys/stat.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

namespace memsamples {
namespace {

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

bool isRegularFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string_view trimSpace(std::string_view text) {
  const auto isSpace = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && isSpace(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back()))
    text.remove_suffix(1);
  return text;
}

std::string parentFolder(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

}  // namespace

// ------------------------------------------------------------------------------------- errors

std::string formatCallFailure(std::string_view call, std::string_view file, int line,
                              std::string_view description) {
  const std::size_t slash = file.find_last_of('/');
  const std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  return std::string(call) + " failed at " + std::string(base) + ":" + std::to_string(line) + ": " +
         std::string(description);
}

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
  if (driverVersion >= builtVersion)
    return "";
  const std::string built = formatCudaVersion(builtVersion);
  return "the NVIDIA driver supports CUDA " + formatCudaVersion(driverVersion) +
         ", but this sample was built with CUDA " + built + " and needs a driver for CUDA " +
         built + " or newer";
}

// ---------------------------------------------------------------------------- command line values

long long parseInteger(std::string_view text, std::string_view what, long long min, long long max) {
  long long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(first, last, value);
  if (text.empty() || error == std::errc::invalid_argument || end != last) {
    throw UsageError("invalid value " + quoted(text) + " for " + std::string(what) +
                     ": expected an integer");
  }
  if (error == std::errc::result_out_of_range || value < min || value > max) {
    throw UsageError("value " + quoted(text) + " for " + std::string(what) + " is out of range [" +
                     std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
}

std::uint64_t parseSize(std::string_view text, std::string_view what, std::uint64_t min,
                        std::uint64_t max) {
  const auto digitsEnd =
      std::find_if(text.begin(), text.end(), [](char c) { return c < '0' || c > '9'; });
  const std::string_view digits =
      text.substr(0, static_cast<std::size_t>(digitsEnd - text.begin()));
  std::string suffix(text.substr(digits.size()));
  std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  const std::string expected = "expected a byte count such as 4096, 64K, 256M or 1G";
  if (digits.empty()) {
    throw UsageError("invalid size " + quoted(text) + " for " + std::string(what) + ": " +
                     expected);
  }
  unsigned shift = 0;
  if (!suffix.empty() && suffix != "B") {
    switch (suffix[0]) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        throw UsageError("invalid size " + quoted(text) + " for " + std::string(what) +
                         ": unknown suffix " + quoted(text.substr(digits.size())) + ", " +
                         expected);
    }
    const std::string rest = suffix.substr(1);
    if (!rest.empty() && rest != "B" && rest != "IB") {
      throw UsageError("invalid size " + quoted(text) + " for " + std::string(what) +
                       ": unknown suffix " + quoted(text.substr(digits.size())) + ", " + expected);
    }
  }
  std::uint64_t count = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  const bool overflow = error == std::errc::result_out_of_range ||
                        end != digits.data() + digits.size() ||
                        (shift > 0 && count > (UINT64_MAX >> shift));
  if (overflow) {
    throw UsageError("size " + quoted(text) + " for " + std::string(what) +
                     " is too large (does not fit in 64 bits)");
  }
  const std::uint64_t bytes = count << shift;
  if (bytes == 0 && min > 0) {
    throw UsageError(std::string(what) + " must be greater than 0");
  }
  if (bytes < min || bytes > max) {
    throw UsageError("size " + quoted(text) + " for " + std::string(what) + " is out of range [" +
                     formatBytes(min) + ", " + formatBytes(max) + "]");
  }
  return bytes;
}

std::vector<std::string_view> splitCommaList(std::string_view text) {
  std::vector<std::string_view> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) {
      items.push_back(text.substr(start));
      return items;
    }
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
}

std::vector<int> parseIntegerList(std::string_view text, std::string_view what, int min, int max) {
  std::vector<int> values;
  std::set<int> seen;
  for (const std::string_view item : splitCommaList(text)) {
    const int value = static_cast<int>(parseInteger(item, what, min, max));
    if (!seen.insert(value).second) {
      throw UsageError(std::string(what) + " lists " + std::to_string(value) + " twice");
    }
    values.push_back(value);
  }
  return values;
}

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

// -------------------------------------------------------------------------------- Host memory

std::optional<std::uint64_t> memAvailableBytes(std::string_view meminfoText) {
  std::istringstream lines{std::string(meminfoText)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("MemAvailable:", 0) != 0)
      continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kib = 0;
    std::string unit, extra;
    if (!(fields >> kib >> unit) || unit != "kB" || (fields >> extra) || kib > UINT64_MAX / 1024)
      return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

namespace {

/// The first line of a small file; none when it cannot be read.
std::optional<std::string> readFirstLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line))
    return std::nullopt;
  return line;
}

std::optional<std::uint64_t> readByteCount(const std::string& path) {
  const std::optional<std::string> text = readFirstLine(path);
  std::uint64_t value = 0;
  if (!text)
    return std::nullopt;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size())
    return std::nullopt;
  return value;
}

struct CgroupHeadroom {
  std::uint64_t bytes = 0;
  std::string cgroup;  // the cgroup whose limit is the tightest, as /proc/self/cgroup names it
};

/// The value of @p key in a memory.stat file ("inactive_file 123" lines); none when absent.
std::optional<std::uint64_t> readStat(const std::string& path, const std::string& key) {
  std::ifstream file(path);
  std::string name;
  std::uint64_t value = 0;
  while (file >> name >> value) {
    if (name == key)
      return value;
  }
  return std::nullopt;
}

/// What the cgroup's files at @p folder name: they differ between cgroup v2 and v1.
struct CgroupFiles {
  const char* limit;        // "max" in v2 means no limit
  const char* usage;        // counts page cache too
  const char* reclaimable;  // the memory.stat key of the page cache nobody is using
};

/// The smallest limit - (usage - inactive page cache) from @p cgroupPath up to the mount's top.
/// The usage counts page cache, which a long-running container fills up to its limit and the
/// kernel drops before it would kill anyone: without that correction the headroom of a busy
/// container reads as 0. Folders the mount does not show are skipped: a container without its
/// own cgroup namespace sees its own cgroup at the top of the mount, under a path that names it
/// as the host does.
std::optional<CgroupHeadroom> headroomAlongPath(const std::string& mount,
                                                const std::string& cgroupPath,
                                                const CgroupFiles& files) {
  std::optional<CgroupHeadroom> tightest;
  std::string path = cgroupPath;
  while (true) {
    const std::string folder = mount + (path == "/" ? "" : path);
    const std::optional<std::string> limitText = readFirstLine(folder + "/" + files.limit);
    const std::optional<std::uint64_t> limit = readByteCount(folder + "/" + files.limit);
    const std::optional<std::uint64_t> usage = readByteCount(folder + "/" + files.usage);
    if (limitText && *limitText != "max" && limit && usage) {
      const std::uint64_t cache =
          std::min(*usage, readStat(folder + "/memory.stat", files.reclaimable).value_or(0));
      const std::uint64_t used = *usage - cache;
      const std::uint64_t headroom = *limit > used ? *limit - used : 0;
      if (!tightest || headroom < tightest->bytes)
        tightest = CgroupHeadroom{headroom, path};
    }
    if (path == "/" || path.empty())
      return tightest;
    const std::size_t slash = path.find_last_of('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
}

}  // namespace

HostMemory hostMemoryAvailable(const std::string& root) {
  HostMemory host;
  std::ifstream meminfo(root + "/proc/meminfo");
  const std::string text((std::istreambuf_iterator<char>(meminfo)),
                         std::istreambuf_iterator<char>());
  if (const std::optional<std::uint64_t> available = memAvailableBytes(text)) {
    host = {*available, "the host (MemAvailable)"};
  } else {
    host = {static_cast<std::uint64_t>(sysconf(_SC_AVPHYS_PAGES)) *
                static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)),
            "the host (free pages)"};
  }
  // /proc/self/cgroup: "0::<path>" for cgroup v2, "<id>:<controllers>:<path>" for v1, where the
  // memory controller's line names the hierarchy mounted at sys/fs/cgroup/memory.
  std::ifstream cgroups(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos)
      continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::optional<CgroupHeadroom> headroom;
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      headroom = headroomAlongPath(root + "/sys/fs/cgroup", path,
                                   {"memory.max", "memory.current", "inactive_file"});
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      headroom = headroomAlongPath(
          root + "/sys/fs/cgroup/memory", path,
          {"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"});
    }
    if (headroom && headroom->bytes < host.availableBytes) {
      host = {headroom->bytes, "the host (the memory limit of cgroup " + headroom->cgroup + ")"};
    }
  }
  return host;
}

std::uint64_t fitHostMemory(const std::optional<std::uint64_t>& requested, std::uint64_t bytes,
                            int hostBuffers, std::uint64_t elementBytes, const HostMemory& host) {
  return chooseBufferBytes(requested, bytes, host.availableBytes, hostBuffers, elementBytes,
                           host.limitedBy);
}

// ---------------------------------------------------------------------------------- CommandLine

CommandLine::CommandLine(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void CommandLine::addCommonOptions(CommonOptions& options, bool timed) {
  options_.push_back({"device", "N",
                      "CUDA device ordinal (default: the device with the most SMs x clock)",
                      [&options](std::string_view value) {
                        options.device = parseInteger(value, "--device", LLONG_MIN, LLONG_MAX);
                      }});
  if (timed) {
    addInteger("iterations", "timed repetitions; the median is reported (default 20)",
               options.iterations, 1, 100000);
    addInteger("warmup", "untimed repetitions before timing (default 3)", options.warmup, 0, 1000);
  }
  addString("json", "also write the results as one JSON object to FILE ('-' = stdout)",
            options.jsonPath, "FILE");
  addFlag("quiet", "print only the verdict", options.quiet);
}

void CommandLine::addFlag(std::string name, std::string help, bool& target) {
  options_.push_back(
      {std::move(name), "", std::move(help), [&target](std::string_view) { target = true; }});
}

void CommandLine::addInteger(std::string name, std::string help, long long& target, long long min,
                             long long max) {
  const std::string what = "--" + name;
  options_.push_back(
      {std::move(name), "N", std::move(help), [&target, what, min, max](std::string_view value) {
         target = parseInteger(value, what, min, max);
       }});
}

void CommandLine::addInteger(std::string name, std::string help, int& target, int min, int max) {
  const std::string what = "--" + name;
  options_.push_back(
      {std::move(name), "N", std::move(help), [&target, what, min, max](std::string_view value) {
         target = static_cast<int>(parseInteger(value, what, min, max));
       }});
}

void CommandLine::addSize(std::string name, std::string help, std::optional<std::uint64_t>& target,
                          std::uint64_t min, std::uint64_t max) {
  const std::string what = "--" + name;
  options_.push_back({std::move(name), "BYTES", std::move(help),
                      [&target, what, min, max](std::string_view value) {
                        target = parseSize(value, what, min, max);
                      }});
}

void CommandLine::addString(std::string name, std::string help, std::string& target,
                            std::string valueName) {
  const std::string what = "--" + name;
  options_.push_back({std::move(name), std::move(valueName), std::move(help),
                      [&target, what](std::string_view value) {
                        if (value.empty())
                          throw UsageError(what + " needs a non-empty value");
                        target = std::string(value);
                      }});
}

void CommandLine::addIntegerList(std::string name, std::string help, std::vector<int>& target,
                                 int min, int max) {
  const std::string what = "--" + name;
  options_.push_back(
      {std::move(name), "LIST", std::move(help), [&target, what, min, max](std::string_view value) {
         target = parseIntegerList(value, what, min, max);
       }});
}

const CommandLine::Option* CommandLine::find(std::string_view name) const {
  for (const Option& option : options_) {
    if (option.name == name)
      return &option;
  }
  return nullptr;
}

bool CommandLine::parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  return parse(args);
}

bool CommandLine::parse(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      throw UsageError("unexpected argument " + quoted(arg));
    }
    // Long options take one or two dashes: -device=1 is the cuda-samples spelling.
    std::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string_view> inlineValue;
    if (const auto equals = body.find('='); equals != std::string_view::npos) {
      inlineValue = body.substr(equals + 1);
      body = body.substr(0, equals);
    }
    if (body == "help" || body == "h") {
      std::cout << usage();
      return false;
    }
    const Option* option = find(body);
    if (option == nullptr) {
      throw UsageError("unknown option " + quoted(arg));
    }
    const std::string spelled = "--" + option->name;
    if (option->valueName.empty()) {
      if (inlineValue)
        throw UsageError(spelled + " takes no value");
      option->apply({});
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= args.size())
        throw UsageError(spelled + " needs a value");
      inlineValue = args[++i];
    }
    option->apply(*inlineValue);
  }
  return true;
}

std::string CommandLine::usage() const {
  std::ostringstream text;
  text << "Usage: " << program_ << " [options]\n\n" << summary_ << "\n\nOptions:\n";
  for (const Option& option : options_) {
    std::string left = "  --" + option.name;
    if (!option.valueName.empty())
      left += " " + option.valueName;
    text << left;
    text << std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') << option.help << '\n';
  }
  text << "  --help                print this text\n\n"
          "Sizes take K, M, G suffixes (powers of 1024). Exit codes: 0 PASS, 1 FAIL, 2 WAIVED.\n";
  return text.str();
}

// ------------------------------------------------------------------------------------- devices

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

std::string sysfsPciName(std::string_view busId) {
  const auto malformed = [&] {
    return std::invalid_argument("malformed PCI bus id '" + std::string(busId) +
                                 "': expected domain:bus:device.function in hex, e.g. "
                                 "0000:3b:00.0");
  };
  const auto parseHex = [](std::string_view text, std::size_t maxDigits, unsigned long& value) {
    if (text.empty() || text.size() > maxDigits)
      return false;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    return error == std::errc() && end == text.data() + text.size();
  };
  const std::string_view text = trimSpace(busId);
  const std::size_t colon1 = text.find(':');
  const std::size_t colon2 = colon1 == std::string_view::npos ? colon1 : text.find(':', colon1 + 1);
  const std::size_t dot = colon2 == std::string_view::npos ? colon2 : text.find('.', colon2 + 1);
  if (dot == std::string_view::npos)
    throw malformed();
  unsigned long domain = 0, bus = 0, device = 0, function = 0;
  if (!parseHex(text.substr(0, colon1), 8, domain) ||
      !parseHex(text.substr(colon1 + 1, colon2 - colon1 - 1), 2, bus) ||
      !parseHex(text.substr(colon2 + 1, dot - colon2 - 1), 2, device) ||
      !parseHex(text.substr(dot + 1), 1, function) || device > 0x1f || function > 7) {
    throw malformed();
  }
  // The kernel names devices "%04x:%02x:%02x.%d": lower case, domain widened only when needed
  // (cuDeviceGetPCIBusId may print upper case, nvidia-smi an 8-digit domain).
  char name[32];
  std::snprintf(name, sizeof name, "%04lx:%02lx:%02lx.%lx", domain, bus, device, function);
  return name;
}

PciNumaNode readPciNumaNode(const std::string& sysfsRoot, std::string_view busId) {
  constexpr int kMaxNodeNumber = 1023;  // the kernel's CONFIG_NODES_SHIFT is at most 10
  PciNumaNode result;
  try {
    result.path = sysfsRoot + "/bus/pci/devices/" + sysfsPciName(busId) + "/numa_node";
  } catch (const std::invalid_argument& error) {
    result.problem = error.what();
    return result;
  }
  std::ifstream file(result.path);
  if (!file) {
    result.problem = "cannot read " + result.path + ": " + std::strerror(errno);
    return result;
  }
  const std::string content((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
  const std::string_view text = trimSpace(content);
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < -1 ||
      value > kMaxNodeNumber) {
    // Quoted and shortened, so that a binary file cannot flood the log.
    std::string shown;
    for (const char c : text.substr(0, 40)) {
      shown += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
    }
    if (text.size() > 40)
      shown += "...";
    result.problem = result.path + " holds '" + shown + "', not a node number from -1 to " +
                     std::to_string(kMaxNodeNumber);
    return result;
  }
  result.node = static_cast<int>(value);
  return result;
}

std::vector<int> parseIdList(std::string_view list) {
  // Node and CPU numbers stay far below this; a corrupt file must not make us allocate gigabytes.
  constexpr int kMaxListedId = 65535;
  list = trimSpace(list);
  std::vector<int> ids;
  const auto number = [list](std::string_view text) {
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0 ||
        value > kMaxListedId) {
      throw std::invalid_argument("not an id list: '" + std::string(list) + "'");
    }
    return value;
  };
  for (const std::string_view item : splitCommaList(list)) {
    const std::size_t dash = item.find('-');
    const int first = number(item.substr(0, dash));
    const int last = dash == std::string_view::npos ? first : number(item.substr(dash + 1));
    if (last < first || (!ids.empty() && first <= ids.back())) {
      throw std::invalid_argument("not an id list: '" + std::string(list) + "'");
    }
    for (int id = first; id <= last; ++id)
      ids.push_back(id);
  }
  return ids;
}

std::vector<int> onlineHostNumaNodes(const std::string& sysfsRoot) {
  std::ifstream file(sysfsRoot + "/devices/system/node/online");
  std::string text;
  if (!file || !std::getline(file, text))
    return {};
  try {
    return parseIdList(text);
  } catch (const std::invalid_argument&) {
    return {};
  }
}

int hostNumaLocationId(int hostNumaIdAttribute) {
  return hostNumaIdAttribute >= 0 ? hostNumaIdAttribute : 0;
}

std::size_t allocationGranularity(std::size_t bytes, std::size_t minimum, std::size_t recommended) {
  if (minimum == 0)
    throw std::invalid_argument("allocationGranularity: the minimum granularity is 0");
  const bool usable = recommended > 0 && recommended % minimum == 0;
  return usable && bytes >= recommended ? recommended : minimum;
}

// -------------------------------------------------------------------------------- fatbin lookup

std::vector<std::string> fatbinCandidates(const std::string& fileName, const std::string& exePath,
                                          const std::string& overrideDir) {
  std::vector<std::string> candidates;
  if (!overrideDir.empty())
    candidates.push_back(overrideDir + "/" + fileName);
  const std::string exeDir = parentFolder(exePath);
  candidates.push_back(exeDir + "/" + fileName);
  candidates.push_back(exeDir + "/" MEMSAMPLES_FATBIN_FROM_BINDIR "/" + fileName);
  return candidates;
}

std::string findFatbin(const std::string& fileName, const std::string& exePath,
                       const std::string& overrideDir) {
  const std::vector<std::string> candidates = fatbinCandidates(fileName, exePath, overrideDir);
  for (const std::string& candidate : candidates) {
    if (isRegularFile(candidate))
      return candidate;
  }
  std::string message = "cannot find " + fileName + "; tried:";
  for (const std::string& candidate : candidates)
    message += "\n  " + candidate;
  message += "\n(set " + std::string(kFatbinDirVariable) + " to the folder that holds it)";
  throw std::runtime_error(message);
}

std::string executablePath() {
  std::string path(4096, '\0');
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size());
  if (length <= 0 || static_cast<std::size_t>(length) >= path.size()) {
    throw std::runtime_error("cannot resolve /proc/self/exe to find this program's folder");
  }
  path.resize(static_cast<std::size_t>(length));
  return path;
}

std::vector<char> readBinaryFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad())
    throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  if (bytes.empty())
    throw std::runtime_error(path + " is empty");
  return bytes;
}

const char* processEnvironment(const char* name) {
  return std::getenv(name);
}

bool launchesBlockTheHost(const EnvironmentLookup& lookup) {
  const char* blocking = lookup("CUDA_LAUNCH_BLOCKING");
  return blocking != nullptr && std::string(blocking) == "1";
}

std::string locateFatbin(const std::string& fileName) {
  const char* overrideDir = std::getenv(kFatbinDirVariable);
  return findFatbin(fileName, executablePath(), overrideDir ? overrideDir : "");
}

// ------------------------------------------------------------------------------------ measuring

TimingStats summarizeTimings(std::vector<double> timesMs) {
  if (timesMs.empty())
    throw std::invalid_argument("summarizeTimings: no timings");
  std::sort(timesMs.begin(), timesMs.end());
  const std::size_t n = timesMs.size();
  TimingStats stats;
  stats.medianMs = n % 2 == 1 ? timesMs[n / 2] : (timesMs[n / 2 - 1] + timesMs[n / 2]) / 2.0;
  stats.minMs = timesMs.front();
  stats.maxMs = timesMs.back();
  stats.samples = static_cast<int>(n);
  return stats;
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

unsigned int blocksToCover(std::uint64_t items, std::uint64_t itemsPerBlock) {
  if (itemsPerBlock == 0)
    throw std::invalid_argument("blocksToCover: a block must take at least one item");
  constexpr std::uint64_t kMaxGridX = (1ull << 31) - 1;
  const std::uint64_t blocks = items / itemsPerBlock + (items % itemsPerBlock != 0 ? 1 : 0);
  return static_cast<unsigned int>(std::clamp<std::uint64_t>(blocks, 1, kMaxGridX));
}

double gigabytesPerSecond(double bytes, double milliseconds) {
  if (milliseconds <= 0)
    return std::numeric_limits<double>::quiet_NaN();
  return bytes / (milliseconds * 1e-3) / 1e9;
}

// ----------------------------------------------------------------------------------------- JSON

std::string jsonQuote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
          out += escaped;
        } else {
          out += c;  // bytes >= 0x80 are UTF-8 and pass through unchanged
        }
    }
  }
  out += '"';
  return out;
}

std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

JsonArray& JsonArray::add(double value) {
  return addRaw(jsonNumber(value));
}
JsonArray& JsonArray::add(long long value) {
  return addRaw(std::to_string(value));
}
JsonArray& JsonArray::add(int value) {
  return addRaw(std::to_string(value));
}
JsonArray& JsonArray::add(std::uint64_t value) {
  return addRaw(std::to_string(value));
}
JsonArray& JsonArray::add(bool value) {
  return addRaw(value ? "true" : "false");
}
JsonArray& JsonArray::add(std::string_view value) {
  return addRaw(jsonQuote(value));
}
JsonArray& JsonArray::add(const char* value) {
  return addRaw(jsonQuote(value));
}
JsonArray& JsonArray::addRaw(std::string json) {
  items_.push_back(std::move(json));
  return *this;
}

std::string JsonArray::dump() const {
  std::string out = "[";
  for (std::size_t i = 0; i < items_.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += items_[i];
  }
  return out + "]";
}

JsonObject& JsonObject::set(std::string_view key, double value) {
  return setRaw(key, jsonNumber(value));
}
JsonObject& JsonObject::set(std::string_view key, long long value) {
  return setRaw(key, std::to_string(value));
}
JsonObject& JsonObject::set(std::string_view key, int value) {
  return setRaw(key, std::to_string(value));
}
JsonObject& JsonObject::set(std::string_view key, std::uint64_t value) {
  return setRaw(key, std::to_string(value));
}
JsonObject& JsonObject::set(std::string_view key, bool value) {
  return setRaw(key, value ? "true" : "false");
}
JsonObject& JsonObject::set(std::string_view key, std::string_view value) {
  return setRaw(key, jsonQuote(value));
}
JsonObject& JsonObject::set(std::string_view key, const char* value) {
  return setRaw(key, jsonQuote(value));
}
JsonObject& JsonObject::set(std::string_view key, const JsonObject& value) {
  return setRaw(key, value.dump());
}
JsonObject& JsonObject::set(std::string_view key, const JsonArray& value) {
  return setRaw(key, value.dump());
}

JsonObject& JsonObject::setRaw(std::string_view key, std::string json) {
  for (auto& member : members_) {
    if (member.first == key) {
      member.second = std::move(json);
      return *this;
    }
  }
  members_.emplace_back(std::string(key), std::move(json));
  return *this;
}

std::string JsonObject::dump() const {
  std::string out = "{";
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += jsonQuote(members_[i].first) + ": " + members_[i].second;
  }
  return out + "}";
}

// ---------------------------------------------------------------------------- vector-add checks

void fillVectorAddInputs(float* a, float* b, std::size_t count, std::uint32_t seed) {
  // xorshift32: fast, reproducible, and never zero when seeded non-zero.
  std::uint32_t state = seed == 0 ? 0x9E3779B9u : seed;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;  // [-1, 1)
  };
  for (std::size_t i = 0; i < count; ++i) {
    a[i] = next();
    b[i] = next();
  }
}

std::string describeMismatch(const VectorAddCheck& check) {
  if (check.mismatches == 0)
    return {};
  std::ostringstream text;
  text << "Mismatch at element " << check.firstBad << ": expected " << check.expected << ", got "
       << check.actual << " (" << check.mismatches << " wrong in total)";
  return text.str();
}

VectorAddCheck checkVectorAdd(const float* a, const float* b, const float* c, std::size_t count) {
  VectorAddCheck result;
  for (std::size_t i = 0; i < count; ++i) {
    const float expected = a[i] + b[i];
    if (c[i] != expected) {
      if (result.mismatches == 0) {
        result.firstBad = i;
        result.expected = expected;
        result.actual = c[i];
      }
      ++result.mismatches;
    }
  }
  return result;
}

// --------------------------------------------------------------------------------------- runner

std::ostream& Report::out() {
  if (humanText_ != nullptr)
    return *humanText_;
  static thread_local std::ostream discard(nullptr);  // a stream without buffer drops everything
  return discard;
}

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
  try {
    exitCode = body(report) == Verdict::Pass ? kExitPass : kExitFail;
    verdict = exitCode == kExitPass ? "PASS" : "FAIL";
    verdictStream << "Result = " << verdict << '\n';
  } catch (const WaivedError& waived) {
    verdict = "WAIVED";
    detail = waived.what();
    exitCode = kExitWaived;
    verdictStream << "WAIVED: " << detail << '\n';
  } catch (const UsageError& error) {
    verdict = "FAIL";
    detail = error.what();
    std::cerr << program << ": " << detail << "\nRun '" << program << " --help' for the options.\n";
  } catch (const std::exception& error) {
    verdict = "FAIL";
    detail = error.what();
    std::cerr << program << ": error: " << detail << '\n';
    verdictStream << "Result = FAIL\n";
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
