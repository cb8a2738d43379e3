// 07_memMapIPC's worker processes: started by posix_spawn with nothing but their socket end,
// their end (exit or signal) noticed and told in words, an overstaying one killed, none left
// running or unreaped, and a worker that dies with its parent.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ipc_channel.hpp"
#include "ipc_test_support.hpp"
#include "peer_choice.hpp"
#include "test_support.hpp"
#include "worker_processes.hpp"

namespace ipc = memsamples::ipc;
namespace itest = memsamples::ipc::test;
using memsamples::test::messageOf;
using namespace std::chrono_literals;

namespace {

const std::string kShell = "/bin/sh";

/// How child @p pid ended, waiting at most @p timeout (endedHow looked at every 5 ms); a child
/// still running then is killed and reaped, and "(still running)" says so to the test.
std::string endWithin(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const std::optional<std::string> how = itest::endedHow(pid)) {
      return *how;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
      return "(still running)";
    }
    ::poll(nullptr, 0, 5);
  }
}

/// Reads exactly @p bytes from @p fd within @p timeout; false on timeout or end of file.
bool readWithin(int fd, void* buffer, std::size_t bytes, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto* cursor = static_cast<char*>(buffer);
  std::size_t got = 0;
  while (got < bytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd entry{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&entry, 1, static_cast<int>(left.count())) <= 0) {
      return false;
    }
    const ssize_t n = ::read(fd, cursor + got, bytes - got);
    if (n <= 0) {
      return false;
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

/// A pipe whose ends close on their own.
struct Pipe {
  ipc::OwnedFd read;
  ipc::OwnedFd write;
  Pipe() {
    int ends[2] = {-1, -1};
    EXPECT_EQ(::pipe2(ends, O_CLOEXEC), 0);
    read.reset(ends[0]);
    write.reset(ends[1]);
  }
};

/// Makes this process the reaper of its orphaned descendants for one test, so a grandchild whose
/// parent exits becomes our child (and can be waited for), as it would be the sample's under a
/// service manager; the old setting comes back after.
class SubreaperScope {
 public:
  SubreaperScope() {
    ::prctl(PR_GET_CHILD_SUBREAPER, &old_, 0, 0, 0);
    EXPECT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
  }
  ~SubreaperScope() { ::prctl(PR_SET_CHILD_SUBREAPER, old_, 0, 0, 0); }
  SubreaperScope(const SubreaperScope&) = delete;
  SubreaperScope& operator=(const SubreaperScope&) = delete;

 private:
  int old_ = 0;
};

}  // namespace

TEST(DescribeWaitStatus, ExitAndSignalInWords) {
  EXPECT_EQ(ipc::describeWaitStatus(W_EXITCODE(0, 0)), "exited with status 0");
  EXPECT_EQ(ipc::describeWaitStatus(W_EXITCODE(3, 0)), "exited with status 3");
  EXPECT_EQ(ipc::describeWaitStatus(W_EXITCODE(0, SIGKILL)), "killed by signal 9 (Killed)");
  EXPECT_EQ(ipc::describeWaitStatus(W_EXITCODE(0, SIGSEGV)),
            "killed by signal 11 (Segmentation fault)");
  EXPECT_EQ(ipc::describeWaitStatus(W_STOPCODE(SIGSTOP)), "stopped by signal 19");
}

TEST(SpawnProcess, PassesArgumentsAsTheyAreAndTheEnvironment) {
  ::setenv("MEMMAPIPC_TEST_VALUE", "from the parent", 1);
  const pid_t pid = ipc::spawnProcess(
      kShell,
      {"sh", "-c", R"(test "$1" = "a b" && test "$MEMMAPIPC_TEST_VALUE" = "from the parent")", "sh",
       "a b"});
  ::unsetenv("MEMMAPIPC_TEST_VALUE");
  EXPECT_EQ(endWithin(pid, 10s), "exited with status 0");
}

TEST(SpawnProcess, AMissingProgramNamesPosixSpawn) {
  EXPECT_EQ(messageOf<ipc::IpcError>([] { ipc::spawnProcess("/nonexistent/worker", {"w"}); }),
            "posix_spawn /nonexistent/worker failed: No such file or directory");
}

TEST(SpawnProcess, CloseOnExecDescriptorsDoNotReachTheWorker) {
  auto [a, b] = itest::socketPair();
  ipc::sendMessage(a.get(), 1, nullptr, 0, {STDERR_FILENO});
  const ipc::Message message = ipc::receiveMessage(b.get(), 5s);
  ASSERT_EQ(message.descriptors.size(), 1u);
  const std::string received = std::to_string(message.descriptors[0].get());
  // The control: the same descriptor without close-on-exec does reach the program.
  ipc::OwnedFd inherited(::dup(message.descriptors[0].get()));  // dup clears FD_CLOEXEC
  ASSERT_FALSE(itest::isCloseOnExec(inherited.get()));
  const std::string control = std::to_string(inherited.get());
  const pid_t pid = ipc::spawnProcess(
      kShell,
      {"sh", "-c", "test ! -e /proc/$$/fd/" + received + " && test -e /proc/$$/fd/" + control});
  EXPECT_EQ(endWithin(pid, 10s), "exited with status 0");
}

TEST(SpawnProcess, TheWorkerStartsWithNoSignalsBlocked) {
  sigset_t blockTerm;
  sigset_t old;
  sigemptyset(&blockTerm);
  sigaddset(&blockTerm, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &blockTerm, &old), 0);
  pid_t pid = -1;
  std::string error;
  try {
    // With SIGTERM still blocked the shell would reach `exit 0`.
    pid = ipc::spawnProcess(kShell, {"sh", "-c", "kill -TERM $$; exit 0"});
  } catch (const ipc::IpcError& e) {
    error = e.what();
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_EQ(error, "");
  EXPECT_EQ(endWithin(pid, 10s), "killed by signal 15 (Terminated)");
}

TEST(EndedHow, NothingWhileRunningThenKilledBySignal9) {
  const pid_t pid = ipc::spawnProcess(kShell, {"sh", "-c", "exec sleep 30"});
  EXPECT_EQ(itest::endedHow(pid), std::nullopt);
  ::kill(pid, SIGKILL);
  EXPECT_EQ(endWithin(pid, 10s), "killed by signal 9 (Killed)");
}

TEST(EndedHow, AWorkerThatKillsItselfWithSignal9) {
  const pid_t pid = ipc::spawnProcess(kShell, {"sh", "-c", "kill -9 $$"});
  EXPECT_EQ(endWithin(pid, 10s), "killed by signal 9 (Killed)");
  // Reaped: it is no child of ours any more.
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { itest::endedHow(pid); }),
            "waitpid " + std::to_string(pid) + " failed: No child processes");
}

