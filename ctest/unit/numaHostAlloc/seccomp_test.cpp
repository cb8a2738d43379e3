// What the binding does when mbind() is refused, reproduced for real: a forked child installs a
// seccomp filter that makes mbind return an error (EPERM, or another errno), or refuses every
// memory-policy call as Docker's default profile does without CAP_SYS_NICE, then builds a range
// and reports what happened through a pipe. The filter is written by hand (classic BPF) so that
// no libseccomp is needed, and PR_SET_NO_NEW_PRIVS lets an unprivileged process install it.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "numa_binding.hpp"
#include "numa_test_support.hpp"
#include "seccomp_filter.hpp"

namespace mn = memsamples::numa;
using memsamples::numa_test::blockCalls;
using memsamples::numa_test::kAuditArch;
using memsamples::numa_test::kDockerDefault;
using memsamples::numa_test::kMbindOnly;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr int kSetupFailed = 3;

/// What the child reported: one "key: value" per line.
struct ChildReport {
  bool setupFailed = false;
  std::string text;
  std::vector<std::string> values(const std::string& key) const {
    std::vector<std::string> found;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(key + ": ", 0) == 0)
        found.push_back(line.substr(key.size() + 2));
    }
    return found;
  }
  std::string value(const std::string& key) const {
    const auto found = values(key);
    return found.size() == 1 ? found[0] : "<" + std::to_string(found.size()) + " values>";
  }
};

/// Runs @p body in a forked child in which the @p blocked calls fail with @p error; @p body's
/// text comes back.
ChildReport runWithCallsBlocked(const std::vector<std::uint32_t>& blocked, int error,
                                const std::function<std::string()>& body) {
  int pipeEnds[2];
  if (pipe(pipeEnds) != 0)
    throw std::runtime_error("pipe failed");
  const pid_t child = fork();
  if (child < 0)
    throw std::runtime_error("fork failed");
  if (child == 0) {
    close(pipeEnds[0]);
    std::string text;
    int code = 0;
    if (const int setupError = blockCalls(blocked, error); setupError != 0) {
      text = std::string("cannot install the seccomp filter: ") + std::strerror(setupError);
      code = kSetupFailed;
    } else {
      try {
        text = body();
      } catch (const std::exception& thrown) {
        text = std::string("exception: ") + thrown.what() + "\n";
      }
    }
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = write(pipeEnds[1], text.data() + done, text.size() - done);
      if (n <= 0)
        break;
      done += static_cast<std::size_t>(n);
    }
    _exit(code);  // never return into the test framework from the child
  }
  close(pipeEnds[1]);
  ChildReport report;
  char buffer[4096];
  for (ssize_t n; (n = read(pipeEnds[0], buffer, sizeof buffer)) > 0;) {
    report.text.append(buffer, static_cast<std::size_t>(n));
  }
  close(pipeEnds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status))
    throw std::runtime_error("the child did not exit normally");
  report.setupFailed = WEXITSTATUS(status) == kSetupFailed;
  return report;
}

/// Builds a range in the child and describes it: the errno a raw mbind gets, the state, every
/// warning, what first touch did, and whether the memory is usable.
std::string bindAndDescribe(std::size_t bytes, int node, mn::BindPolicy policy) {
  std::ostringstream out;
  // First prove that the filter is in force: a direct mbind call.
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* probe = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned long mask = 1;
  errno = 0;
  const long raw = mbind(probe, page, MPOL_PREFERRED, &mask, sizeof mask * 8 + 1, 0);
  out << "raw mbind: " << raw << " " << errno << "\n";
  munmap(probe, page);
  // libnuma's own answer depends on its version (newer ones count EPERM as unavailable); the
  // library's answer must not.
  out << "numa_available: " << numa_available() << "\n";
  out << "policy calls available: " << mn::numaPolicyCallsAvailable() << "\n";

  std::vector<std::string> warnings;
  mn::NumaBoundHostRange range;
  try {
    range = mn::NumaBoundHostRange(bytes, node, policy,
                                   [&](const std::string& text) { warnings.push_back(text); });
  } catch (const mn::NumaBindError& error) {
    out << "exception: " << error.what() << "\n";
    for (const auto& warning : warnings)
      out << "warning: " << warning << "\n";
    return out.str();
  }
  out << "state: " << mn::bindStateName(range.outcome().state) << "\n";
  out << "mode: " << range.outcome().mode << "\n";
  out << "reason: " << range.outcome().unboundReason << "\n";
  for (const auto& warning : warnings)
    out << "warning: " << warning << "\n";
  try {
    range.firstTouch();
    out << "first touch: ok\n";
  } catch (const mn::NumaBindError& error) {
    out << "first touch: " << error.what() << "\n";
    return out.str();
  }
  const memsamples::PagePlacement placement = range.placement();
  out << "all on node " << node << ": " << placement.allOn(node) << "\n";
  auto* data = static_cast<unsigned char*>(range.data());
  for (std::size_t i = 0; i < bytes; ++i)
    data[i] = static_cast<unsigned char>(i * 7);
  bool same = true;
  for (std::size_t i = 0; i < bytes; ++i)
    same = same && data[i] == static_cast<unsigned char>(i * 7);
  out << "usable: " << same << "\n";
  out << "warnings after use: " << warnings.size() << "\n";
  return out.str();
}

