/**
 * @file memMapIPC.cpp
 * @brief GPU memory shared between processes, three ways side by side: a VMM allocation
 *        passed as a file descriptor, a legacy IPC handle, and a stream-ordered pool.
 *
 * One executable plays two roles. This file is the parent: it owns A, B and C, and
 * `--workers N` worker processes (memMapIPC_worker.cpp) import them; each worker
 * computes its slice of C = A + B in the shared memory, and the parent checks every
 * element. Each way of sharing is one function, read top to bottom: create A, B and C ->
 * export -> send each worker its job -> wait for the workers -> check C -> the workers
 * release -> release. The core region is the VMM way, shareVmm; the legacy and pool ways
 * follow it, one function each (shareLegacy, sharePool), taking the same turns. Each way's
 * timings are a function called after it (timeVmm, timeLegacy, timePool), on allocations of
 * their own. The worker's side of each way is a function of memMapIPC_worker.cpp (its core-b
 * region is the VMM way, serveVmm): receive -> import -> map or open -> use -> release. The
 * helpers the three ways share (sizes, host copies, writing the inputs, slices, checking C,
 * the proof of each release, timings and the report) are one call each of an ipc::Parent, in
 * memMapIPC_measure.cpp.
 *
 * runParent() takes these steps:
 * 1. Setup: start the workers before cuInit, so that they inherit no driver descriptor: one
 *    **socketpair** (AF_UNIX, SOCK_SEQPACKET) per worker, and **posix_spawn** of this
 *    executable with `--worker`, its end of the pair as descriptor 3 and every other
 *    descriptor closed. No socket has a name: holding the descriptor is the only way to a
 *    worker. Each worker dies with the parent (PR_SET_PDEATHSIG).
 * 2. Setup: load the driver (**cuInit**); then, in one call (probeSharing), pick the device and
 *    waive what it lacks for the three ways; with two GPUs the last worker runs on the other
 *    one, if that one can access this one's memory and its compute mode admits the worker
 *    (else the line says why not). Each worker answers once its context exists.
 * 3. Setup: the parent's context and stream, and the interprocess event that the workers
 *    wait on (**cuEventCreate** with CU_EVENT_INTERPROCESS, **cuIpcGetEventHandle**); size
 *    the vectors and fill the host copies (ipc::Parent).
 * 4. The VMM way (shareVmm): **cuMemGetAllocationGranularity**, **cuMemCreate** with the
 *    POSIX-descriptor handle type, **cuMemAddressReserve** aligned to the granularity,
 *    **cuMemMap**, **cuMemSetAccess**; **cuMemExportToShareableHandle**, a descriptor per
 *    allocation sent with sendmsg as SCM_RIGHTS; **cuMemRelease** of each handle once
 *    exported; check, the workers release; **cuMemUnmap**, **cuMemAddressFree**. Then its
 *    timings (timeVmm).
 * 5. The legacy way (shareLegacy): **cuMemAlloc**; **cuIpcGetMemHandle**, 64 bytes per
 *    allocation inside the job; check; **cuMemFree**. Then its timings (timeLegacy).
 * 6. The pool way (sharePool): **cuMemPoolCreate** with the descriptor handle type,
 *    **cuMemAllocFromPoolAsync**; **cuMemPoolExportToShareableHandle** (the pool, a descriptor)
 *    and **cuMemPoolExportPointer** (64 bytes per allocation); check; **cuMemFreeAsync**, the
 *    pool's bytes in use (**cuMemPoolGetAttribute**), and **cuMemPoolDestroy**. Then its
 *    timings (timePool).
 * 7. The workers quit and are reaped; the reference kernel runs on the parent's own
 *    memory. The verdict: C exact, every release proved (the driver's answers about this
 *    process's own addresses), every worker exited with 0; free device memory is
 *    information only. The owners release the host copies, the event, the stream and the
 *    context.
 */
#include <exception>
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

