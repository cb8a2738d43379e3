// Starting the memMapIPC sample's workers and knowing what became of them (see
// worker_processes.hpp).
#include "worker_processes.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ipc_channel.hpp"

extern char** environ;

namespace memsamples::ipc {
namespace {

using Clock = std::chrono::steady_clock;

/// "<what> failed: <strerror(error)>".
IpcError systemError(const std::string& what, int error) {
  return IpcError(what + " failed: " + std::strerror(error));
}

/// waitpid resumed after a signal. @return its result; @p status is set when it is @p pid.
pid_t waitRetrying(pid_t pid, int& status, int options) {
  for (;;) {
    const pid_t result = ::waitpid(pid, &status, options);
    if (result >= 0 || errno != EINTR) {
      return result;
    }
  }
}

/// A descriptor that becomes readable when @p pid ends (pidfd_open, Linux 5.3), or -1 where the
/// kernel has none: then the caller polls waitpid instead.
OwnedFd processDescriptor(pid_t pid) {
#ifdef SYS_pidfd_open
  return OwnedFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#else
  (void)pid;
  return OwnedFd();
#endif
}

/// Waits until @p pid has ended (not reaped) or @p deadline passes; true when it has ended.
bool waitForEnd(pid_t pid, Clock::time_point deadline) {
  const OwnedFd watch = processDescriptor(pid);
  for (;;) {
    siginfo_t info{};
    // WNOWAIT: look without reaping, so the caller reaps once and gets the status.
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) {
        continue;
      }
      throw systemError("waitid " + std::to_string(pid), errno);
    }
    if (info.si_pid == pid) {
      return true;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return false;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    // With a pidfd, poll wakes when the process ends; without one, look again every 10 ms.
    pollfd entry{watch.get(), POLLIN, 0};
    const int wait = watch ? static_cast<int>(std::min<long long>(left, 1 << 30))
                           : static_cast<int>(std::min<long long>(left, 10));
    ::poll(watch ? &entry : nullptr, watch ? 1 : 0, wait);
  }
}

}  // namespace

pid_t spawnProcess(const std::string& program, const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  if (arguments.empty()) {
    argv.push_back(const_cast<char*>(program.c_str()));
  }
  for (const std::string& argument : arguments) {
    argv.push_back(const_cast<char*>(argument.c_str()));
  }
  argv.push_back(nullptr);

  posix_spawnattr_t attributes;
  int error = ::posix_spawnattr_init(&attributes);
  if (error != 0) {
    throw systemError("posix_spawnattr_init", error);
  }
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  error = ::posix_spawnattr_setsigmask(&attributes, &none);
  if (error == 0) {
    error = ::posix_spawnattr_setsigdefault(&attributes, &all);
  }
  if (error == 0) {
    error = ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  pid_t pid = -1;
  if (error == 0) {
    error = ::posix_spawn(&pid, program.c_str(), nullptr, &attributes, argv.data(), environ);
  }
  ::posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    throw systemError("posix_spawn " + program, error);
  }
  return pid;
}

void dieWithParent(pid_t expectedParent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    throw systemError("prctl PR_SET_PDEATHSIG", errno);
  }
  // The parent may have died before the prctl: then no signal will ever come, and the worker
  // was adopted by another process.
  const pid_t parent = ::getppid();
  if (parent != expectedParent) {
    throw IpcError("the parent process " + std::to_string(expectedParent) +
                   " is already gone (getppid() is now " + std::to_string(parent) + ")");
  }
}

std::string describeWaitStatus(int status) {
  if (WIFEXITED(status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* name = ::strsignal(signal);
    return "killed by signal " + std::to_string(signal) + " (" +
           (name != nullptr ? name : "unknown signal") + ")";
  }
  if (WIFSTOPPED(status)) {
    return "stopped by signal " + std::to_string(WSTOPSIG(status));
  }
  return "ended with wait status " + std::to_string(status);
}

std::optional<std::string> endedHow(pid_t pid) {
  int status = 0;
  const pid_t result = waitRetrying(pid, status, WNOHANG);
  if (result < 0) {
    throw systemError("waitpid " + std::to_string(pid), errno);
  }
  if (result == 0) {
    return std::nullopt;
  }
  return describeWaitStatus(status);
}

WorkerGroup::~WorkerGroup() {
  killAll();
}

pid_t WorkerGroup::start(const std::string& program, const std::vector<std::string>& arguments) {
  pids_.reserve(pids_.size() + 1);  // so that remembering the pid cannot throw and lose it
  const pid_t pid = spawnProcess(program, arguments);
  pids_.push_back(pid);
  return pid;
}

std::vector<pid_t> WorkerGroup::running() const {
  return pids_;
}

std::string WorkerGroup::waitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto known = std::find(pids_.begin(), pids_.end(), pid);
  if (known == pids_.end()) {
    throw IpcError("process " + std::to_string(pid) +
                   " is not a running worker of this group (never started here, or reaped)");
  }
  const bool ended = waitForEnd(pid, Clock::now() + timeout);
  if (!ended) {
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  const pid_t result = waitRetrying(pid, status, 0);
  const int error = errno;
  pids_.erase(known);
  if (result < 0) {
    throw systemError("waitpid " + std::to_string(pid), error);
  }
  std::string how = describeWaitStatus(status);
  // Only when our SIGKILL is what ended it: one that exited just in time says so plainly.
  if (!ended && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    how += " after not ending within " + std::to_string(timeout.count()) + " ms";
  }
  return how;
}

void WorkerGroup::killAll() noexcept {
  for (const pid_t pid : pids_) {
    ::kill(pid, SIGKILL);
  }
  for (const pid_t pid : pids_) {
    int status = 0;
    waitRetrying(pid, status, 0);
  }
  pids_.clear();
}

}  // namespace memsamples::ipc