TEST(EndedHow, ANonChildNamesWaitpid) {
  EXPECT_EQ(messageOf<ipc::IpcError>([] { itest::endedHow(::getpid()); }),
            "waitpid " + std::to_string(::getpid()) + " failed: No child processes");
}

TEST(WorkerGroup, WaitForSaysHowEachEnded) {
  ipc::WorkerGroup group;
  const pid_t killed = group.start(kShell, {"sh", "-c", "kill -9 $$"});
  const pid_t three = group.start(kShell, {"sh", "-c", "exit 3"});
  const pid_t fine = group.start(kShell, {"sh", "-c", "exit 0"});
  EXPECT_EQ(group.running(), (std::vector<pid_t>{killed, three, fine}));
  EXPECT_EQ(group.waitFor(three, 10s), "exited with status 3");
  EXPECT_EQ(group.running(), (std::vector<pid_t>{killed, fine}));
  EXPECT_EQ(group.waitFor(killed, 10s), "killed by signal 9 (Killed)");
  EXPECT_EQ(group.waitFor(fine, 10s), "exited with status 0");
  EXPECT_TRUE(group.running().empty());
}

TEST(WorkerGroup, WaitForKillsAWorkerThatOverstays) {
  ipc::WorkerGroup group;
  const pid_t pid = group.start(kShell, {"sh", "-c", "exec sleep 30"});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(group.waitFor(pid, 100ms),
            "killed by signal 9 (Killed) after not ending within 100 ms");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 10s);
  EXPECT_TRUE(group.running().empty());
  EXPECT_EQ(::kill(pid, 0), -1);
}

