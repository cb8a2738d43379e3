/**
 * @file memMapIPC_worker.cpp
 * @brief The worker side of the memMapIPC sample: a process of its own that imports
 *        the parent's memory three ways, computes its slice of C = A + B in it, and drops
 *        the imports before the parent frees the memory. memMapIPC.cpp numbers the steps.
 *
 * The parent starts it as `memMapIPC --worker 3 <parent pid> <index>`. Its part in the
 * parent's steps:
 * - Step 1: it checks that descriptor 3 is its end of a socket pair, and arranges to
 *   die with its parent.
 * - Step 2: the parent's Hello names its device: **cuInit**, a context there, the
 *   kernel, and a Hello back. None of the parent's CUDA state is here: a new program,
 *   not a fork.
 * - Step 5: a job is checked, then imported. VMM: **cuMemImportFromShareableHandle**,
 *   the descriptor closed, **cuMemAddressReserve**, **cuMemMap**, **cuMemSetAccess** for
 *   this device. Legacy: **cuIpcOpenMemHandle**. Pool:
 *   **cuMemPoolImportFromShareableHandle**, access for this device
 *   (**cuMemPoolGetAccess**, **cuMemPoolSetAccess**), then **cuMemPoolImportPointer**.
 * - Step 6: it waits for the parent's event on the GPU (**cuIpcOpenEventHandle**,
 *   **cuStreamWaitEvent**), computes its slice (**cuLaunchKernel**) and says Done.
 * - Steps 7 and 8: it times the kernel (worker 0), and on the parent's word releases
 *   what it imported, each answer checked: **cuMemUnmap**, **cuMemRelease**,
 *   **cuMemAddressFree**; **cuIpcCloseMemHandle**; **cuMemFreeAsync** of the pool's
 *   allocations, then **cuMemPoolDestroy** of the imported pool. A handoff is a job of A
 *   alone, released again at once.
 * - Step 9: told to quit, it exits with 0; the owners release its stream, module and
 *   context.
 *
 * Any error is printed on stderr and sent to the parent (kFailed); the exit code is 1.
 */
#include "worker_processes.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "ipc_owners.hpp"
#include "memMapIPC_measure.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace ipc = memsamples::ipc;

