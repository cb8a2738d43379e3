/**
 * @file memMapIPC.cpp
 * @brief GPU memory shared between processes, three ways side by side: a VMM allocation passed as
 *        a file descriptor, a legacy IPC handle, and a stream-ordered memory pool.
 *
 * One executable plays two roles. The parent owns A, B and C; `--workers N` worker processes
 * import them, each computes its slice of C = A + B in the shared memory, and the parent checks
 * every element. The flow:
 *
 * 1. **The driver and the device**; what it lacks for the three paths is WAIVED; a peer GPU, if
 *    any, for the cross-GPU import.
 * 2. **The parent's context** and an interprocess event (**cuEventCreate** with
 *    CU_EVENT_INTERPROCESS, **cuIpcGetEventHandle**): workers wait on it (**cuIpcOpenEventHandle**,
 *    **cuStreamWaitEvent**), so A and B are written before any worker reads them, with no host
 *    round trip. Free device memory is noted before any worker exists.
 *    **The workers** then: the driver does not support a process that uses CUDA on both sides of
 *    a fork(), so they are new programs (posix_spawn of this executable with `--worker`), not
 *    forks. Each connects to a socket in a folder only this user can enter; the parent accepts
 *    only the pids it started (SO_PEERCRED, ipc_channel.hpp). A worker dies with its parent
 *    (PR_SET_PDEATHSIG).
 * 3. **VMM + descriptor**: **cuMemCreate** with `requestedHandleTypes` =
 *    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, mapped (**cuMemAddressReserve**, **cuMemMap**,
 *    **cuMemSetAccess**); **cuMemExportToShareableHandle** gives a descriptor that travels with
 *    SCM_RIGHTS. The worker: **cuMemImportFromShareableHandle**, reserve, map, **cuMemSetAccess**
 *    for its own device.
 * 4. **Legacy IPC**: **cuMemAlloc**, **cuIpcGetMemHandle** (64 bytes); the worker
 *    **cuIpcOpenMemHandle** ... **cuIpcCloseMemHandle**.
 * 5. **Pool**: **cuMemPoolCreate** with the descriptor handle type, **cuMemAllocFromPoolAsync**,
 *    **cuMemPoolExportToShareableHandle** (the pool, as a descriptor) and
 *    **cuMemPoolExportPointer** (each allocation, as 64 bytes); the worker
 *    **cuMemPoolImportFromShareableHandle**, **cuMemPoolSetAccess** (another device),
 *    **cuMemPoolImportPointer**, and frees its imports before the parent frees the memory.
 * 6. Each path: C checked element by element; with two peer-capable GPUs the last worker runs on
 *    the other GPU and imports across the link.
 * 7. **Measured** (memMapIPC_measure.cpp): export + send + import + map per allocation, and the
 *    kernel on imported memory against the same kernel on the parent's own cuMemAlloc memory.
 * 8. Teardown: workers drop their imports, the parent frees; free device memory is compared with
 *    its value before the workers started. A worker that dies fails the run, naming it; the
 *    others are killed before the parent frees memory they may still have imported.
 */
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "ipc_owners.hpp"
#include "ipc_protocol.hpp"
#include "memMapIPC_measure.hpp"
#include "memMapIPC_worker.hpp"
#include "memsamples.hpp"
#include "support/devices.hpp"
#include "worker_link.hpp"
#include "worker_processes.hpp"

namespace ms = memsamples;
namespace ipc = memsamples::ipc;

namespace {

constexpr std::uint64_t kDefaultBytes = 256ull << 20;  // per vector
constexpr int kMaxWorkers = 64;
constexpr ipc::SharePath kPaths[] = {ipc::SharePath::VmmDescriptor, ipc::SharePath::LegacyIpc,
                                     ipc::SharePath::Pool};

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  int workers = 2;
};

// [parent-create]
/// A, B and C of one path in the parent, and what makes them shareable.
struct ParentBuffers {
  ipc::OwnedMemoryPool pool;  // declared first: destroyed after the allocations from it
  std::vector<ipc::PoolAllocation> pooled;          // cuMemAllocFromPoolAsync
  std::vector<ms::OwnedDeviceMemory> memory;        // cuMemAlloc
  std::vector<ipc::OwnedAllocationHandle> handles;  // VMM: the physical allocations
  std::vector<ipc::MappedRange> ranges;             // VMM: where they are mapped
  CUdeviceptr pointer[3] = {};
  std::uint64_t allocationBytes = 0;
};