TEST(WorkerGroup, WaitForAProcessItDidNotStartIsAnError) {
  ipc::WorkerGroup group;
  const pid_t pid = group.start(kShell, {"sh", "-c", "exit 0"});
  EXPECT_EQ(group.waitFor(pid, 10s), "exited with status 0");
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { group.waitFor(pid, 10s); }),
            "process " + std::to_string(pid) +
                " is not a running worker of this group (never started here, or reaped)");
}

TEST(WorkerGroup, DestructionLeavesNoWorkerRunningOrUnreaped) {
  std::vector<pid_t> pids;
  {
    ipc::WorkerGroup group;
    pids.push_back(group.start(kShell, {"sh", "-c", "exec sleep 30"}));
    pids.push_back(group.start(kShell, {"sh", "-c", "trap '' TERM; exec sleep 30"}));
    pids.push_back(group.start(kShell, {"sh", "-c", "exit 0"}));
    for (const pid_t pid : pids) {
      EXPECT_EQ(::kill(pid, 0), 0);  // running, or a zombie not yet reaped
    }
  }
  for (const pid_t pid : pids) {
    errno = 0;
    EXPECT_EQ(::kill(pid, 0), -1) << pid;
    EXPECT_EQ(errno, ESRCH) << pid;  // reaped, not a zombie
  }
}

TEST(DieWithParent, AGrandchildDiesWhenItsParentExits) {
  SubreaperScope reaper;
  Pipe report;  // grandchild -> test: its pid once armed
  Pipe go;      // test -> intermediate: exit now
  const pid_t intermediate = ::fork();
  ASSERT_GE(intermediate, 0);
  if (intermediate == 0) {
    const pid_t self = ::getpid();
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      pid_t armed = -1;
      try {
        ipc::dieWithParent(self);
        armed = ::getpid();
      } catch (...) {
      }
      (void)::write(report.write.get(), &armed, sizeof(armed));
      for (;;) {
        ::pause();  // only the parent-death signal ends it
      }
    }
    char byte = 0;
    (void)::read(go.read.get(), &byte, 1);
    ::_exit(grandchild > 0 ? 0 : 1);
  }
  report.write.reset();
  pid_t grandchild = -1;
  const bool reported = readWithin(report.read.get(), &grandchild, sizeof(grandchild), 10s);
  ASSERT_EQ(::write(go.write.get(), "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(intermediate, &status, 0), intermediate);
  EXPECT_EQ(ipc::describeWaitStatus(status), "exited with status 0");
  ASSERT_TRUE(reported);
  ASSERT_GT(grandchild, 0) << "dieWithParent failed in the grandchild";
  EXPECT_EQ(endWithin(grandchild, 10s), "killed by signal 9 (Killed)");
}

TEST(DieWithParent, NoticesAParentThatDiedFirst) {
  SubreaperScope reaper;
  Pipe report;  // grandchild -> test: its pid, then what dieWithParent said
  Pipe go;      // test -> grandchild: call it now (its parent is gone)
  const pid_t intermediate = ::fork();
  ASSERT_GE(intermediate, 0);
  if (intermediate == 0) {
    const pid_t self = ::getpid();
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      const pid_t me = ::getpid();
      (void)::write(report.write.get(), &me, sizeof(me));
      char byte = 0;
      (void)::read(go.read.get(), &byte, 1);
      char text[256] = "(no exception)";
      try {
        ipc::dieWithParent(self);
      } catch (const ipc::IpcError& e) {
        std::snprintf(text, sizeof(text), "%s", e.what());
      }
      (void)::write(report.write.get(), text, sizeof(text));
      ::_exit(0);
    }
    ::_exit(grandchild > 0 ? 0 : 1);
  }
  report.write.reset();
  pid_t grandchild = -1;
  ASSERT_TRUE(readWithin(report.read.get(), &grandchild, sizeof(grandchild), 10s));
  int status = 0;
  ASSERT_EQ(::waitpid(intermediate, &status, 0), intermediate);  // the parent is gone
  ASSERT_EQ(::write(go.write.get(), "x", 1), 1);
  char text[256] = {};
  const bool reported = readWithin(report.read.get(), text, sizeof(text), 10s);
  EXPECT_EQ(endWithin(grandchild, 10s), "exited with status 0");
  ASSERT_TRUE(reported);
  EXPECT_EQ(std::string(text), "the parent process " + std::to_string(intermediate) +
                                   " is already gone (getppid() is now " +
                                   std::to_string(::getpid()) + ")");
}

