/**
 * @file memMapIPC_worker.cpp
 * @brief The worker side of the memMapIPC sample: a process of its own that imports
 *        the parent's memory three ways, computes its slice of C = A + B in it, and drops
 *        the imports before the parent frees the memory. memMapIPC.cpp numbers the steps.
 *
 * The parent starts it as `memMapIPC --worker 3 <parent pid> <index>`. runWorker() takes its
 * part in the parent's steps (the `// Step N, this side` comments; the course page lists every
 * call of every step): it checks its socket (1), creates its own context when the parent says
 * Hello (2: a new program, not a fork), then serves one job at a time (4 to 6), each whole in
 * its way's function: serveVmm (the core-b region), serveLegacy, servePool, with the use the
 * three share (Worker::use); told to quit (7), it exits with 0.
 *
 * Any error is printed on stderr and sent to the parent (kFailed); the exit code is 1.
 */
#include "worker_processes.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "ipc_owners.hpp"
#include "memMapIPC_measure.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace ipc = memsamples::ipc;

namespace {

constexpr int kBlockSize = 256;

/// How long a worker waits for the parent's next message. A parent that died has killed
/// this process already (dieWithParent), so this only catches one that hangs.
constexpr std::chrono::minutes kParentSilence{10};

/// What the three ways share in a worker: its socket, device, stream and kernel, and the use
/// of one job's imports.
struct Worker {
  int socket = -1;            ///< Its end of the socket pair.
  int device = 0;             ///< The device its context is on.
  CUstream stream = nullptr;  ///< Its stream.
  CUfunction vecAdd = nullptr;
  bool toldToQuit = false;  ///< The parent said quit while a job's imports were held.

