// Host memory a sample may pin: MemAvailable, and the memory cgroup's limit when it is tighter
// (a container or a systemd service), read from fake /proc and /sys/fs/cgroup trees.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "memsamples.hpp"
#include "support/host_memory.hpp"
#include "temp_dir.hpp"

namespace ms = memsamples;
using memsamples::test::TempDir;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

/// A machine with 64 GiB available: proc/meminfo, proc/self/cgroup and the cgroup files.
class FakeMachine {
 public:
  FakeMachine() { write("proc/meminfo", "MemTotal: 134217728 kB\nMemAvailable: 67108864 kB\n"); }
  void write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path file = std::filesystem::path(root_.path()) / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  /// A cgroup v2 folder with its limit ("max" or bytes) and usage.
  void cgroupV2(const std::string& path, const std::string& max, std::uint64_t current) const {
    write("sys/fs/cgroup" + path + "/memory.max", max + "\n");
    write("sys/fs/cgroup" + path + "/memory.current", std::to_string(current) + "\n");
  }
  ms::HostMemory read() const { return ms::hostMemoryAvailable(root_.path()); }

 private:
  TempDir root_;
};

}  // namespace

TEST(HostMemory, MemAvailableIsParsedInKibibytes) {
  EXPECT_EQ(ms::memAvailableBytes("MemTotal:  100 kB\nMemFree:  50 kB\nMemAvailable:   70 kB\n"),
            70u * 1024u);
  for (const char* bad :
       {"MemTotal: 100 kB\n", "MemAvailable: lots kB\n", "MemAvailable: 70 MB\n",
        "MemAvailable: 70 kB extra\n", "MemAvailable: 18014398509481984 kB\n", ""})
    EXPECT_FALSE(ms::memAvailableBytes(bad).has_value()) << bad;
}

TEST(HostMemory, WithoutACgroupLimitMemAvailableDecides) {
  FakeMachine machine;
  machine.write("proc/self/cgroup", "0::/user.slice/session-1.scope\n");
  machine.cgroupV2("/user.slice/session-1.scope", "max", 5 * kGiB);
  machine.cgroupV2("/user.slice", "max", 9 * kGiB);
  const ms::HostMemory host = machine.read();
  EXPECT_EQ(host.availableBytes, 64 * kGiB);
  EXPECT_EQ(host.limitedBy, "the host (MemAvailable)");
}

TEST(HostMemory, AContainersLimitIsTighterThanMemAvailable) {
  // Docker with a cgroup namespace: the container's own cgroup is the top of the mount.
  FakeMachine machine;
  machine.write("proc/self/cgroup", "0::/\n");
  machine.cgroupV2("", std::to_string(4 * kGiB), 1 * kGiB);
  const ms::HostMemory host = machine.read();
  EXPECT_EQ(host.availableBytes, 3 * kGiB);
  EXPECT_EQ(host.limitedBy, "the host (the memory limit of cgroup /)");
}

TEST(HostMemory, AParentsLimitBindsItsChildren) {
  FakeMachine machine;
  machine.write("proc/self/cgroup", "0::/system.slice/job.service\n");
  machine.cgroupV2("/system.slice/job.service", std::to_string(8 * kGiB), 2 * kGiB);
  machine.cgroupV2("/system.slice", std::to_string(10 * kGiB), 9 * kGiB);
  const ms::HostMemory host = machine.read();
  EXPECT_EQ(host.availableBytes, 1 * kGiB);
  EXPECT_EQ(host.limitedBy, "the host (the memory limit of cgroup /system.slice)");
}

TEST(HostMemory, InactivePageCacheIsNotCountedAsUsed) {
  // A busy container: 4 GiB limit, 3.9 GiB "used", of which 3 GiB is file cache nobody touches.
  FakeMachine machine;
  machine.write("proc/self/cgroup", "0::/\n");
  machine.cgroupV2("", std::to_string(4 * kGiB), 4 * kGiB - 100 * kMiB);
  machine.write("sys/fs/cgroup/memory.stat",
                "anon 966367641\nfile 3221225472\nactive_file 0\ninactive_file " +
                    std::to_string(3 * kGiB) + "\n");
  EXPECT_EQ(machine.read().availableBytes, 3 * kGiB + 100 * kMiB);
  // cgroup v1 names the hierarchical counter total_inactive_file.
  FakeMachine v1;
  v1.write("proc/self/cgroup", "4:memory:/\n");
  v1.write("sys/fs/cgroup/memory/memory.limit_in_bytes", std::to_string(2 * kGiB) + "\n");
  v1.write("sys/fs/cgroup/memory/memory.usage_in_bytes", std::to_string(2 * kGiB) + "\n");
  v1.write("sys/fs/cgroup/memory/memory.stat",
           "inactive_file 0\ntotal_inactive_file " + std::to_string(kGiB) + "\n");
  EXPECT_EQ(v1.read().availableBytes, kGiB);
}

