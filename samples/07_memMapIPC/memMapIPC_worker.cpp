/**
 * @file memMapIPC_worker.cpp
 * @brief The worker side of the memMapIPC sample (see memMapIPC.cpp for the whole flow): a
 *        process of its own that imports the parent's memory three ways, computes its slice of
 *        C = A + B in it, and drops the imports before the parent frees the memory.
 *
 * It is the same executable, started by the parent as `memMapIPC --worker ...`. Its first act is
 * to die with its parent; then it connects, initializes CUDA for itself (nothing of the parent's
 * CUDA state exists here: a spawned program, not a fork), and answers the parent's messages.
 */
#include "memMapIPC_worker.hpp"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "ipc_owners.hpp"
#include "ipc_protocol.hpp"
#include "memMapIPC_measure.hpp"
#include "memsamples.hpp"
#include "worker_processes.hpp"

namespace ms = memsamples;
namespace ipc = memsamples::ipc;

namespace {

constexpr int kBlockSize = 256;

// [worker-import]
/// What a worker imported for one job; dropped in reverse order (pool pointers before the pool).
struct WorkerImports {
  ipc::OwnedMemoryPool pool;
  std::vector<ipc::PoolAllocation> pooled;   // cuMemPoolImportPointer, freed in stream order
  std::vector<ipc::OwnedIpcMapping> legacy;  // cuIpcOpenMemHandle
  std::vector<ipc::MappedRange> ranges;      // VMM
  CUdeviceptr pointer[3] = {};
};

WorkerImports importBuffers(const ipc::Job& job, ipc::Message& message, int workerDevice,
                            CUstream stream) {
  WorkerImports imports;
  const std::size_t fds = job.path == ipc::SharePath::LegacyIpc ? 0
                          : job.path == ipc::SharePath::Pool    ? 1
                                                                : job.allocations;
  if (job.path > ipc::SharePath::Pool)
    throw ipc::IpcError("a job for an unknown path " + std::to_string(static_cast<int>(job.path)));
  // Never trust the slice: a wrong one would make the kernel write outside it, into the
  // parent's memory.
  if (job.first + job.count > job.elements || job.elements * sizeof(float) > job.allocationBytes) {
    throw ipc::IpcError("a job whose slice [" + std::to_string(job.first) + ", +" +
                        std::to_string(job.count) + ") of " + std::to_string(job.elements) +
                        " floats does not fit its " + std::to_string(job.allocationBytes) +
                        "-byte allocations");
  }
  if (message.descriptors.size() != fds || job.allocations < 1 || job.allocations > 3) {
    throw ipc::IpcError("a " + std::string(ipc::pathName(job.path)) + " job of " +
                        std::to_string(job.allocations) + " allocations came with " +
                        std::to_string(message.descriptors.size()) + " descriptors");
  }
  const CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, workerDevice},
                                  CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  for (std::uint32_t i = 0; i < job.allocations; ++i) {
    CUdeviceptr& pointer = imports.pointer[i];
    if (job.path == ipc::SharePath::VmmDescriptor) {
      ipc::OwnedAllocationHandle handle;  // the descriptor is an int passed as the void* handle
      void* const fd =
          reinterpret_cast<void*>(static_cast<std::uintptr_t>(message.descriptors[i].get()));
      ms::check(cuMemImportFromShareableHandle(handle.out(), fd,
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                "cuMemImportFromShareableHandle");
      message.descriptors[i].reset();  // the handle keeps the memory; the descriptor is done
      ipc::MappedRange& range = imports.ranges.emplace_back();
      ms::check(cuMemAddressReserve(&pointer, job.allocationBytes, 0, 0, 0), "cuMemAddressReserve");
      range.reserved(pointer, job.allocationBytes);
      ms::check(cuMemMap(pointer, job.allocationBytes, 0, handle.get(), 0), "cuMemMap");
      range.mapped();  // the mapping keeps the allocation: the handle is released below
      ms::check(cuMemSetAccess(pointer, job.allocationBytes, &access, 1), "cuMemSetAccess");
    } else if (job.path == ipc::SharePath::LegacyIpc) {
      ms::check(cuIpcOpenMemHandle(imports.legacy.emplace_back().out(), job.legacy[i],
                                   CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                "cuIpcOpenMemHandle");
      pointer = imports.legacy.back().get();
    } else {
      if (i == 0) {
        void* const fd =
            reinterpret_cast<void*>(static_cast<std::uintptr_t>(message.descriptors[0].get()));
        ms::check(cuMemPoolImportFromShareableHandle(imports.pool.out(), fd,
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                  "cuMemPoolImportFromShareableHandle");
        message.descriptors[0].reset();
        if (workerDevice != job.ownerDevice)  // the pool's own device has access already
          ms::check(cuMemPoolSetAccess(imports.pool.get(), &access, 1), "cuMemPoolSetAccess");
      }
      ipc::Job copy = job;  // cuMemPoolImportPointer takes a non-const pointer
      ms::check(cuMemPoolImportPointer(imports.pooled.emplace_back(stream).out(),
                                       imports.pool.get(), &copy.pooled[i]),
                "cuMemPoolImportPointer");
      pointer = imports.pooled.back().get();
    }
  }
  return imports;
}
// [worker-import]

// [worker]
/// The worker role: `memMapIPC --worker <socket> <parent pid> <index> <device>`.
int runWorker(const std::vector<std::string>& args) {
  ipc::OwnedFd socket;
  try {
    if (args.size() != 4)
      throw ms::UsageError("--worker takes <socket> <parent pid> <index> <device>");
    ipc::dieWithParent(static_cast<pid_t>(std::stol(args[1])));
    socket = ipc::connectTo(args[0], std::chrono::seconds(10));
    const ipc::Hello hello{static_cast<std::uint32_t>(std::stoul(args[2])), std::stoi(args[3])};
    ms::checkDriverInit(cuInit(0));  // its own CUDA: nothing came along from the parent
    CUdevice device = 0;
    ms::check(cuDeviceGet(&device, hello.device), "cuDeviceGet");
    ms::OwnedContext context;
    ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
    const std::vector<char> fatbin =
        ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
    ms::OwnedModule module;
    ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
    CUfunction vecAdd = nullptr;
    ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
    ms::OwnedStream stream;
    ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    ipc::send(socket.get(), ipc::kHello, hello);

    // Optional, so that dropping it runs the destructor (pool pointers, then the pool): a move
    // assignment would replace the pool first, while pointers from it are still allocated.
    std::optional<WorkerImports> imports;
    ipc::Job job;
    while (true) {
      // Long enough for the parent's checks between messages; a parent that died has already
      // killed this process (dieWithParent), so the timeout only catches one that hangs.
      ipc::Message message = ipc::receiveMessage(socket.get(), std::chrono::minutes(10));
      if (message.type == ipc::kQuit)
        return 0;
      if (message.type == ipc::kRelease) {
        ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
        imports.reset();  // pool pointers first: their frees must complete before the parent's
        ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
        ipc::sendMessage(socket.get(), ipc::kReleased, nullptr, 0);
      } else if (message.type == ipc::kHandoff) {
        job = ipc::payloadAs<ipc::Job>(message, ipc::kHandoff);
        std::optional<WorkerImports> one(importBuffers(job, message, hello.device, stream.get()));
        const std::int64_t mappedAt = ipc::monotonicNanoseconds();
        one.reset();  // freed, and the free completed, before the parent may free or export again
        ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
        ipc::send(socket.get(), ipc::kHandoffDone, ipc::HandoffDone{mappedAt});
      } else if (message.type == ipc::kBench) {
        const auto bench = ipc::payloadAs<ipc::Bench>(message, ipc::kBench);
        const ms::VectorAddLaunch launch{vecAdd,
                                         ms::blocksToCover(job.elements, 4 * kBlockSize),
                                         kBlockSize,
                                         stream.get(),
                                         imports.value().pointer[0],
                                         imports.value().pointer[1],
                                         imports.value().pointer[2],
                                         job.elements};
        const double medianMs = ms::timeVectorAdd(launch, bench.warmup, bench.iterations).medianMs;
        ipc::send(socket.get(), ipc::kBenchDone, ipc::BenchDone{medianMs});
      } else {  // a kJob, or payloadAs() says what else came
        job = ipc::payloadAs<ipc::Job>(message, ipc::kJob);
        imports.reset();
        imports.emplace(importBuffers(job, message, hello.device, stream.get()));
        // The parent recorded this event after writing A and B: wait for it on the GPU.
        ms::OwnedEvent inputsWritten;
        ms::check(cuIpcOpenEventHandle(inputsWritten.out(), job.inputsWritten),
                  "cuIpcOpenEventHandle");
        ms::check(cuStreamWaitEvent(stream.get(), inputsWritten.get(), 0), "cuStreamWaitEvent");
        CUdeviceptr a = imports->pointer[0] + job.first * sizeof(float);
        CUdeviceptr b = imports->pointer[1] + job.first * sizeof(float);
        CUdeviceptr c = imports->pointer[2] + job.first * sizeof(float);
        unsigned long long n = job.count;
        void* params[] = {&a, &b, &c, &n};
        ms::check(cuLaunchKernel(vecAdd, ms::blocksToCover(n, 4 * kBlockSize), 1, 1, kBlockSize, 1,
                                 1, 0, stream.get(), params, nullptr),
                  "cuLaunchKernel");
        ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
        ipc::sendMessage(socket.get(), ipc::kDone, nullptr, 0);
      }
    }
  } catch (const std::exception& error) {
    const std::string text = "worker " + (args.size() > 2 ? args[2] : "?") + ": " + error.what();
    std::cerr << text << '\n';
    if (socket)  // best effort: the parent learns why, not just that the connection closed
      try {
        ipc::sendMessage(socket.get(), ipc::kFailed, text.data(), text.size());
      } catch (const std::exception&) {
      }
    return 1;
  }
}
// [worker]

}  // namespace

int memsamples::ipc::workerMain(const std::vector<std::string>& args) {
  return runWorker(args);
}