namespace {

constexpr int kBlockSize = 256;
constexpr CUmemAllocationHandleType kFdType = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

/// How long a worker waits for the parent's next message. A parent that died has killed
/// this process already (dieWithParent), so this only catches one that hangs.
constexpr std::chrono::minutes kParentSilence{10};

void importOther(ipc::Buffers& imports, const ipc::Job& job, ipc::Message& message,
                 std::uint32_t i, int device);

/// The worker role: `memMapIPC --worker <descriptor> <parent pid> <index>`.
int runWorker(const std::vector<std::string>& args) {
  const std::string index = args.size() > 2 ? args[2] : std::string("?");
  const std::string who = "memMapIPC worker " + index;
  ipc::OwnedFd socket;

  try {
    // Step 1, this side: descriptor 3 must be a socket pair's end; die with the parent.
    if (args.size() != 3)
      throw ms::UsageError("--worker takes <descriptor> <parent pid> <index>");
    socket = ipc::adoptWorkerSocket(args[0]);
    ipc::dieWithParent(static_cast<pid_t>(std::stol(args[1])));

    // Step 2, this side: the parent's Hello names the device; CUDA starts here afresh.
    ipc::Message first = ipc::receiveMessage(socket.get(), kParentSilence);
    const ipc::Hello hello = ipc::payloadAs<ipc::Hello>(first, ipc::kHello);
    ms::checkDriverInit(cuInit(0));

    CUdevice device = 0;
    ms::check(cuDeviceGet(&device, hello.device), "cuDeviceGet");
    ms::OwnedContext context;
    ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
    const std::string fatbinPath = ms::locateFatbin("vectorAdd_kernel.fatbin");
    const std::vector<char> fatbin = ms::readBinaryFile(fatbinPath);

    ms::OwnedModule module;
    ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
    CUfunction vecAdd = nullptr;
    ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"),
              "cuModuleGetFunction");
    ms::OwnedStream stream;
    ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");

    ipc::send(socket.get(), ipc::kHello, hello);

    // One job's imports at a time, in an optional: a release empties its owners, then
    // resets it. On an error, the unwinding destroys it, and its owners release what
    // they still hold, in order: mappings and handles, then pool pointers, then the pool.
    std::optional<ipc::Buffers> imports;
    ipc::Job job;
    const CUmemLocation here = {CU_MEM_LOCATION_TYPE_DEVICE, hello.device};
    const CUmemAccessDesc access = {here, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};

    //! [core-b]
    for (;;) {
      // Receive the parent's next message, and refuse one that is out of order.
      ipc::Message message = ipc::receiveMessage(socket.get(), kParentSilence);
      ipc::checkOrder(message.type, imports.has_value());
      if (message.type == ipc::kQuit)
        break;

      if (message.type == ipc::kJob) {
        // Step 5, this side: a job is checked first; its slice must lie within
        // allocationBytes. cuMemMap holds a VMM import to the real size too; on the
        // legacy and pool paths, allocationBytes is the parent's word.
        job = ipc::acceptJob(message);
        imports.emplace(stream.get());
        const std::size_t size = job.allocationBytes;
        for (std::uint32_t i = 0; i < job.allocations; ++i) {
          if (job.path != ipc::SharePath::VmmDescriptor) {
            importOther(*imports, job, message, i, hello.device);  // the other two paths
            continue;
          }
          // The descriptor (an int, passed in the void* argument) becomes this process's
          // handle of the allocation, and is closed: the handle holds the memory now.
          const auto fd = static_cast<std::uintptr_t>(message.descriptors[i].get());
          void* const shareable = reinterpret_cast<void*>(fd);
          CUmemGenericAllocationHandle* const handle = imports->handle[i].out();
          ms::check(cuMemImportFromShareableHandle(handle, shareable, kFdType),
                    "cuMemImportFromShareableHandle");
          message.descriptors[i].close();

          // Then as with any VMM allocation: an address range, a mapping, access.
          CUdeviceptr& pointer = imports->pointer[i];
          ms::check(cuMemAddressReserve(&pointer, size, 0, 0, 0), "cuMemAddressReserve");
          imports->range[i].own(pointer, size);
          ms::check(cuMemMap(pointer, size, 0, imports->handle[i].get(), 0), "cuMemMap");
          ms::check(cuMemSetAccess(pointer, size, &access, 1), "cuMemSetAccess");
        }
        const ipc::Done done{ipc::monotonicNanoseconds()};

        // Step 6, this side: wait on the GPU until the parent has written A and B, then
        // compute this worker's slice of C. (A handoff brings A alone: nothing to do.)
        if (job.allocations == 3) {
          ms::OwnedEvent inputsWritten;
          ms::check(cuIpcOpenEventHandle(inputsWritten.out(), job.inputsWritten),
                    "cuIpcOpenEventHandle");
          const CUevent written = inputsWritten.get();
          ms::check(cuStreamWaitEvent(stream.get(), written, 0), "cuStreamWaitEvent");

          CUdeviceptr a = imports->pointer[0] + job.first * sizeof(float);
          CUdeviceptr b = imports->pointer[1] + job.first * sizeof(float);
          CUdeviceptr c = imports->pointer[2] + job.first * sizeof(float);
          unsigned long long n = job.count;
          void* params[] = {&a, &b, &c, &n};
          const unsigned int grid = ms::blocksToCover(n, 4 * kBlockSize);
          ms::check(cuLaunchKernel(vecAdd, grid, 1, 1, kBlockSize, 1, 1, 0, stream.get(),
                                   params, nullptr),
                    "cuLaunchKernel");
          ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
        }
        ipc::send(socket.get(), ipc::kDone, done);  // the struct's bytes, by sendMessage
      } else if (message.type == ipc::kBench) {
        // Step 7, this side: the kernel over all of A, B and C (memMapIPC_measure.cpp).
        const CUdeviceptr(&pointers)[3] = imports->pointer;
        ipc::timeImportedKernel(socket.get(), message, vecAdd, pointers, job, stream.get());
      } else {
        // Step 8, this side: release, before the parent frees anything (the work on the
        // stream is done first). The mapping goes first; then the handle and the address
        // range, in either order (the parent frees its range first). A legacy mapping is
        // closed; pool memory is freed before its pool is destroyed.
        ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
        for (std::uint32_t i = job.allocations; i-- > 0;) {
          if (job.path == ipc::SharePath::LegacyIpc) {
            ms::check(cuIpcCloseMemHandle(imports->opened[i].release()), "cuIpcCloseMemHandle");
          } else if (job.path == ipc::SharePath::Pool) {
            ms::check(cuMemFreeAsync(imports->pooled[i].release(), stream.get()), "cuMemFreeAsync");
          } else {
            const CUdeviceptr pointer = imports->range[i].get();  // owned until freed
            ms::check(cuMemUnmap(pointer, job.allocationBytes), "cuMemUnmap");
            ms::check(cuMemRelease(imports->handle[i].release()), "cuMemRelease");
            ms::check(cuMemAddressFree(imports->range[i].release(), job.allocationBytes),
                      "cuMemAddressFree");
          }
        }
        ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
        if (job.path == ipc::SharePath::Pool)
          ms::check(cuMemPoolDestroy(imports->pool.release()), "cuMemPoolDestroy");
        imports.reset();
        ipc::sendMessage(socket.get(), ipc::kReleased, nullptr, 0);  // no payload
      }
    }
    //! [core-b]

    // Step 9, this side: told to quit. The owners release the stream, the module and the
    // context (and any import a parent left behind), in reverse order of creation.
    return 0;
  } catch (const std::exception& error) {
    const std::string text = who + ": " + error.what();
    std::cerr << text << '\n';
    // Best effort: the parent learns why, not just that the connection closed.
    if (socket) {
      try {
        ipc::sendMessage(socket.get(), ipc::kFailed, text.data(), text.size());
      } catch (const std::exception&) {
      }
    }
    return 1;
  }
}

