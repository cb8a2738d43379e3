/**
 * @file worker_link.cpp
 * @brief The memMapIPC parent's link to each worker (see worker_link.hpp).
 */
#include "worker_link.hpp"

#include <exception>
#include <stdexcept>

#include "ipc_protocol.hpp"

namespace memsamples::ipc {

namespace {

/// "worker 1 (pid 1234)".
std::string nameOf(const std::vector<Worker>& workers, std::size_t index) {
  return "worker " + std::to_string(index) + " (pid " + std::to_string(workers[index].pid) + ")";
}

[[noreturn]] void failWith(std::vector<Worker>& workers, WorkerGroup& group, std::size_t index,
                           const IpcError& error, const std::string& what) {
  const std::string how = group.waitFor(workers[index].pid, std::chrono::seconds(2));
  throw std::runtime_error(nameOf(workers, index) + " " + how + ": " + error.what() +
                           " (the parent was " + what + ")");
}

}  // namespace

Message receiveFrom(std::vector<Worker>& workers, WorkerGroup& group, std::size_t index,
                    const std::string& waitingFor) {
  try {
    Message message = receiveMessage(workers[index].socket.get(), kReplyTimeout);
    expectNotFailed(message);
    return message;
  } catch (const IpcError& error) {
    failWith(workers, group, index, error, "waiting for " + waitingFor);
  }
}

void sendTo(std::vector<Worker>& workers, WorkerGroup& group, std::size_t index, std::uint32_t type,
            const void* payload, std::size_t bytes, const std::vector<int>& descriptors,
            const std::string& what) {
  try {
    sendMessage(workers[index].socket.get(), type, payload, bytes, descriptors);
  } catch (const IpcError& error) {
    failWith(workers, group, index, error, "sending " + what);
  }
}

std::string endWorkers(std::vector<Worker>& workers, WorkerGroup& group) {
  std::string text;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    std::string how;
    try {
      how = group.waitFor(workers[i].pid, std::chrono::milliseconds(0));
    } catch (const IpcError&) {
      how = "already reaped";
    }
    text += (text.empty() ? "" : "; ") + nameOf(workers, i) + ": " + how;
  }
  return text;
}

WorkersEndFirst::WorkersEndFirst(WorkerGroup& group) noexcept
    : group_(group), exceptionsAtStart_(std::uncaught_exceptions()) {}

WorkersEndFirst::~WorkersEndFirst() {
  if (std::uncaught_exceptions() > exceptionsAtStart_)
    group_.killAll();
}

}  // namespace memsamples::ipc
