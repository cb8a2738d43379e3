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

/// The three paths, in the order the sample takes them.
inline constexpr SharePath kSharePaths[] = {SharePath::VmmDescriptor, SharePath::LegacyIpc,
                                            SharePath::Pool};

/// "VMM + descriptor", "legacy IPC handle", "memory pool".
const char* pathName(SharePath path);

/// Message types; each names its payload struct. (No message has the numbers 6 and 7.)
enum MessageType : std::uint32_t {
  kHello = 1,      ///< Parent -> worker, then worker -> parent, once each: Hello.
  kJob = 2,        ///< Parent -> worker: Job (+ descriptors). Import, compute the slice, keep.
  kDone = 3,       ///< Worker -> parent: Done. Imported (and with 3 allocations, computed).
  kBench = 4,      ///< Parent -> worker 0: Bench. Time the kernel over the whole range.
  kBenchDone = 5,  ///< Worker -> parent: BenchDone.
  kRelease = 8,    ///< Parent -> worker: drop every import (no payload).
  kReleased = 9,   ///< Worker -> parent: all imports dropped (no payload).
  kFailed = 10,    ///< Worker -> parent: the reason as text.
  kQuit = 11,      ///< Parent -> worker: exit now (no payload).
};

/// Who a worker is and where it runs: the parent's first words to it (once it knows the
/// devices), and the worker's answer once its context exists there.
struct Hello {
  std::uint32_t index = 0;  ///< Its place among the workers (also its argument).
  std::int32_t device = 0;  ///< The device its context is on.
};

/// One path's buffers A, B and C, and this worker's share of C = A + B. A job of one allocation
/// (A alone) is a handoff, timed by the measurement: imported and mapped, nothing computed.
/// `pooled` holds what cuMemPoolExportPointer wrote (64 bytes per allocation); a worker turns
/// each into a pointer with cuMemPoolImportPointer (into Buffers::pooled, ipc_owners.hpp).
struct Job {
  SharePath path = SharePath::VmmDescriptor;  ///< How the buffers are shared.
  std::uint32_t allocations = 3;              ///< A, B, C (1 in a handoff).
  std::uint64_t allocationBytes = 0;          ///< Each allocation (VMM: a granularity multiple).
  /// VMM: the granularity the parent sized its allocations with, which the importer passes as
  /// the alignment of its address range (cuMemAddressReserve). 0 on the other paths.
  std::uint64_t granularity = 0;
  std::uint64_t elements = 0;          ///< Floats per vector.
  std::uint64_t first = 0;             ///< This worker's slice: its first element,
  std::uint64_t count = 0;             ///< and how many.
  std::int32_t ownerDevice = 0;        ///< The device the memory is on.
  CUipcEventHandle inputsWritten{};    ///< Recorded after A and B were written.
  CUipcMemHandle legacy[3]{};          ///< LegacyIpc: cuIpcGetMemHandle of A, B, C.
  CUmemPoolPtrExportData pooled[3]{};  ///< Pool: export data of A, B, C, not pointers.

  /// Makes first and count worker @p worker's equal share of the elements among @p workers.
  void slice(std::size_t worker, std::size_t workers) {
    first = elements * worker / workers;
    count = elements * (worker + 1) / workers - first;
  }
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

/// A job's imports are mapped (and with 3 allocations, the slice is written): when the worker
/// had them usable, on CLOCK_MONOTONIC (the same clock in every process of the machine).
struct Done {
  std::int64_t mappedAtNs = 0;  ///< CLOCK_MONOTONIC, in nanoseconds, when the imports were usable.
};

/**
 * Why a worker must refuse @p job, which came with @p descriptors descriptors, or "" when it may
 * run it. A job is never trusted: a wrong slice would make the kernel write outside it, into the
 * parent's memory. Refused: an unknown path, other than 1 to 3 allocations, descriptors that do
 * not match the path (VMM: one per allocation, pool: one, legacy: none), a VMM job whose
 * granularity is 0 or does not divide allocationBytes (the importer aligns its range with it),
 * more floats than the allocations hold (`elements > allocationBytes / 4`), a slice that starts
 * past the end
 * (`first > elements`) or runs past it (`count > elements - first`). Every test is written so
 * that no sum or product can wrap around.
 */
std::string whyJobIsRefused(const Job& job, std::size_t descriptors);

/// Whether a worker may take a message of @p type now, @p holding a job's imports or not: a job
/// only with nothing held, a benchmark or a release only with a job held, a quit at any time.
/// @throws IpcError naming the message and why it is out of order (a broken or lying parent).
void checkOrder(std::uint32_t type, bool holding);

/// The Job of a kJob @p message (payloadAs()), checked: @throws IpcError "refused a job: ..."
/// with whyJobIsRefused()'s reason.
Job acceptJob(const Message& message);

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