TEST(HostMemory, UsageAboveTheLimitLeavesNothing) {
  FakeMachine machine;
  machine.write("proc/self/cgroup", "0::/box\n");
  machine.cgroupV2("/box", std::to_string(1 * kGiB), 1 * kGiB + 4096);
  EXPECT_EQ(machine.read().availableBytes, 0u);
}

TEST(HostMemory, CgroupV1MemoryController) {
  // Without a cgroup namespace the container sees the host's path for its cgroup, but the mount
  // holds only its own folder: the limit is found at the top of the mount.
  FakeMachine machine;
  machine.write("proc/self/cgroup", "12:pids:/docker/abc\n5:cpu,memory:/docker/abc\n");
  machine.write("sys/fs/cgroup/memory/memory.limit_in_bytes", std::to_string(2 * kGiB) + "\n");
  machine.write("sys/fs/cgroup/memory/memory.usage_in_bytes", std::to_string(512 * kMiB) + "\n");
  const ms::HostMemory host = machine.read();
  EXPECT_EQ(host.availableBytes, 1536 * kMiB);
  EXPECT_EQ(host.limitedBy, "the host (the memory limit of cgroup /)");
}

TEST(HostMemory, UnreadableLimitsAreNoLimit) {
  FakeMachine machine;
  machine.write("proc/self/cgroup", "garbage\n0::/box\n");
  machine.write("sys/fs/cgroup/box/memory.max", "lots\n");
  machine.write("sys/fs/cgroup/box/memory.current", "12\n");
  EXPECT_EQ(machine.read().availableBytes, 64 * kGiB);
}

TEST(HostMemory, RequestedSizeMustFitInHostMemoryToo) {
  const ms::HostMemory host{3 * kGiB, "the host (the memory limit of cgroup /box)"};
  EXPECT_EQ(ms::fitHostMemory(512 * kMiB, 512 * kMiB, 3, sizeof(float), host), 512 * kMiB);
  try {
    ms::fitHostMemory(2 * kGiB, 2 * kGiB, 3, sizeof(float), host);
    ADD_FAILURE() << "accepted 3 x 2 GiB of pinned memory in a 3 GiB cgroup";
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--size 2.00 GiB needs 3 buffers but the host (the memory limit of cgroup /box) "
                 "has only 3.00 GiB free; choose at most 1.00 GiB");
  }
}

TEST(HostMemory, DefaultSizeShrinksToTheTighterLimit) {
  // The device allowed 1 GiB per buffer; 80 % of a 3 GiB cgroup over 3 buffers, in 2 MiB steps.
  const ms::HostMemory host{3 * kGiB, "the host (MemAvailable)"};
  EXPECT_EQ(ms::fitHostMemory(std::nullopt, 1 * kGiB, 3, sizeof(float), host), 818 * kMiB);
  EXPECT_EQ(ms::fitHostMemory(std::nullopt, 64 * kMiB, 3, sizeof(float), host), 64 * kMiB);
  try {
    ms::fitHostMemory(std::nullopt, 1 * kGiB, 3, sizeof(float), {kMiB, "the host (MemAvailable)"});
    ADD_FAILURE() << "sized buffers in 1 MiB of host memory";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(),
                 "the host (MemAvailable) has only 1.00 MiB free, too little for 3 buffers");
  }
}

TEST(HostMemory, ThisMachine) {
  // /proc/meminfo exists on every Linux this project targets; MemAvailable is never 0 there.
  const ms::HostMemory host = ms::hostMemoryAvailable();
  EXPECT_GT(host.availableBytes, 0u);
  EXPECT_EQ(host.limitedBy.rfind("the host (", 0), 0u) << host.limitedBy;
}
