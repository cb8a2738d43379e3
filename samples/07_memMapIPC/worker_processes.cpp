// Starting the memMapIPC sample's workers, talking to them, and knowing what became of them
// (see worker_processes.hpp).
#include "worker_processes.hpp"

#include <fcntl.h>
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


extern char** environ;

// posix_spawn_file_actions_addclosefrom_np came with glibc 2.34.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#define MEMSAMPLES_SPAWN_CLOSEFROM 1
#else
#define MEMSAMPLES_SPAWN_CLOSEFROM 0
#endif

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
    if (result >= 0 || errno != EINTR)
      return result;
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
      if (errno == EINTR)
        continue;
      throw systemError("waitid " + std::to_string(pid), errno);
    }
    if (info.si_pid == pid)
      return true;
    const auto now = Clock::now();
    if (now >= deadline)
      return false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    // With a pidfd, poll wakes when the process ends; without one, look again every 10 ms.
    pollfd entry{watch.get(), POLLIN, 0};
    const int wait = watch ? static_cast<int>(std::min<long long>(left, 1 << 30))
                           : static_cast<int>(std::min<long long>(left, 10));
    ::poll(watch ? &entry : nullptr, watch ? 1 : 0, wait);
  }
}

}  // namespace

pid_t spawnProcess(const std::string& program, const std::vector<std::string>& arguments,
                   int socketEnd) {
  std::vector<char*> argv;
  if (arguments.empty())
    argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& argument : arguments)
    argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);

  // [spawn-file-actions]
  posix_spawn_file_actions_t actions;
  int error = ::posix_spawn_file_actions_init(&actions);
  if (error != 0)
    throw systemError("posix_spawn_file_actions_init", error);
  if (socketEnd >= 0) {
    // The worker's descriptor 3 comes without close-on-exec (glibc 2.29 and newer clear it
    // also where socketEnd is 3 already); closefrom then closes everything above it.
    error = ::posix_spawn_file_actions_adddup2(&actions, socketEnd, kWorkerSocket);
#if MEMSAMPLES_SPAWN_CLOSEFROM
    if (error == 0)
      error = ::posix_spawn_file_actions_addclosefrom_np(&actions, kWorkerSocket + 1);
#endif
  }
  // [spawn-file-actions]
  posix_spawnattr_t attributes;
  if (error == 0)
    error = ::posix_spawnattr_init(&attributes);
  if (error != 0) {
    ::posix_spawn_file_actions_destroy(&actions);
    throw systemError("posix_spawn_file_actions", error);
  }
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  error = ::posix_spawnattr_setsigmask(&attributes, &none);
  if (error == 0)
    error = ::posix_spawnattr_setsigdefault(&attributes, &all);
  if (error == 0)
    error = ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  if (error == 0)
    error = ::posix_spawn(&pid, program.c_str(), &actions, &attributes, argv.data(), environ);
  ::posix_spawnattr_destroy(&attributes);
  ::posix_spawn_file_actions_destroy(&actions);
  if (error != 0)
    throw systemError("posix_spawn " + program, error);
  return pid;
}

void dieWithParent(pid_t expectedParent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
    throw systemError("prctl PR_SET_PDEATHSIG", errno);
  // The parent may have died before the prctl: then no signal will ever come, and the worker
  // was adopted by another process.
  const pid_t parent = ::getppid();
  if (parent != expectedParent) {
    throw IpcError("the parent process " + std::to_string(expectedParent) +
                   " is already gone (getppid() is now " + std::to_string(parent) + ")");
  }
}

std::string describeWaitStatus(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* name = ::strsignal(signal);
    return "killed by signal " + std::to_string(signal) + " (" +
           (name != nullptr ? name : "unknown signal") + ")";
  }
  if (WIFSTOPPED(status))
    return "stopped by signal " + std::to_string(WSTOPSIG(status));
  return "ended with wait status " + std::to_string(status);
}

WorkerGroup::~WorkerGroup() {
  killAll();
}

pid_t WorkerGroup::start(const std::string& program, const std::vector<std::string>& arguments,
                         int socketEnd) {
  pids_.reserve(pids_.size() + 1);  // so that remembering the pid cannot throw and lose it
  const pid_t pid = spawnProcess(program, arguments, socketEnd);
  pids_.push_back(pid);
  return pid;
}

