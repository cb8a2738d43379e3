/**
 * @file ipc_protocol.hpp
 * @brief What the memMapIPC parent and its workers say to each other over ipc_channel.hpp: the
 *        message types, and the fixed-size payloads that carry the shareable handles.
 *
 * The payloads are plain structs copied byte for byte: both ends are the same executable, so
 * their layout is the same. Descriptors never travel in a payload; they ride along as SCM_RIGHTS
 * (the kernel gives the receiver its own descriptors for the same objects). payloadAs() checks
 * type and size before a byte is used, so a wrong message is one clear error.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "ipc_channel.hpp"

namespace memsamples::ipc {

/// The three ways of sharing that the sample puts side by side.
enum class SharePath : std::uint32_t {
  VmmDescriptor = 0,  ///< cuMemCreate + cuMemExportToShareableHandle(POSIX_FILE_DESCRIPTOR)
  LegacyIpc = 1,      ///< cuMemAlloc + cuIpcGetMemHandle
  Pool = 2,           ///< cuMemPoolCreate(POSIX_FILE_DESCRIPTOR) + cuMemPoolExportPointer
};

/// "VMM + descriptor", "legacy IPC handle", "memory pool".
const char* pathName(SharePath path);

/// Message types; each names its payload struct.
enum MessageType : std::uint32_t {
  kHello = 1,    ///< Worker -> parent, once: Hello.
  kJob,          ///< Parent -> worker: Job (+ descriptors). Import, compute a slice, keep it.
  kDone,         ///< Worker -> parent: Done. The slice is written.
  kBench,        ///< Parent -> worker 0: Bench. Time the kernel over the whole range.
  kBenchDone,    ///< Worker -> parent: BenchDone.
  kHandoff,      ///< Parent -> worker 0: Job for one allocation: import, map, release.
  kHandoffDone,  ///< Worker -> parent: HandoffDone.
  kRelease,      ///< Parent -> worker: drop every import (no payload).
  kReleased,     ///< Worker -> parent: all imports dropped (no payload).
  kFailed,       ///< Worker -> parent: the reason as text.
  kQuit,         ///< Parent -> worker: exit now (no payload).
};

/// A worker's first words: who it is and where it runs.
struct Hello {
  std::uint32_t index = 0;  ///< Its place among the workers (its argument from the parent).
  std::int32_t device = 0;  ///< The device its context is on.
};

/// One path's buffers A, B and C, and this worker's share of C = A + B.
struct Job {
  SharePath path = SharePath::VmmDescriptor;  ///< How the buffers are shared.
  std::uint32_t allocations = 3;              ///< A, B, C (1 in a Handoff).
  std::uint64_t allocationBytes = 0;          ///< Each allocation (VMM: a granularity multiple).
  std::uint64_t elements = 0;                 ///< Floats per vector.
  std::uint64_t first = 0;                    ///< This worker's slice: its first element,
  std::uint64_t count = 0;                    ///< and how many.
  std::int32_t ownerDevice = 0;               ///< The device the memory is on.
  CUipcEventHandle inputsWritten{};           ///< Recorded after A and B were written.
  CUipcMemHandle legacy[3]{};                 ///< LegacyIpc: cuIpcGetMemHandle of A, B, C.
  CUmemPoolPtrExportData pooled[3]{};         ///< Pool: cuMemPoolExportPointer of A, B, C.
};

/// How to time the worker's kernel (the parent's --warmup and --iterations).
struct Bench {
  std::int32_t warmup = 0;      ///< Untimed launches first.
  std::int32_t iterations = 0;  ///< Timed launches; the median is reported.
};

/// The worker's kernel over the whole imported range, timed on its stream with CUDA events.
struct BenchDone {
  double medianMs = 0;  ///< Median time of one launch.
};

/// When the worker had the allocation mapped and usable (CLOCK_MONOTONIC, the same clock in every
/// process of the machine), in nanoseconds.
struct HandoffDone {
  std::int64_t mappedAtNs = 0;  ///< CLOCK_MONOTONIC when the import was usable.
};

/// CLOCK_MONOTONIC now, in nanoseconds.
std::int64_t monotonicNanoseconds();

/// A kFailed message's text as an IpcError; any other message passes.
void expectNotFailed(const Message& message);

/// Sends a payload struct.
template <typename Payload>
void send(int socket, MessageType type, const Payload& payload,
          const std::vector<int>& descriptors = {}) {
  sendMessage(socket, type, &payload, sizeof payload, descriptors);
}

/// The payload of @p message as @p Payload. @throws IpcError when the type is not @p expected or
/// the size is not the struct's ("expected message 2 with 1096 bytes, got 9 with 41").
template <typename Payload>
Payload payloadAs(const Message& message, MessageType expected) {
  expectNotFailed(message);
  if (message.type != expected || message.payload.size() != sizeof(Payload)) {
    throw IpcError("expected message " + std::to_string(expected) + " with " +
                   std::to_string(sizeof(Payload)) + " bytes, got " + std::to_string(message.type) +
                   " with " + std::to_string(message.payload.size()));
  }
  Payload payload;
  std::memcpy(&payload, message.payload.data(), sizeof payload);
  return payload;
}

/// A message of type @p expected without payload, else IpcError (a kFailed message: its text).
void expectMessage(const Message& message, MessageType expected);

}  // namespace memsamples::ipc
