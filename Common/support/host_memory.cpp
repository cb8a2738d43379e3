// Host memory this process may take: MemAvailable and the memory cgroup's headroom
// (support/host_memory.hpp), and fitHostMemory() of memsamples.hpp built on it. CUDA-free, unit
// tested in ctest/unit/common/host_memory_test.cpp.
#include "support/host_memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>

#include "memsamples.hpp"

namespace memsamples {

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

std::uint64_t fitHostMemory(const std::optional<std::uint64_t>& requested, std::uint64_t bytes,
                            int hostBuffers, std::uint64_t elementBytes) {
  return fitHostMemory(requested, bytes, hostBuffers, elementBytes, hostMemoryAvailable());
}

}  // namespace memsamples