/// The command line: the common options, `--size`, `--workers` and `--cross-gpu`.
struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  int workers = 2;
  bool crossGpu = false;
};

/// What each way of sharing is given beside its ipc::Parent: the parent's device and stream,
/// and its workers.
struct Run {
  int device;             ///< The parent's device ordinal: where A, B and C live.
  CUstream stream;        ///< The parent's stream.
  ipc::Workers& workers;  ///< The worker processes, one socket each.
};

/// How the VMM way's allocations are made: shareVmm returns it, and timeVmm makes its own alike.
struct VmmLayout {
  CUmemAllocationProp prop;  ///< Pinned, on the parent's device, exportable as a descriptor.
  std::size_t granularity;   ///< The alignment of every range, and the unit of every size.
  std::size_t size;          ///< Bytes per allocation: the vector's, in whole granules.
};

// The `parent.` calls are the helpers the three ways share (ipc::Parent, memMapIPC_measure.hpp
// says each in full); at each call in shareVmm, a comment says what it does.

//! [core]
// The VMM way, the parent's side: A, B and C, sent to each worker as new file descriptors.
VmmLayout shareVmm(ipc::Parent& parent, const Run& run) {
  // Pinned memory on this device, exportable as a POSIX file descriptor (asked at creation).
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, run.device};
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

  // Granularity: sizes and ranges are whole granules, the recommended one where an allocation
  // fills it, else the minimum (a small allocation is not padded to a large granule).
  std::size_t minimum = 0;
  std::size_t recommended = 0;
  ms::check(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity");
  ms::check(
      cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
      "cuMemGetAllocationGranularity");
  const std::size_t granularity = parent.bytes >= recommended ? recommended : minimum;
  const std::size_t size = (parent.bytes + granularity - 1) / granularity * granularity;

  // Create A, B and C, each mapped read-write here. `shared` owns each new handle and range
  // (out()) for an error path only.
  const CUmemAccessDesc access = {prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  ipc::Buffers shared(run.stream, size, &run.workers);
  for (int i = 0; i < 3; ++i) {
    ms::check(cuMemCreate(shared.handle[i].out(), size, &prop, 0), "cuMemCreate");
    ms::check(cuMemAddressReserve(shared.range[i].out(), size, granularity, 0, 0),
              "cuMemAddressReserve");
    shared.pointer[i] = shared.range[i].get();  // a copy for the helpers all three ways share
    ms::check(cuMemMap(shared.pointer[i], size, 0, shared.handle[i].get(), 0), "cuMemMap");
    ms::check(cuMemSetAccess(shared.pointer[i], size, &access, 1), "cuMemSetAccess");
  }
  parent.writeInputs(shared.pointer);  // cuMemcpyHtoDAsync A, B; C = NaN; cuEventRecord

  // Export and send: for each worker, a new descriptor per allocation, sent as SCM_RIGHTS.
  for (std::size_t w = 0; w < run.workers.size(); ++w) {
    ipc::Job job = parent.job(ipc::SharePath::VmmDescriptor, 3, size);  // + the event's handle
    job.granularity = granularity;  // the worker aligns its own range the same way
    std::vector<ipc::OwnedFd> descriptors;  // each closed here once sent: the worker has its own
    for (int i = 0; i < 3; ++i) {
      int fd = -1;
      ms::check(cuMemExportToShareableHandle(&fd, shared.handle[i].get(),
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                "cuMemExportToShareableHandle");
      descriptors.emplace_back(fd);
    }
    parent.sendWithScmRights(w, job, descriptors);  // one sendmsg; the job gets w's slice of C
  }

  // Every export is made: the handles may go (the mappings keep the memory alive).
  for (int i = 2; i >= 0; --i) {
    ms::check(cuMemRelease(shared.handle[i].get()), "cuMemRelease");
    shared.handle[i].release();  // bookkeeping, no driver call: the owner forgets the handle
  }

  // Meanwhile each worker runs serveVmm (memMapIPC_worker.cpp) and answers Done. Wait for every
  // Done, then copy C back (cuMemcpyDtoHAsync) and check every element.
  auto& result = parent.waitForWorkersAndCheck(ipc::SharePath::VmmDescriptor, shared.pointer[2]);
  parent.releaseWorkerImports();  // sends Release: each worker unmaps, frees, answers Released

  // Importers first, then the owner: unmap (the last mapping: the memory goes), free the range.
  for (int i = 2; i >= 0; --i) {
    ms::check(cuMemUnmap(shared.range[i].get(), size), "cuMemUnmap");
    ms::check(cuMemAddressFree(shared.range[i].get(), size), "cuMemAddressFree");
    shared.range[i].release();  // the owner lets go
  }
  parent.confirmRelease(result);  // cuPointerGetAttributes: none of A, B, C is mapped here now
  return {prop, granularity, size};  // timeVmm allocates alike, after this function
}
//! [core]

// The other two ways take the same turns as shareVmm; they differ in what they create, what
// travels to a worker, and how they free.

//! [share-legacy]
// The legacy way: any cuMemAlloc memory, named by a 64-byte handle. The handles travel inside
// the job, with no descriptor: whoever learns the bytes may open the memory.
void shareLegacy(ipc::Parent& parent, const Run& run) {
  // Create A, B and C, then write A and B.
  ipc::Buffers shared(run.stream, &run.workers);  // owners: on an error, workers end first
  for (int i = 0; i < 3; ++i) {
    ms::check(cuMemAlloc(shared.memory[i].out(), parent.bytes), "cuMemAlloc");
    shared.pointer[i] = shared.memory[i].get();
  }
  parent.writeInputs(shared.pointer);

  // Export and send: for each worker, a handle per allocation, written into its job.
  for (std::size_t w = 0; w < run.workers.size(); ++w) {
    ipc::Job job = parent.job(ipc::SharePath::LegacyIpc, 3, parent.bytes);
    for (int i = 0; i < 3; ++i)
      ms::check(cuIpcGetMemHandle(&job.legacy[i], shared.pointer[i]), "cuIpcGetMemHandle");
    parent.sendJob(w, job);  // sendmsg, no descriptor: the handles are bytes of the job
  }

  // Each worker opens the handles and computes its slice of C (serveLegacy). Wait; check C.
  auto& result = parent.waitForWorkersAndCheck(ipc::SharePath::LegacyIpc, shared.pointer[2]);

  // Each worker closes its handles (serveLegacy's last step): importers go first.
  parent.releaseWorkerImports();

  // Release, in reverse order of creation; then the proof.
  for (int i = 2; i >= 0; --i)
    ms::check(cuMemFree(shared.memory[i].release()), "cuMemFree");
  parent.confirmRelease(result);
}
//! [share-legacy]

//! [share-pool]
// The pool way: a pool created exportable as a POSIX file descriptor travels with each job
// (SCM_RIGHTS); each allocation from it as 64 bytes of export data, useless without the pool.
void sharePool(ipc::Parent& parent, const Run& run) {
  // Create the pool and A, B and C from it (in stream order), then write A and B.
  CUmemPoolProps poolProps = {};
  poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // asked for at creation
  poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, run.device};

  ipc::Buffers shared(run.stream, &run.workers);  // owners: on an error, workers end first
  ms::check(cuMemPoolCreate(shared.pool.out(), &poolProps), "cuMemPoolCreate");
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr* const made = shared.pooled[i].out();
    ms::check(cuMemAllocFromPoolAsync(made, parent.bytes, shared.pool.get(), run.stream),
              "cuMemAllocFromPoolAsync");
    shared.pointer[i] = *made;
  }
  parent.writeInputs(shared.pointer);  // waits for the stream first: the allocations exist then

  // Export and send: for each worker, the pool as a descriptor, and each allocation as export
  // data in its job; both in one sendmsg (SCM_RIGHTS).
  for (std::size_t w = 0; w < run.workers.size(); ++w) {
    ipc::Job job = parent.job(ipc::SharePath::Pool, 3, parent.bytes);
    int fd = -1;
    ms::check(cuMemPoolExportToShareableHandle(&fd, shared.pool.get(),
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              "cuMemPoolExportToShareableHandle");
    std::vector<ipc::OwnedFd> descriptors;
    descriptors.emplace_back(fd);  // owned at once: closed if a later call fails
    for (int i = 0; i < 3; ++i) {
      ms::check(cuMemPoolExportPointer(&job.pooled[i], shared.pointer[i]),
                "cuMemPoolExportPointer");
    }
    parent.sendWithScmRights(w, job, descriptors);
  }

  // Each worker imports the pool and its pointers and computes its slice of C (servePool).
  // Wait for all; check C.
  auto& result = parent.waitForWorkersAndCheck(ipc::SharePath::Pool, shared.pointer[2]);

  // Each worker frees its pointers and its pool (servePool's last step): every importer must
  // free a pool allocation before its owner does.
  parent.releaseWorkerImports();

  // Release, in reverse order of creation. Once the frees have completed, the pool must count
  // no bytes in use; then the proof.
  for (int i = 2; i >= 0; --i)
    ms::check(cuMemFreeAsync(shared.pooled[i].release(), run.stream), "cuMemFreeAsync");
  ms::check(cuStreamSynchronize(run.stream), "cuStreamSynchronize");

  cuuint64_t& inUse = result.poolBytesInUse.emplace();
  const CUmemPool_attribute used = CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
  ms::check(cuMemPoolGetAttribute(shared.pool.get(), used, &inUse), "cuMemPoolGetAttribute");
  ms::check(cuMemPoolDestroy(shared.pool.release()), "cuMemPoolDestroy");
  parent.confirmRelease(result);
}
//! [share-pool]

// The timings of each way, after it: three new allocations of the same kind, which the parent
// creates and exports but does not write (their contents do not matter to a timing), go to
// worker 0 alone, and
// - timeKernelOnImports(): worker 0 maps them, times the kernel over them (kBench, `--warmup`
//   and `--iterations` launches, the median) and releases them;
// - timeHandoffs(): A alone is handed to worker 0 `--iterations` times, each handoff timed from
//   before the export to the worker's mapping, and released again.
// `exportAndSend(w, n)` exports the first n allocations to worker w: the way's own export.

/// The VMM way's timings: allocations made as shareVmm made its own (@p vmm), each exported
/// anew as a descriptor.
void timeVmm(ipc::Parent& parent, const Run& run, const VmmLayout& vmm) {
  ipc::Buffers timed(run.stream, &run.workers);  // owners: on an error, workers end first
  for (int i = 0; i < 3; ++i)  // only exported: this process maps nothing
    ms::check(cuMemCreate(timed.handle[i].out(), vmm.size, &vmm.prop, 0), "cuMemCreate");

  const auto exportAndSend = [&](std::size_t w, std::uint32_t allocations) {
    ipc::Job job = parent.job(ipc::SharePath::VmmDescriptor, allocations, vmm.size);
    job.granularity = vmm.granularity;
    std::vector<ipc::OwnedFd> descriptors;
    for (std::uint32_t i = 0; i < allocations; ++i) {
      int fd = -1;
      const CUmemAllocationHandleType type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      ms::check(cuMemExportToShareableHandle(&fd, timed.handle[i].get(), type, 0),
                "cuMemExportToShareableHandle");
      descriptors.emplace_back(fd);
    }
    parent.sendWithScmRights(w, job, descriptors);
  };
  parent.timeKernelOnImports(ipc::SharePath::VmmDescriptor, exportAndSend);
  parent.timeHandoffs(ipc::SharePath::VmmDescriptor, exportAndSend);

  for (int i = 2; i >= 0; --i) {
    ms::check(cuMemRelease(timed.handle[i].get()), "cuMemRelease");
    timed.handle[i].release();
  }
}

/// The legacy way's timings: cuMemAlloc memory, a 64-byte handle per allocation in the job.
void timeLegacy(ipc::Parent& parent, const Run& run) {
  ipc::Buffers timed(run.stream, &run.workers);
  for (int i = 0; i < 3; ++i)
    ms::check(cuMemAlloc(timed.memory[i].out(), parent.bytes), "cuMemAlloc");

  const auto exportAndSend = [&](std::size_t w, std::uint32_t allocations) {
    ipc::Job job = parent.job(ipc::SharePath::LegacyIpc, allocations, parent.bytes);
    for (std::uint32_t i = 0; i < allocations; ++i) {
      const CUdeviceptr pointer = timed.memory[i].get();
      ms::check(cuIpcGetMemHandle(&job.legacy[i], pointer), "cuIpcGetMemHandle");
    }
    parent.sendJob(w, job);
  };
  parent.timeKernelOnImports(ipc::SharePath::LegacyIpc, exportAndSend);
  parent.timeHandoffs(ipc::SharePath::LegacyIpc, exportAndSend);

  for (int i = 2; i >= 0; --i)
    ms::check(cuMemFree(timed.memory[i].release()), "cuMemFree");
}

/// The pool way's timings: a new pool, exported anew with every job (a handoff imports the pool
/// too), and each allocation as export data.
void timePool(ipc::Parent& parent, const Run& run) {
  CUmemPoolProps poolProps = {};
  poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, run.device};

  ipc::Buffers timed(run.stream, &run.workers);
  ms::check(cuMemPoolCreate(timed.pool.out(), &poolProps), "cuMemPoolCreate");
  for (int i = 0; i < 3; ++i) {
    ms::check(cuMemAllocFromPoolAsync(timed.pooled[i].out(), parent.bytes, timed.pool.get(),
                                      run.stream),
              "cuMemAllocFromPoolAsync");
  }
  ms::check(cuStreamSynchronize(run.stream), "cuStreamSynchronize");  // they exist now

  const auto exportAndSend = [&](std::size_t w, std::uint32_t allocations) {
    ipc::Job job = parent.job(ipc::SharePath::Pool, allocations, parent.bytes);
    int fd = -1;
    const CUmemAllocationHandleType type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    ms::check(cuMemPoolExportToShareableHandle(&fd, timed.pool.get(), type, 0),
              "cuMemPoolExportToShareableHandle");
    std::vector<ipc::OwnedFd> descriptors;
    descriptors.emplace_back(fd);
    for (std::uint32_t i = 0; i < allocations; ++i) {
      const CUdeviceptr pointer = timed.pooled[i].get();
      ms::check(cuMemPoolExportPointer(&job.pooled[i], pointer), "cuMemPoolExportPointer");
    }
    parent.sendWithScmRights(w, job, descriptors);
  };
  parent.timeKernelOnImports(ipc::SharePath::Pool, exportAndSend);
  parent.timeHandoffs(ipc::SharePath::Pool, exportAndSend);

  // Worker 0 has freed its imports: the owner may free them, then destroy the pool.
  for (int i = 2; i >= 0; --i)
    ms::check(cuMemFreeAsync(timed.pooled[i].release(), run.stream), "cuMemFreeAsync");
  ms::check(cuStreamSynchronize(run.stream), "cuStreamSynchronize");
  ms::check(cuMemPoolDestroy(timed.pool.release()), "cuMemPoolDestroy");
}