namespace {

const std::string kStandIn = MEMMAPIPC_STANDIN_WORKER;
const std::string kTrue = "/bin/true";

/// The descriptor numbers in a stand-in's report ("<fd> <target>" lines), and their targets.
std::map<int, std::string> reportedDescriptors(const ipc::Message& message) {
  std::map<int, std::string> descriptors;
  std::istringstream lines(std::string(message.payload.begin(), message.payload.end()));
  int fd = -1;
  std::string target;
  while (lines >> fd >> target)
    descriptors[fd] = target;
  return descriptors;
}

/// Sets an environment variable for one test and unsets it after.
class EnvironmentScope {
 public:
  EnvironmentScope(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~EnvironmentScope() { ::unsetenv(name_); }
  EnvironmentScope(const EnvironmentScope&) = delete;
  EnvironmentScope& operator=(const EnvironmentScope&) = delete;

 private:
  const char* name_;
};

}  // namespace

TEST(Workers, EachInheritsOnlyItsSocketEndAndStdio) {
#if !(defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34)))
  GTEST_SKIP() << "posix_spawn_file_actions_addclosefrom_np needs glibc 2.34";
#endif
  // A descriptor without close-on-exec, as a parent may have inherited one from its own
  // parent: without closefrom in the worker's start it would reach every worker.
  const ipc::OwnedFd decoy(::fcntl(STDERR_FILENO, F_DUPFD, 10));
  ASSERT_TRUE(decoy);
  ASSERT_FALSE(itest::isCloseOnExec(decoy.get()));
  ipc::Workers workers(kStandIn, 2);
  for (std::size_t i = 0; i < workers.size(); ++i) {
    // The report comes through the parent's end: descriptor 3 is that pair's other end.
    const std::map<int, std::string> open = reportedDescriptors(workers.receive(i, "its report"));
    std::vector<int> numbers;
    for (const auto& [fd, target] : open)
      numbers.push_back(fd);
    EXPECT_EQ(numbers, (std::vector<int>{0, 1, 2, 3})) << "worker " << i;
    EXPECT_EQ(open.count(3) ? open.at(3).rfind("socket:[", 0) : 1, 0u) << "worker " << i;
  }
  EXPECT_EQ(workers.quit(),
            (std::vector<std::string>{"exited with status 0", "exited with status 0"}));
}

TEST(Workers, AWorkerThatDiesIsNamedWithHowItEnded) {
  const EnvironmentScope dies("MEMMAPIPC_STANDIN", "exit3");
  ipc::Workers workers(kStandIn, 1);
  const std::string error = messageOf<std::runtime_error>([&] { workers.receive(0, "its Hello"); });
  EXPECT_EQ(error.rfind("worker 0 (pid ", 0), 0u) << error;
  EXPECT_NE(error.find(") exited with status 3: the peer closed the connection (the parent was "
                       "waiting for its Hello)"),
            std::string::npos)
      << error;
}

TEST(Workers, DestructionKillsAndReapsEveryWorker) {
  {
    ipc::Workers workers(kTrue, 2);  // any program will do
    EXPECT_EQ(workers.size(), 2u);
  }
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // no child left, not even a zombie
  EXPECT_EQ(errno, ECHILD);
}

TEST(Workers, DescribeSaysWhereEachRuns) {
  ipc::Workers two(kTrue, 2);
  EXPECT_EQ(two.describe(0, 1, ""),
            "Workers: 2 processes on device 0, the last one on device 1 (it imports device 0's "
            "memory across the link)");
  EXPECT_EQ(two.describe(0, 0, ipc::choosePeer(0, {}, 2).whyNot),
            "Workers: 2 processes on device 0; cross-GPU import: not run (no other GPU can "
            "access device 0)");
  ipc::Workers one(kTrue, 1);
  EXPECT_EQ(one.describe(2, 2, ipc::choosePeer(2, {}, 1).whyNot),
            "Workers: 1 process on device 2; cross-GPU import: not run (one worker only; needs "
            "2 with a second GPU)");
}