std::string WorkerGroup::waitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto known = std::find(pids_.begin(), pids_.end(), pid);
  if (known == pids_.end()) {
    throw IpcError("process " + std::to_string(pid) +
                   " is not a running worker of this group (never started here, or reaped)");
  }
  const bool ended = waitForEnd(pid, Clock::now() + timeout);
  if (!ended)
    ::kill(pid, SIGKILL);
  int status = 0;
  const pid_t result = waitRetrying(pid, status, 0);
  const int error = errno;
  pids_.erase(known);
  if (result < 0)
    throw systemError("waitpid " + std::to_string(pid), error);
  std::string how = describeWaitStatus(status);
  // Only when our SIGKILL is what ended it: one that exited just in time says so plainly.
  if (!ended && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
    how += " after not ending within " + std::to_string(timeout.count()) + " ms";
  return how;
}

void WorkerGroup::killAll() noexcept {
  for (const pid_t pid : pids_)
    ::kill(pid, SIGKILL);
  for (const pid_t pid : pids_) {
    int status = 0;
    waitRetrying(pid, status, 0);
  }
  pids_.clear();
}

Workers::Workers(const std::string& program, int count) {
  const std::string parent = std::to_string(::getpid());
  for (int i = 0; i < count; ++i) {
    SocketPair pair = makeSocketPair();
    const std::vector<std::string> arguments = {"memMapIPC", "--worker",
                                                std::to_string(kWorkerSocket), parent,
                                                std::to_string(i)};
    pids_.push_back(group_.start(program, arguments, pair.workerEnd.get()));
    sockets_.push_back(std::move(pair.parentEnd));
  }  // the worker ends close here: each one is now its worker's alone
}

Workers::~Workers() {
  group_.killAll();
}

void Workers::hello(int device, int lastDevice) {
  for (std::size_t i = 0; i < size(); ++i) {
    const Hello hello{static_cast<std::uint32_t>(i), i + 1 == size() ? lastDevice : device};
    send(i, kHello, hello, {}, "its device");
  }
  for (std::size_t i = 0; i < size(); ++i) {
    (void)payloadAs<Hello>(receive(i, "its Hello"), kHello);
  }
}

std::string Workers::describe(int device, int lastDevice, const std::string& whyNotAcross) const {
  const std::string on = std::to_string(device);
  const std::string text = "Workers: " + std::to_string(size()) +
                           (size() == 1 ? " process" : " processes") + " on device " + on;
  if (lastDevice != device) {
    return text + ", the last one on device " + std::to_string(lastDevice) +
           " (it imports device " + on + "'s memory across the link)";
  }
  return text + "; cross-GPU import: not run (" + whyNotAcross + ")";
}

Message Workers::receive(std::size_t index, const std::string& waitingFor) {
  try {
    Message message = receiveMessage(sockets_[index].get(), kReplyTimeout);
    expectNotFailed(message);
    return message;
  } catch (const IpcError& error) {
    fail(index, error, "waiting for " + waitingFor);
  }
}

void Workers::sendBytes(std::size_t index, MessageType type, const void* payload,
                        std::size_t bytes, const std::vector<OwnedFd>& descriptors,
                        const std::string& what) {
  std::vector<int> raw;
  for (const OwnedFd& fd : descriptors)
    raw.push_back(fd.get());
  try {
    sendMessage(sockets_[index].get(), type, payload, bytes, raw);
  } catch (const IpcError& error) {
    fail(index, error, "sending " + what);
  }
}

void Workers::waitForSlices() {
  for (std::size_t i = 0; i < size(); ++i)
    (void)payloadAs<Done>(receive(i, "its slice"), kDone);
}

void Workers::releaseImports(std::size_t index) {
  send(index, kRelease, "the release");
  expectMessage(receive(index, "its release"), kReleased);
}

void Workers::releaseImports() {
  for (std::size_t i = 0; i < size(); ++i)
    send(i, kRelease, "the release");
  for (std::size_t i = 0; i < size(); ++i)
    expectMessage(receive(i, "its release"), kReleased);
}

std::vector<std::string> Workers::quit() {
  for (std::size_t i = 0; i < size(); ++i)
    send(i, kQuit, "quit");
  std::vector<std::string> endings;
  for (const pid_t pid : pids_)
    endings.push_back(group_.waitFor(pid, std::chrono::seconds(10)));
  return endings;
}

void Workers::fail(std::size_t index, const IpcError& error, const std::string& what) {
  std::string how;
  try {
    how = group_.waitFor(pids_[index], std::chrono::seconds(2));
  } catch (const IpcError&) {
    how = "already reaped";
  }
  throw std::runtime_error("worker " + std::to_string(index) + " (pid " +
                           std::to_string(pids_[index]) + ") " + how + ": " + error.what() +
                           " (the parent was " + what + ")");
}

}  // namespace memsamples::ipc