// [worker-import-other]
/// Step 5 for the legacy and pool paths: allocation @p i of @p job into @p imports, for
/// @p device.
void importOther(ipc::Buffers& imports, const ipc::Job& job, ipc::Message& message,
                 std::uint32_t i, int device) {
  if (job.path == ipc::SharePath::LegacyIpc) {
    // The 64 bytes name the allocation; lazy peer access lets another GPU map it too.
    ms::check(cuIpcOpenMemHandle(imports.opened[i].out(), job.legacy[i],
                                 CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
              "cuIpcOpenMemHandle");
    imports.pointer[i] = imports.opened[i].get();
    return;
  }
  if (i == 0) {
    // The pool comes as one descriptor with the job, closed once it is imported.
    const auto fd = static_cast<std::uintptr_t>(message.descriptors[0].get());
    void* const shareable = reinterpret_cast<void*>(fd);
    ms::check(cuMemPoolImportFromShareableHandle(imports.pool.out(), shareable, kFdType, 0),
              "cuMemPoolImportFromShareableHandle");
    message.descriptors[0].close();

    // What the pool grants this device is the pool's to say: its own device has access,
    // another one does not until it is granted. Read-write is granted where it is missing.
    ipc::grantPoolAccess(imports.pool.get(), device);
  }

  // Each allocation of the pool comes as 64 bytes of export data, useless without the pool.
  // cuMemPoolImportPointer takes the export data through a non-const pointer, and `job`
  // is const here: a copy of the job (of which only pooled[i] is used) provides one.
  ipc::Job copy = job;
  CUdeviceptr* const imported = imports.pooled[i].out();
  ms::check(cuMemPoolImportPointer(imported, imports.pool.get(), &copy.pooled[i]),
            "cuMemPoolImportPointer");
  imports.pointer[i] = imports.pooled[i].get();
}
// [worker-import-other]

}  // namespace

int memsamples::ipc::workerMain(const std::vector<std::string>& args) {
  return runWorker(args);
}