/// The lesson's parent side: every step; the ways of sharing are the functions above.
ms::Verdict runParent(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  if (options.crossGpu && options.workers < 2)
    throw ms::UsageError("--cross-gpu needs 2 or more workers: the last one goes to the other GPU");

  // 1. Setup: start the workers, each with one end of a socket pair of its own as descriptor
  // 3, and nothing else (worker_processes.cpp). Before cuInit, no descriptor of the driver
  // exists yet: none can leak, even where posix_spawn cannot close the others.
  ipc::Workers workers("/proc/self/exe", options.workers);

  // 2. Setup: load the driver; then pick the device and waive what it lacks, in one call.
  ms::checkDriverInit(cuInit(0));

  // The workers need contexts of their own beside the parent's: a device in
  // EXCLUSIVE_PROCESS compute mode allows one process at a time, so there it waives. The
  // last worker goes to another GPU that can import across, if there is one whose compute
  // mode admits it; the Workers line says why not otherwise. Each worker learns its device,
  // and answers once its context exists there. `sharing` holds no memory.
  const ipc::Sharing sharing =
      ipc::probeSharing(options.common.device, workers, options.crossGpu, out);

  // 3. Setup: the parent's context and stream.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, sharing.device), "cuCtxCreate");
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  // The interprocess event is recorded once A and B are written. The workers wait for it
  // on the GPU, with no round trip through the host. (It cannot record timing.) Its handle
  // goes into every job, with the device that owns the memory.
  ms::OwnedEvent inputsWritten;
  const unsigned int eventFlags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
  ms::check(cuEventCreate(inputsWritten.out(), eventFlags), "cuEventCreate");
  ipc::Job common;
  common.ownerDevice = sharing.ordinal;
  ms::check(cuIpcGetEventHandle(&common.inputsWritten, inputsWritten.get()),
            "cuIpcGetEventHandle");

  // `parent` does the run's work around the sharing (memMapIPC_measure.cpp): sizes, host
  // copies, slices, proofs of release, timings and the report.
  ipc::Parent parent(workers, options.sizeBytes, stream.get(), options.common,
                     inputsWritten.get(), common);
  const Run run{sharing.ordinal, stream.get(), workers};

  try {
    // 4. The VMM way: a descriptor per allocation, over the socket; then its timings.
    const VmmLayout vmm = shareVmm(parent, run);
    timeVmm(parent, run, vmm);

    // 5. The legacy way: 64-byte handles inside the job; then its timings.
    shareLegacy(parent, run);
    timeLegacy(parent, run);

    // 6. The pool way: the pool as a descriptor, each allocation as export data; its timings.
    sharePool(parent, run);
    timePool(parent, run);
  } catch (const std::exception&) {
    // Every worker ends first (none may still use the memory), and the owners have freed
    // the way in flight: the driver's answers say whether it is gone.
    out << parent.afterError();
    throw;
  }

  // 7. The workers quit and are reaped; the reference kernel runs on the parent's own
  // memory; the verdict. On the way out, the owners release the host copies, the event,
  // the stream (once its work is done) and the context, in reverse order of creation.
  return parent.finish(out, report.json());
}

}  // namespace

/// The parent parses the options and runs under runSample(); a worker has its own role.
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--worker")
    return ipc::workerMain(std::vector<std::string>(argv + 2, argv + argc));

  Options options;
  ms::CommandLine commandLine(
      "memMapIPC",
      "Shares GPU memory with worker processes three ways (a VMM allocation as a file "
      "descriptor, a legacy IPC handle, a memory pool); the workers compute C = A + B "
      "in it.");

  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size", "bytes per vector, a multiple of 4, at most 1T (default 256M)",
                      options.sizeBytes, 1, ipc::kMaxVectorBytes, sizeof(float));
  commandLine.addInteger("workers", "worker processes, 1 to 64 (default 2)",
                         options.workers, 1, 64);
  commandLine.addFlag("cross-gpu",
                      "the last worker must run on another GPU that imports across the link; "
                      "WAIVED where none can",
                      options.crossGpu);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runParent(options, report); });
}