  /// Uses A, B and C of @p job at @p pointers (defined below the three ways). @return true once
  /// the parent says release, with the stream's work done; false when it says quit instead.
  bool use(const ipc::Job& job, const CUdeviceptr (&pointers)[3]);
};

//! [core-b]
// The VMM way, the worker's side: each descriptor becomes a handle, mapped in this process.
void serveVmm(Worker& worker, const ipc::Job& job, std::vector<ipc::OwnedFd>& descriptors) {
  // While the parent waits: runWorker received the job (checked) and a descriptor per allocation.
  const std::size_t size = job.allocationBytes;
  const CUmemLocation here = {CU_MEM_LOCATION_TYPE_DEVICE, worker.device};
  const CUmemAccessDesc access = {here, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  ipc::Buffers imports(worker.stream, size);  // owners, for an error path only

  for (std::uint32_t i = 0; i < job.allocations; ++i) {
    // Import: the descriptor (an int, cast to void*) becomes a handle that holds the memory.
    ms::check(cuMemImportFromShareableHandle(imports.handle[i].out(),
                                             (void*)(std::uintptr_t)descriptors[i].get(),
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
              "cuMemImportFromShareableHandle");
    descriptors[i].close();

    // Map: a range of this process, aligned as the parent's (the job's granularity).
    ms::check(cuMemAddressReserve(imports.range[i].out(), size, job.granularity, 0, 0),
              "cuMemAddressReserve");
    imports.pointer[i] = imports.range[i].get();  // a copy for the use all three ways share
    ms::check(cuMemMap(imports.pointer[i], size, 0, imports.handle[i].get(), 0), "cuMemMap");
    ms::check(cuMemRelease(imports.handle[i].get()), "cuMemRelease");  // the mapping keeps it
    imports.handle[i].release();  // bookkeeping, no driver call: the owner forgets the handle
    ms::check(cuMemSetAccess(imports.pointer[i], size, &access, 1), "cuMemSetAccess");
  }

  // Use (Worker::use, as on every way): cuStreamWaitEvent on the parent's interprocess event,
  // cuLaunchKernel of VecAdd on the imports over this worker's slice, cuStreamSynchronize, Done.
  if (!worker.use(job, imports.pointer))
    return;  // the parent said Quit instead: the owners release the imports

  // The parent said Release: unmap (this process's hold on the memory ends), free the range.
  for (std::uint32_t i = job.allocations; i-- > 0;) {
    ms::check(cuMemUnmap(imports.range[i].get(), size), "cuMemUnmap");
    ms::check(cuMemAddressFree(imports.range[i].get(), size), "cuMemAddressFree");
    imports.range[i].release();  // the owner lets go
  }
  ipc::sendMessage(worker.socket, ipc::kReleased, nullptr, 0);  // the parent may free now
}
//! [core-b]

// The other two ways, this side, take the same turns as serveVmm; they differ in what arrives
// and how it becomes a pointer of this process, and in how it is let go.

//! [serve-legacy]
// The legacy way, this side: each 64-byte handle opens as a pointer of this process.
void serveLegacy(Worker& worker, const ipc::Job& job) {
  // Receive: `job` came checked (acceptJob), the handles inside it.
  ipc::Buffers imports(worker.stream);

  // Open: the handle names the allocation; lazy peer access lets another GPU map it too.
  for (std::uint32_t i = 0; i < job.allocations; ++i) {
    ms::check(cuIpcOpenMemHandle(imports.opened[i].out(), job.legacy[i],
                                 CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
              "cuIpcOpenMemHandle");
    imports.pointer[i] = imports.opened[i].get();
  }

  // Use: this worker's slice of C, then what the parent asks, until it says release.
  if (!worker.use(job, imports.pointer))
    return;  // told to quit instead: the owners release the imports

  // Release, before the parent frees anything: each opened mapping is closed.
  for (std::uint32_t i = job.allocations; i-- > 0;)
    ms::check(cuIpcCloseMemHandle(imports.opened[i].release()), "cuIpcCloseMemHandle");
  ipc::sendMessage(worker.socket, ipc::kReleased, nullptr, 0);
}
//! [serve-legacy]

//! [serve-pool]
// The pool way, this side: the pool comes as a descriptor and becomes a pool of this
// process; each allocation comes as export data and becomes a pointer into it. (`job` is a
// copy: cuMemPoolImportPointer takes the export data through a non-const pointer.)
void servePool(Worker& worker, ipc::Job job, std::vector<ipc::OwnedFd>& descriptors) {
  // Receive: `job` came checked (acceptJob), with the pool's descriptor.
  ipc::Buffers imports(worker.stream);

  // Import the pool; the descriptor is closed: the imported pool holds it now. (The call takes
  // the descriptor, an int, in its void* argument: a plain cast.)
  ms::check(cuMemPoolImportFromShareableHandle(imports.pool.out(),
                                               (void*)(std::uintptr_t)descriptors[0].get(),
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            "cuMemPoolImportFromShareableHandle");
  descriptors[0].close();

  // Access: the pool's own device has it, another one must be granted it (ipc_owners.hpp).
  ipc::grantPoolAccess(imports.pool.get(), worker.device);

  // Open each allocation from its 64 bytes of export data, which name it within the pool.
  for (std::uint32_t i = 0; i < job.allocations; ++i) {
    CUdeviceptr* const imported = imports.pooled[i].out();
    ms::check(cuMemPoolImportPointer(imported, imports.pool.get(), &job.pooled[i]),
              "cuMemPoolImportPointer");
    imports.pointer[i] = *imported;
  }

  // Use: this worker's slice of C, then what the parent asks, until it says release.
  if (!worker.use(job, imports.pointer))
    return;  // told to quit instead: the owners release the imports

  // Release, before the parent frees anything: every allocation (an importer must free its
  // pointers before the owner frees the memory), then the imported pool.
  for (std::uint32_t i = job.allocations; i-- > 0;)
    ms::check(cuMemFreeAsync(imports.pooled[i].release(), worker.stream), "cuMemFreeAsync");
  ms::check(cuStreamSynchronize(worker.stream), "cuStreamSynchronize");
  ms::check(cuMemPoolDestroy(imports.pool.release()), "cuMemPoolDestroy");
  ipc::sendMessage(worker.socket, ipc::kReleased, nullptr, 0);
}
//! [serve-pool]

//! [worker-use]
// The use, the same for the three ways.
bool Worker::use(const ipc::Job& job, const CUdeviceptr (&pointers)[3]) {
  // The imports are usable now: the moment a handoff is timed to.
  const ipc::Done done{ipc::monotonicNanoseconds()};

  // Wait on the GPU until the parent has written A and B, then compute this worker's slice
  // of C. (A handoff brings A alone: nothing to compute.)
  if (job.allocations == 3) {
    ms::OwnedEvent inputsWritten;
    ms::check(cuIpcOpenEventHandle(inputsWritten.out(), job.inputsWritten),
              "cuIpcOpenEventHandle");
    ms::check(cuStreamWaitEvent(stream, inputsWritten.get(), 0), "cuStreamWaitEvent");

    CUdeviceptr a = pointers[0] + job.first * sizeof(float);
    CUdeviceptr b = pointers[1] + job.first * sizeof(float);
    CUdeviceptr c = pointers[2] + job.first * sizeof(float);
    unsigned long long n = job.count;
    void* params[] = {&a, &b, &c, &n};
    const unsigned int grid = ms::blocksToCover(n, 4 * kBlockSize);
    ms::check(cuLaunchKernel(vecAdd, grid, 1, 1, kBlockSize, 1, 1, 0, stream, params, nullptr),
              "cuLaunchKernel");
    ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
  ipc::send(socket, ipc::kDone, done);

  // Then the parent's word: a benchmark (worker 0, memMapIPC_measure.cpp), and the release.
  for (;;) {
    const ipc::Message message = ipc::receiveMessage(socket, kParentSilence);
    ipc::checkOrder(message.type, true);  // imports are held: no new job now
    if (message.type == ipc::kRelease) {
      // Nothing may still run on the imports when they are released.
      ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
      return true;
    }
    if (message.type == ipc::kQuit) {
      toldToQuit = true;
      return false;
    }
    ipc::timeImportedKernel(socket, message, vecAdd, pointers, job, stream);
  }
}
//! [worker-use]

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

    // Steps 4 to 6, this side: one job at a time, each served whole by its way's function
    // (serveVmm, serveLegacy or servePool), which returns once its imports are released,
    // until the parent says quit.
    Worker worker{socket.get(), hello.device, stream.get(), vecAdd};
    while (!worker.toldToQuit) {
      // recvmsg: a job and the descriptors that came with it as SCM_RIGHTS, new descriptors
      // of this process for the parent's exports (ipc_channel.cpp).
      ipc::Message message = ipc::receiveMessage(socket.get(), kParentSilence);
      ipc::checkOrder(message.type, false);  // nothing is held between jobs
      if (message.type == ipc::kQuit)
        break;

      // A job is checked before anything is imported: its slice must lie within
      // allocationBytes. cuMemMap holds a VMM import to the real size too; on the legacy
      // and pool ways, allocationBytes is the parent's word.
      const ipc::Job job = ipc::acceptJob(message);
      if (job.path == ipc::SharePath::VmmDescriptor)
        serveVmm(worker, job, message.descriptors);
      else if (job.path == ipc::SharePath::LegacyIpc)
        serveLegacy(worker, job);
      else
        servePool(worker, job, message.descriptors);
    }

    // Step 7, this side: told to quit. The owners release the stream, the module and the
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

}  // namespace

int memsamples::ipc::workerMain(const std::vector<std::string>& args) {
  return runWorker(args);
}
