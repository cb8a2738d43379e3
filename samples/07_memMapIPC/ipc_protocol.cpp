/**
 * @file ipc_protocol.cpp
 * @brief The memMapIPC message helpers (see ipc_protocol.hpp).
 */
#include "ipc_protocol.hpp"

#include <time.h>

namespace memsamples::ipc {

const char* pathName(SharePath path) {
  const char* const names[] = {"VMM + descriptor", "legacy IPC handle", "memory pool"};
  const auto index = static_cast<std::uint32_t>(path);
  return index < 3 ? names[index] : "unknown path";
}

std::int64_t monotonicNanoseconds() {
  timespec now = {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

void expectNotFailed(const Message& message) {
  if (message.type == kFailed)
    throw IpcError(std::string(message.payload.begin(), message.payload.end()));
}

// [job-checks]
std::string whyJobIsRefused(const Job& job, std::size_t descriptors) {
  const auto text = [](std::uint64_t value) { return std::to_string(value); };
  if (job.path > SharePath::Pool)
    return "it is for an unknown path " + text(static_cast<std::uint32_t>(job.path));
  if (job.allocations < 1 || job.allocations > 3)
    return "it has " + text(job.allocations) + " allocations; a job has 1 to 3";
  const std::size_t expected = job.path == SharePath::LegacyIpc ? 0
                               : job.path == SharePath::Pool    ? 1
                                                                : job.allocations;
  if (descriptors != expected) {
    return "a " + std::string(pathName(job.path)) + " job of " + text(job.allocations) +
           " allocations came with " + text(descriptors) + " descriptors";
  }
  if (job.path == SharePath::VmmDescriptor &&
      (job.granularity == 0 || job.allocationBytes % job.granularity != 0)) {
    return "its " + text(job.allocationBytes) + "-byte VMM allocations are not a multiple of " +
           "its granularity " + text(job.granularity);
  }
  if (job.elements > job.allocationBytes / sizeof(float)) {
    return "its " + text(job.elements) + " floats per vector do not fit its " +
           text(job.allocationBytes) + "-byte allocations";
  }
  if (job.first > job.elements)
    return "its slice starts at " + text(job.first) + ", past the end of " + text(job.elements);
  if (job.count > job.elements - job.first) {
    return "its slice of " + text(job.count) + " floats from " + text(job.first) +
           " runs past the end of " + text(job.elements);
  }
  return "";
}
// [job-checks]

void checkOrder(std::uint32_t type, bool holding) {
  if (type == kQuit || (type == kJob && !holding))
    return;
  if ((type == kBench || type == kRelease) && holding)
    return;
  if (type == kJob)
    throw IpcError("refused a job: the last job's imports are still held (no release came)");
  if (type == kBench || type == kRelease) {
    throw IpcError("refused message " + std::to_string(type) +
                   ": it needs a job's imports, and none are held");
  }
  throw IpcError("refused message " + std::to_string(type) + ": not one a worker takes");
}

Job acceptJob(const Message& message) {
  const Job job = payloadAs<Job>(message, kJob);
  const std::string why = whyJobIsRefused(job, message.descriptors.size());
  if (!why.empty())
    throw IpcError("refused a job: " + why);
  return job;
}

void expectMessage(const Message& message, MessageType expected) {
  expectNotFailed(message);
  if (message.type != expected || !message.payload.empty()) {
    throw IpcError("expected message " + std::to_string(expected) + " without payload, got " +
                   std::to_string(message.type) + " with " +
                   std::to_string(message.payload.size()) + " bytes");
  }
}

}  // namespace memsamples::ipc