ParentBuffers createBuffers(ipc::SharePath path, int ordinal, std::uint64_t bytes,
                            CUstream stream) {
  ParentBuffers buffers;
  buffers.allocationBytes = bytes;
  if (path == ipc::SharePath::VmmDescriptor) {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // exportable as an fd
    std::size_t minimum = 0, recommended = 0;
    ms::check(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              "cuMemGetAllocationGranularity");
    ms::check(
        cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        "cuMemGetAllocationGranularity");
    const std::size_t unit = ms::allocationGranularity(bytes, minimum, recommended);
    buffers.allocationBytes = (bytes + unit - 1) / unit * unit;
    const CUmemAccessDesc access = {prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (CUdeviceptr& pointer : buffers.pointer) {
      ipc::OwnedAllocationHandle& handle = buffers.handles.emplace_back();
      ms::check(cuMemCreate(handle.out(), buffers.allocationBytes, &prop, 0), "cuMemCreate");
      ipc::MappedRange& range = buffers.ranges.emplace_back();
      ms::check(cuMemAddressReserve(&pointer, buffers.allocationBytes, unit, 0, 0),
                "cuMemAddressReserve");
      range.reserved(pointer, buffers.allocationBytes);
      ms::check(cuMemMap(pointer, buffers.allocationBytes, 0, handle.get(), 0), "cuMemMap");
      range.mapped();
      ms::check(cuMemSetAccess(pointer, buffers.allocationBytes, &access, 1), "cuMemSetAccess");
    }  // the handles stay: each export below needs one
  } else if (path == ipc::SharePath::LegacyIpc) {
    for (CUdeviceptr& pointer : buffers.pointer) {
      ms::check(cuMemAlloc(buffers.memory.emplace_back().out(), bytes), "cuMemAlloc");
      pointer = buffers.memory.back().get();
    }
  } else {
    CUmemPoolProps props = {};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // the pool is exportable
    props.location = {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
    ms::check(cuMemPoolCreate(buffers.pool.out(), &props), "cuMemPoolCreate");
    for (CUdeviceptr& pointer : buffers.pointer) {
      ms::check(cuMemAllocFromPoolAsync(buffers.pooled.emplace_back(stream).out(), bytes,
                                        buffers.pool.get(), stream),
                "cuMemAllocFromPoolAsync");
      pointer = buffers.pooled.back().get();
    }
  }
  return buffers;
}
// [parent-create]

// [parent-export]
/// Makes the first @p count buffers shareable: fills @p job, returns the descriptors to send.
std::vector<ipc::OwnedFd> exportBuffers(const ParentBuffers& buffers, ipc::SharePath path,
                                        std::uint32_t count, ipc::Job& job) {
  std::vector<ipc::OwnedFd> descriptors;
  job.path = path;
  job.allocations = count;
  job.allocationBytes = buffers.allocationBytes;
  if (path == ipc::SharePath::VmmDescriptor) {
    for (std::uint32_t i = 0; i < count; ++i) {  // a new descriptor for the same allocation
      int fd = -1;
      ms::check(cuMemExportToShareableHandle(&fd, buffers.handles[i].get(),
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                "cuMemExportToShareableHandle");
      descriptors.emplace_back(fd);
      fcntl(fd, F_SETFD, FD_CLOEXEC);  // the driver's descriptor: never into a program we start
    }
  } else if (path == ipc::SharePath::LegacyIpc) {
    for (std::uint32_t i = 0; i < count; ++i)
      ms::check(cuIpcGetMemHandle(&job.legacy[i], buffers.pointer[i]), "cuIpcGetMemHandle");
  } else {
    int fd = -1;
    ms::check(cuMemPoolExportToShareableHandle(&fd, buffers.pool.get(),
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              "cuMemPoolExportToShareableHandle");
    descriptors.emplace_back(fd);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    for (std::uint32_t i = 0; i < count; ++i)
      ms::check(cuMemPoolExportPointer(&job.pooled[i], buffers.pointer[i]),
                "cuMemPoolExportPointer");
  }
  return descriptors;
}
// [parent-export]

// [parent]
ms::Verdict runParent(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  // --size must be whole floats: a usage error before any GPU work (or waiver).
  (void)ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, UINT64_MAX, 1, sizeof(float));

  // 1. The driver, the parent's device, and a peer that a worker can import across to.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  const int ordinal = ms::deviceOrdinal(device);
  const std::string missing = ipc::missingSharingSupport(device);
  if (!missing.empty())
    throw ms::WaivedError("device " + std::to_string(ordinal) + " " + missing);
  const int peer = options.workers > 1 ? ipc::peerThatCanImport(device) : -1;
  out << "Device " << ordinal << ": " << ms::deviceName(device) << '\n';

  // 2. Context, kernel, inputs, and the interprocess event the workers wait on.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
  ms::OwnedModule module;  // the reference kernel of step 7 runs here too
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const std::uint64_t bytes = ms::fitHostMemory(  // 3 shared + 3 reference; 3 pinned on the host
      options.sizeBytes,
      ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, freeBytes, 6, sizeof(float)), 3,
      sizeof(float));
  const std::size_t count = bytes / sizeof(float);
  ipc::HostVectors host(count);
  ms::OwnedEvent inputsWritten;  // interprocess events cannot record timing
  ms::check(cuEventCreate(inputsWritten.out(), CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING),
            "cuEventCreate");
  CUipcEventHandle inputsWrittenHandle = {};
  ms::check(cuIpcGetEventHandle(&inputsWrittenHandle, inputsWritten.get()), "cuIpcGetEventHandle");

  std::size_t freeBefore = 0;  // compared at the end, when no worker and no buffer is left
  ms::check(cuMemGetInfo(&freeBefore, &totalBytes), "cuMemGetInfo");

  // 3. The workers: new programs (posix_spawn + exec: no CUDA state of this process goes along,
  // which a fork() would copy), each accepted only if the kernel says it is one we started.
  const ipc::PrivateDirectory folder("memMapIPC");
  const std::string socketPath = folder.path() + "/socket";
  const ipc::OwnedFd listener = ipc::listenOn(socketPath, options.workers);
  ipc::WorkerGroup group;  // kills and reaps whatever is still running on any error
  std::vector<ipc::Worker> workers(static_cast<std::size_t>(options.workers));
  for (std::size_t i = 0; i < workers.size(); ++i) {
    workers[i].device = peer >= 0 && i + 1 == workers.size() ? peer : ordinal;
    workers[i].pid = group.start("/proc/self/exe",
                                 {"memMapIPC", "--worker", socketPath, std::to_string(getpid()),
                                  std::to_string(i), std::to_string(workers[i].device)});
  }
  try {
    for (std::size_t accepted = 0; accepted < workers.size(); ++accepted) {
      ipc::Accepted connection = ipc::acceptWithin(listener.get(), ipc::kReplyTimeout);
      const std::string refused = ipc::whyPeerIsRefused(connection.peer, getuid(), group.running());
      if (!refused.empty())
        throw ipc::IpcError("refused a connection to " + socketPath + ": " + refused);
      const auto hello = ipc::payloadAs<ipc::Hello>(
          ipc::receiveMessage(connection.socket.get(), ipc::kReplyTimeout), ipc::kHello);
      if (hello.index >= workers.size() || workers[hello.index].pid != connection.peer.pid ||
          workers[hello.index].socket)
        throw ipc::IpcError("pid " + std::to_string(connection.peer.pid) + " claims to be worker " +
                            std::to_string(hello.index));
      workers[hello.index].socket = std::move(connection.socket);
    }
  } catch (const ipc::IpcError& error) {  // say what became of the workers, then fail
    throw std::runtime_error(std::string(error.what()) + "; " + ipc::endWorkers(workers, group));
  }
  unlink(socketPath.c_str());  // everyone expected is here: nobody else may connect
  out << ipc::describeWorkers(options.workers, ordinal, peer) << '\n';

  // 4-6. Each path: the parent creates and fills A and B, records the event, and sends every
  // worker its job; the workers import, wait for the event, and write their slices of C.
  std::vector<ipc::PathResult> results;
  try {
    for (const ipc::SharePath path : kPaths) {
      ipc::PathResult& result = results.emplace_back();
      result.path = path;
      const ParentBuffers buffers = createBuffers(path, ordinal, bytes, stream.get());
      const ipc::WorkersEndFirst endFirst(group);  // on an error: no import outlives the memory
      host.upload(buffers.pointer, stream.get());  // A and B in, C poisoned
      ms::check(cuEventRecord(inputsWritten.get(), stream.get()), "cuEventRecord");
      for (std::size_t w = 0; w < workers.size(); ++w) {
        ipc::Job job;
        const std::vector<ipc::OwnedFd> descriptors = exportBuffers(buffers, path, 3, job);
        job.elements = count;
        job.first = count * w / workers.size();
        job.count = count * (w + 1) / workers.size() - job.first;
        job.ownerDevice = ordinal;
        job.inputsWritten = inputsWrittenHandle;
        ipc::sendTo(workers, group, w, ipc::kJob, job, ipc::rawDescriptors(descriptors), "a job");
      }  // our descriptors close here; each worker holds its own for the same allocation
      for (std::size_t w = 0; w < workers.size(); ++w)
        ipc::expectMessage(ipc::receiveFrom(workers, group, w, "its slice"), ipc::kDone);
      result.check = host.download(buffers.pointer[2], stream.get());

      // 7. Measured: the kernel on imported memory (worker 0), then handoffs of one allocation.
      const ipc::Bench bench{options.common.warmup, options.common.iterations};
      ipc::sendTo(workers, group, 0, ipc::kBench, bench, {}, "the benchmark");
      result.workerKernelMs =
          ipc::payloadAs<ipc::BenchDone>(ipc::receiveFrom(workers, group, 0, "the benchmark"),
                                         ipc::kBenchDone)
              .medianMs;
      // Imports go before the memory does: the workers unmap, close and free theirs (a pool
      // pointer must be freed by every importer first), then answer.
      for (std::size_t w = 0; w < workers.size(); ++w)
        ipc::sendTo(workers, group, w, ipc::kRelease, nullptr, 0, {}, "the release");
      for (std::size_t w = 0; w < workers.size(); ++w)
        ipc::expectMessage(ipc::receiveFrom(workers, group, w, "its release"), ipc::kReleased);
      for (int i = 0; i < options.common.iterations; ++i) {
        ipc::Job job;
        const std::int64_t start = ipc::monotonicNanoseconds();
        const std::vector<ipc::OwnedFd> descriptors = exportBuffers(buffers, path, 1, job);
        job.ownerDevice = ordinal;
        ipc::sendTo(workers, group, 0, ipc::kHandoff, job, ipc::rawDescriptors(descriptors),
                    "a handoff");
        const auto done = ipc::payloadAs<ipc::HandoffDone>(
            ipc::receiveFrom(workers, group, 0, "a handoff"), ipc::kHandoffDone);
        result.handoffMs.push_back(static_cast<double>(done.mappedAtNs - start) / 1e6);
      }
    }  // the parent frees: cuMemUnmap + cuMemAddressFree + cuMemRelease, cuMemFree, pool frees
       // and cuMemPoolDestroy (the owners in ParentBuffers)
  } catch (const std::exception&) {
    // A worker failed: with every worker ended and the buffers freed, the memory must be back.
    group.killAll();
    std::size_t freeNow = 0;
    ms::check(cuMemGetInfo(&freeNow, &totalBytes), "cuMemGetInfo");
    out << ipc::describeFreeMemory(freeBefore, freeNow) << '\n';
    throw;
  }

  // 8. Workers quit; every import and allocation is gone, so free memory must be back.
  for (std::size_t w = 0; w < workers.size(); ++w)
    ipc::sendTo(workers, group, w, ipc::kQuit, nullptr, 0, {}, "quit");
  std::vector<std::string> endings;
  for (const ipc::Worker& worker : workers)
    endings.push_back(group.waitFor(worker.pid, std::chrono::seconds(10)));
  const double referenceMs = ipc::timeOwnMemory(vecAdd, host, stream.get(), options.common);
  std::size_t freeAfter = 0;
  ms::check(cuMemGetInfo(&freeAfter, &totalBytes), "cuMemGetInfo");
  return ipc::reportRun(results, referenceMs, bytes, endings, freeBefore, freeAfter, out,
                        report.json());
}
// [parent]

}  // namespace

/// The parent parses the options and runs under runSample(); a worker has a role of its own.
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--worker")
    return ipc::workerMain(std::vector<std::string>(argv + 2, argv + argc));
  Options options;
  ms::CommandLine commandLine(
      "memMapIPC",
      "Shares GPU memory with worker processes three ways (a VMM allocation as a file "
      "descriptor, a legacy IPC handle, a memory pool); the workers compute C = A + B in it.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size", "bytes per vector, a multiple of 4 (default 256M)",
                      options.sizeBytes);
  commandLine.addInteger("workers", "worker processes, 1 to 64 (default 2)", options.workers, 1,
                         kMaxWorkers);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runParent(options, report); });
}