class MbindBlocked : public testing::Test {
 protected:
  void SetUp() override {
    if (kAuditArch == 0)
      GTEST_SKIP() << "no seccomp filter written for this architecture";
    // Needs libnuma and node 0; an mbind already blocked by the environment would blur the test.
    const std::string why = numatest::whyRealBindingIsUnavailable();
    if (!why.empty())
      GTEST_SKIP() << why;
  }
  static ChildReport run(int error, const std::function<std::string()>& body) {
    return runBlocking(kMbindOnly, error, body);
  }
  static ChildReport runBlocking(const std::vector<std::uint32_t>& blocked, int error,
                                 const std::function<std::string()>& body) {
    ChildReport report = runWithCallsBlocked(blocked, error, body);
    if (report.setupFailed) {
      ADD_FAILURE() << report.text;  // seccomp exists on every kernel this project targets
    }
    return report;
  }
};

/// The same child, under Docker's default profile: every memory-policy call is refused.
class PolicyCallsBlocked : public MbindBlocked {};

const char* const kEpermWarning =
    "mbind to node 0 was refused with EPERM (a seccomp filter blocks it); the memory stays "
    "unbound";

const char* const kNumaUnavailable =
    "NUMA is not available (no NUMA support in the kernel, or the memory-policy system calls are "
    "refused, e.g. by Docker's default seccomp profile without CAP_SYS_NICE)";

}  // namespace

