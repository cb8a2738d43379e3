/**
 * @file worker_link.hpp
 * @brief The memMapIPC parent's link to each worker: its socket and process, and sends and
 *        receives that, when they fail, say which worker and how it ended.
 */
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ipc_channel.hpp"
#include "worker_processes.hpp"

namespace memsamples::ipc {

/// The parent's end of one worker.
struct Worker {
  OwnedFd socket;  ///< Accepted, checked connection (empty until its Hello).
  pid_t pid = 0;   ///< What WorkerGroup::start() returned.
  int device = 0;  ///< The device it runs on.
};

/// How long the parent waits for any one answer.
inline constexpr std::chrono::seconds kReplyTimeout{60};

/**
 * The next message from worker @p index, a kFailed one turned into its error. If none can come
 * (the worker died, hung or spoke nonsense): std::runtime_error naming the worker, its pid, how
 * it ended (it is reaped, or killed after 2 s), and what the parent was waiting for.
 */
Message receiveFrom(std::vector<Worker>& workers, WorkerGroup& group, std::size_t index,
                    const std::string& waitingFor);

/// sendMessage() to worker @p index, with the same kind of error as receiveFrom().
void sendTo(std::vector<Worker>& workers, WorkerGroup& group, std::size_t index, std::uint32_t type,
            const void* payload, std::size_t bytes, const std::vector<int>& descriptors,
            const std::string& what);

/// sendTo() of a payload struct.
template <typename Payload>
void sendTo(std::vector<Worker>& workers, WorkerGroup& group, std::size_t index, std::uint32_t type,
            const Payload& payload, const std::vector<int>& descriptors, const std::string& what) {
  sendTo(workers, group, index, type, &payload, sizeof payload, descriptors, what);
}

/// Ends every worker still running (SIGKILL), reaps them, and says how each ended:
/// "worker 0 (pid 12): exited with status 1; worker 1 (pid 13): killed by signal 9 ...".
std::string endWorkers(std::vector<Worker>& workers, WorkerGroup& group);

/**
 * Kills and reaps every worker when an error leaves the scope it is declared in: declared right
 * after the parent's buffers, it runs before they are freed, because freeing memory that another
 * process still has imported (cuIpcOpenMemHandle, cuMemPoolImportPointer) is undefined.
 */
class WorkersEndFirst {
 public:
  /// Watches @p group from here to the end of the scope.
  explicit WorkersEndFirst(WorkerGroup& group) noexcept;
  WorkersEndFirst(const WorkersEndFirst&) = delete;
  WorkersEndFirst& operator=(const WorkersEndFirst&) = delete;
  /// Kills and reaps the group's workers if an exception is leaving the scope.
  ~WorkersEndFirst();

 private:
  WorkerGroup& group_;
  int exceptionsAtStart_;
};

}  // namespace memsamples::ipc
