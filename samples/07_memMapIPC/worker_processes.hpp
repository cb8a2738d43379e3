/**
 * @file worker_processes.hpp
 * @brief Starting the memMapIPC sample's worker processes, talking to them, and knowing what
 *        became of them.
 *
 * No CUDA here; unit tested in ctest/unit/memMapIPC. The driver does not support a process that
 * uses CUDA on both sides of a fork(), so the workers are new programs (posix_spawn of this same
 * executable with `--worker`, which replaces the child with a fresh program at once): each
 * initializes CUDA for itself, and nothing of the parent's CUDA state is ever copied. The parent
 * starts them before its own cuInit, so that no descriptor of the driver exists yet.
 */
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "ipc_protocol.hpp"

namespace memsamples::ipc {

/**
 * Runs a worker: `memMapIPC --worker <descriptor> <parent pid> <index>` (the arguments after
 * `--worker`). The descriptor (3) must be its end of the socket pair its parent made; it waits
 * for the parent's Hello (its device), answers once its context exists, and serves the parent's
 * messages until told to quit. Errors are printed on stderr and, where the socket works, sent to
 * the parent as kFailed.
 * @return the process's exit code: 0 after kQuit, 1 after an error.
 */
int workerMain(const std::vector<std::string>& args);

/**
 * Starts @p program (a path: no $PATH search) with @p arguments (argv[0] included; @p program
 * when empty) by posix_spawn, environment inherited, with an empty signal mask and default signal
 * actions, so the worker does not inherit what the parent blocked or ignored. With a
 * @p socketEnd, the program gets it as descriptor kWorkerSocket (ipc_channel.hpp), and every
 * other descriptor but stdin, stdout and stderr is closed in it: by
 * posix_spawn_file_actions_addclosefrom_np where glibc has it (2.34 and newer), else by
 * close-on-exec, which every descriptor of this sample has; a descriptor that the parent
 * inherited without it would then reach the worker too (why the parent starts its workers
 * before cuInit: the driver's own descriptors do not exist yet).
 * @throws IpcError naming posix_spawn, the program and the reason (a missing program included).
 */
pid_t spawnProcess(const std::string& program, const std::vector<std::string>& arguments,
                   int socketEnd = -1);

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
  pid_t start(const std::string& program, const std::vector<std::string>& arguments,
              int socketEnd = -1);
  /// The pids started and not yet reaped, in start order.
  std::vector<pid_t> running() const { return pids_; }
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

/// How long the parent waits for any one answer.
inline constexpr std::chrono::seconds kReplyTimeout{60};

/**
 * The workers of one run. The constructor starts them; the destructor kills and reaps whatever
 * still runs (an error path), before their sockets close, so that no worker outlives the run and
 * none reports a vanished parent on the way.
 */
class Workers {
 public:
  /**
   * Starts @p count workers, each `<program> --worker 3 <this pid> <index>` with the worker end of
   * a socket pair of its own as descriptor 3 (spawnProcess() closes every other one in it); the
   * parent keeps the other end. Nothing else can reach a worker: no socket has a name.
   * @throws IpcError naming socketpair or posix_spawn.
   */
  Workers(const std::string& program, int count);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  /// How many workers there are.
  std::size_t size() const noexcept { return sockets_.size(); }
  /// Says Hello to each worker: its index and its device, @p device, or @p lastDevice for the last
  /// one; then waits for each one's Hello back, which says its context exists on that device.
  void hello(int device, int lastDevice);
  /// "Workers: 2 processes on device 0, the last one on device 1 (...)"; when @p lastDevice is
  /// @p device, "...; cross-GPU import: not run (@p whyNotAcross)".
  std::string describe(int device, int lastDevice, const std::string& whyNotAcross) const;

  /**
   * The next message from worker @p index, a kFailed one turned into its error. If none can come
   * (the worker died, hung or spoke nonsense): std::runtime_error naming the worker, its pid, how
   * it ended (it is reaped, or killed after 2 s), and what the parent was waiting for.
   */
  Message receive(std::size_t index, const std::string& waitingFor);
  /// sendMessage() to worker @p index of @p payload, with @p descriptors, with the same kind of
  /// error as receive().
  template <typename Payload>
  void send(std::size_t index, MessageType type, const Payload& payload,
            const std::vector<OwnedFd>& descriptors, const std::string& what) {
    sendBytes(index, type, &payload, sizeof payload, descriptors, what);
  }
  /// send() of a message without payload.
  void send(std::size_t index, MessageType type, const std::string& what) {
    sendBytes(index, type, nullptr, 0, {}, what);
  }
  /// Waits for every worker's kDone: each has imported its job and written its slice.
  void waitForSlices();
  /// Worker @p index drops its imports (kRelease) and says so (kReleased).
  void releaseImports(std::size_t index);
  /// Every worker drops its imports, importers before the owner: a pool allocation must be
  /// freed by every importer before its owner frees it.
  void releaseImports();
  /// kQuit to every worker; waits at most 10 s for each to end. @return how each ended.
  std::vector<std::string> quit();
  /// Kills (SIGKILL) and reaps every worker still running; an error path's first act.
  void killAll() noexcept { group_.killAll(); }

 private:
  void sendBytes(std::size_t index, MessageType type, const void* payload, std::size_t bytes,
                 const std::vector<OwnedFd>& descriptors, const std::string& what);
  [[noreturn]] void fail(std::size_t index, const IpcError& error, const std::string& what);

  std::vector<OwnedFd> sockets_;  // the parent's ends
  std::vector<pid_t> pids_;
  WorkerGroup group_;  // declared last, destroyed first: the workers end before their sockets
};

}  // namespace memsamples::ipc