TEST_F(MbindBlocked, SoftBindContinuesWithOneWarning) {
  const ChildReport report = run(EPERM, [] {
    return bindAndDescribe(kMiB, 0, mn::BindPolicy{true, false});
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("raw mbind"), "-1 " + std::to_string(EPERM));
  // get_mempolicy still works, so NUMA counts as available and mbind's EPERM is what happens.
  EXPECT_EQ(report.value("policy calls available"), "1");
  EXPECT_EQ(report.value("state"), "blocked by seccomp (unbound)");
  EXPECT_EQ(report.value("mode"), "0");
  ASSERT_EQ(report.values("warning").size(), 1u);
  EXPECT_EQ(report.value("warning"), kEpermWarning);
  EXPECT_EQ(report.value("reason"), kEpermWarning);
  EXPECT_EQ(report.value("first touch"), "ok");
  EXPECT_EQ(report.value("usable"), "1");
  EXPECT_EQ(report.value("warnings after use"), "1");
}

TEST_F(MbindBlocked, StrictBindContinuesAndIsVerifiedByPlacement) {
  // The documented choice: EPERM does not fail a strict range (containers keep working, as in
  // the seed), but first touch then checks every page. The child runs on node 0's CPUs, so its
  // first touch lands on node 0 and the strict promise holds.
  const ChildReport report = run(EPERM, [] {
    if (numa_run_on_node(0) != 0)
      return std::string("setup: numa_run_on_node failed\n");
    return bindAndDescribe(kMiB, 0, mn::BindPolicy{true, true});
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("state"), "blocked by seccomp (unbound)");
  ASSERT_EQ(report.values("warning").size(), 1u);
  EXPECT_EQ(report.value("warning"),
            std::string(kEpermWarning) + ", and every page is checked after first touch");
  EXPECT_EQ(report.value("first touch"), "ok");
  EXPECT_EQ(report.value("all on node 0"), "1");
  EXPECT_EQ(report.value("usable"), "1");
}

TEST_F(MbindBlocked, StrictBindToARemoteNodeFailsAtFirstTouch) {
  if (numa_max_node() < 1 || mn::libnumaNodeMemory()(1).totalBytes == 0) {
    GTEST_SKIP() << "needs a second NUMA node with memory";
  }
  // Running on node 0 while asking for node 1: without mbind the pages land on node 0, and the
  // strict range must refuse instead of pretending.
  const ChildReport report = run(EPERM, [] {
    if (numa_run_on_node(0) != 0)
      return std::string("setup: numa_run_on_node failed\n");
    return bindAndDescribe(kMiB, 1, mn::BindPolicy{true, true});
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("state"), "blocked by seccomp (unbound)");
  EXPECT_EQ(report.value("first touch")
                .rfind("strict binding to node 1 not honoured (blocked by "
                       "seccomp (unbound)): not every page is on node 1",
                       0),
            0u);
}

TEST_F(MbindBlocked, OtherErrorsFailAStrictBind) {
  const ChildReport report = run(EIO, [] {
    return bindAndDescribe(kMiB, 0, mn::BindPolicy{true, true});
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("raw mbind"), "-1 " + std::to_string(EIO));
  EXPECT_EQ(report.value("exception"), "mbind to node 0 failed: Input/output error (EIO)");
  EXPECT_TRUE(report.values("warning").empty());
  EXPECT_TRUE(report.values("state").empty());
}

TEST_F(MbindBlocked, OtherErrorsAreOneWarningForASoftBind) {
  const ChildReport report = run(EIO, [] {
    return bindAndDescribe(kMiB, 0, mn::BindPolicy{true, false});
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("state"), "fell back (unbound)");
  ASSERT_EQ(report.values("warning").size(), 1u);
  EXPECT_EQ(report.value("warning"),
            "mbind to node 0 failed: Input/output error (EIO); the memory stays unbound");
  EXPECT_EQ(report.value("first touch"), "ok");
  EXPECT_EQ(report.value("usable"), "1");
}

TEST_F(MbindBlocked, NoBindNeverCallsMbind) {
  const ChildReport report = run(EPERM, [] {
    return bindAndDescribe(kMiB, 0, mn::BindPolicy{false, false});
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("state"), "not requested");
  EXPECT_TRUE(report.values("warning").empty());
  EXPECT_EQ(report.value("usable"), "1");
}

TEST_F(PolicyCallsBlocked, DockersDefaultProfileMeansNumaIsNotAvailableForASoftBind) {
  // Whatever numa_available() says (libnuma's answer changed in late 2024), the library sees
  // that the policy calls are refused and does not try mbind at all: one warning, unbound.
  const ChildReport report = runBlocking(kDockerDefault, EPERM, [] {
    return bindAndDescribe(kMiB, 0, mn::BindPolicy{true, false});
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("raw mbind"), "-1 " + std::to_string(EPERM));
  EXPECT_EQ(report.value("policy calls available"), "0");
  EXPECT_EQ(report.value("state"), "fell back (unbound)");
  ASSERT_EQ(report.values("warning").size(), 1u);
  EXPECT_EQ(report.value("warning"), std::string("host memory not bound: ") + kNumaUnavailable +
                                         "; its pages will land wherever they are first touched");
  EXPECT_EQ(report.value("reason"), kNumaUnavailable);
  EXPECT_EQ(report.value("first touch"), "ok");
  EXPECT_EQ(report.value("usable"), "1");
  EXPECT_EQ(report.value("warnings after use"), "1");
}

TEST_F(PolicyCallsBlocked, DockersDefaultProfileIsAnErrorForAStrictBind) {
  const ChildReport report = runBlocking(kDockerDefault, EPERM, [] {
    return bindAndDescribe(kMiB, 0, mn::BindPolicy{true, true});
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("policy calls available"), "0");
  EXPECT_EQ(report.value("exception"),
            std::string("cannot bind 1.00 MiB strictly: ") + kNumaUnavailable);
  EXPECT_TRUE(report.values("warning").empty());
  EXPECT_TRUE(report.values("state").empty());
}

TEST_F(PolicyCallsBlocked, NodeMemoryIsUnknownRatherThanReadThroughLibnuma) {
  const ChildReport report = runBlocking(kDockerDefault, EPERM, [] {
    const memsamples::NodeMemory node0 = mn::libnumaNodeMemory()(0);
    return "unknown: " + std::to_string(node0.status == memsamples::NodeMemory::Status::Unknown) +
           "\ndetail: " + node0.detail + "\n";
  });
  SCOPED_TRACE(report.text);
  EXPECT_EQ(report.value("unknown"), "1");
  EXPECT_EQ(report.value("detail"), "NUMA is not available (see numaPolicyCallsAvailable)");
}
