/**
 * @file worker_processes.hpp
 * @brief Starting the memMapIPC sample's worker processes and knowing what became of them.
 *
 * No CUDA here; unit tested in ctest/unit/memMapIPC. The driver does not support a process that
 * uses CUDA on both sides of a fork(), so the workers are new programs (posix_spawn of this same
 * executable with `--worker`, which replaces the child with a fresh program at once): each
 * initializes CUDA for itself, and nothing of the parent's CUDA state is ever copied, even though
 * the parent has initialized CUDA by the time it starts them.
 */
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace memsamples::ipc {

/// Starts @p program (a path: no $PATH search) with @p arguments (argv[0] included; @p program
/// when empty) by posix_spawn, environment inherited, with an empty signal mask and default signal
/// actions, so the worker does not inherit what the parent blocked or ignored.
/// @throws IpcError naming posix_spawn, the program and the reason (a missing program included).
pid_t spawnProcess(const std::string& program, const std::vector<std::string>& arguments);

/**
 * The first call of a worker: it is killed (SIGKILL) when its parent dies (PR_SET_PDEATHSIG), so a
 * parent that crashes leaves no worker behind. A parent that died before the call is noticed too
 * (getppid() is no longer @p expectedParent). The kernel sends the signal when the parent *thread*
 * that started the worker ends, so workers are started from the thread that outlives them (the
 * main thread).
 * @throws IpcError naming prctl, or saying the parent is already gone.
 */
void dieWithParent(pid_t expectedParent);

/// "exited with status 3", "killed by signal 9 (Killed)": a waitpid status for people.
std::string describeWaitStatus(int status);

/// If @p pid has ended, reaps it and says how (describeWaitStatus); none while it runs.
/// @throws IpcError (waitpid) when @p pid is not a child of this process or was already reaped.
std::optional<std::string> endedHow(pid_t pid);

/**
 * The processes a parent started: each is reaped by waitFor(), and whatever is still running when
 * the group is destroyed (an error path) is killed and reaped, so no worker outlives the run and
 * no zombie is left.
 */
class WorkerGroup {
 public:
  /// No processes yet.
  WorkerGroup() = default;
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;
  /// killAll(): no worker outlives the group.
  ~WorkerGroup();

  /// spawnProcess(), remembered. @return its pid.
  pid_t start(const std::string& program, const std::vector<std::string>& arguments);
  /// The pids started and not yet reaped, in start order.
  std::vector<pid_t> running() const;
  /// Waits at most @p timeout for @p pid to end (then kills it with SIGKILL) and reaps it.
  /// @return how it ended, e.g. "exited with status 0"; when the timeout killed it,
  ///         "killed by signal 9 (Killed) after not ending within N ms".
  /// @throws IpcError when @p pid is not one of running().
  std::string waitFor(pid_t pid, std::chrono::milliseconds timeout);
  /// SIGKILL to every process still running, each reaped.
  void killAll() noexcept;

 private:
  std::vector<pid_t> pids_;
};

}  // namespace memsamples::ipc
