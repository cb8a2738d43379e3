/**
 * @file memMapIPC.cpp
 * @brief GPU memory shared between processes, three ways side by side: a VMM allocation
 *        passed as a file descriptor, a legacy IPC handle, and a stream-ordered pool.
 *
 * One executable plays two roles. This file is the parent: it owns A, B and C, and
 * `--workers N` worker processes (memMapIPC_worker.cpp) import them; each worker
 * computes its slice of C = A + B in the shared memory, and the parent checks every
 * element.
 * runParent() takes the steps below. Its core region is steps 4 to 8, once per path; the
 * worker's side of those steps is the core-b region of memMapIPC_worker.cpp. The chores
 * around the sharing (sizes, host copies, slices, the proof of each release, timings and
 * the report) are an ipc::Parent's, in memMapIPC_measure.cpp.
 *
 * 1. Start the workers, before cuInit: one **socketpair** (AF_UNIX, SOCK_SEQPACKET) per
 *    worker, and **posix_spawn** of this executable with `--worker`, its end of the pair
 *    as descriptor 3 and every other descriptor closed. No socket has a name: holding
 *    the descriptor is the only way to a worker. Each worker dies with the parent
 *    (PR_SET_PDEATHSIG).
 * 2. Load the driver (**cuInit**); then, in one call (probeSharing), pick the device and
 *    waive what it lacks for the three paths; with two peer-capable GPUs the last worker
 *    runs on the other one. Each worker learns its device and answers once its context
 *    exists there.
 * 3. Create the parent's context and stream; size the vectors and fill the host copies
 *    (ipc::Parent); create the interprocess event that the workers wait on
 *    (**cuEventCreate** with CU_EVENT_INTERPROCESS, **cuIpcGetEventHandle**).
 * 4. Create A, B and C so that another process may import them, and write A and B:
 *    **cuMemCreate** with the POSIX-descriptor handle type, **cuMemAddressReserve**,
 *    **cuMemMap**, **cuMemSetAccess**; or **cuMemAlloc**; or **cuMemPoolCreate** with
 *    the descriptor handle type and **cuMemAllocFromPoolAsync**. **cuEventRecord** marks
 *    the inputs written.
 * 5. Export them for each worker and send its job: **cuMemExportToShareableHandle** (a
 *    descriptor per allocation, sent with SCM_RIGHTS), **cuIpcGetMemHandle** (64 bytes),
 *    or **cuMemPoolExportToShareableHandle** and **cuMemPoolExportPointer**.
 * 6. Wait until every worker has imported, waited for the event on the GPU and written
 *    its slice; check C element by element.
 * 7. Measure (memMapIPC_measure.cpp): worker 0's kernel on the imported memory; then
 *    every worker drops its imports, and A alone is handed to worker 0 and dropped
 *    again, each handoff timed.
 * 8. Release, in reverse order of creation, each answer checked: **cuMemUnmap**,
 *    **cuMemAddressFree**, **cuMemRelease**; **cuMemFree**; **cuMemFreeAsync**, the
 *    pool's bytes in use (**cuMemPoolGetAttribute**: 0 once the frees completed) and
 *    **cuMemPoolDestroy**. The driver's answers about this process's own addresses
 *    prove that the memory is gone.
 * 9. The workers quit and are reaped; the reference kernel runs on the parent's own
 *    memory. The verdict: C exact, every release proved, every worker exited with 0;
 *    free device memory is information only. The owners release the host copies, the
 *    event, the stream and the context.
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

/// The command line: the common options, `--size` and `--workers`.
struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  int workers = 2;
};

/// The lesson's parent side: every step, and the sharing's calls in its core region.
ms::Verdict runParent(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();

  // 1. Start the workers, each with one end of a socket pair of its own as descriptor 3,
  // and nothing else (worker_processes.cpp). Before cuInit, no descriptor of the driver
  // exists yet: none can leak, even where posix_spawn cannot close the others.
  ipc::Workers workers("/proc/self/exe", options.workers);

  // 2. Load the driver; then pick the device and waive what it lacks, in one call.
  ms::checkDriverInit(cuInit(0));

  // The workers need contexts of their own beside the parent's: a device in
  // EXCLUSIVE_PROCESS compute mode allows one process at a time, so there it waives. The
  // last worker goes to another GPU that can import across, if there is one. Each worker
  // learns its device, and answers once its context exists there. `sharing` holds no
  // memory: it names the parent's device (and its ordinal) and the last worker's device.
  const ipc::Sharing sharing = ipc::probeSharing(options.common.device, workers, out);

  // 3. The parent's context and stream; then the vectors' size and their host copies.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, sharing.device), "cuCtxCreate");
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  // `parent` does the run's chores around the sharing (memMapIPC_measure.cpp): sizes,
  // host copies, slices, proofs of release, timings and the report.
  ipc::Parent parent(workers, options.sizeBytes, stream.get(), options.common);
  const std::uint64_t bytes = parent.bytes;

  // What the core asks of `parent`, beyond the sharing's own calls:
  // - writeInputs() first waits for the stream, so that a pool's allocations exist, and
  //   asks the driver about A, B and C (the first half of step 8's proof of release);
  //   then it queues A and B from the host copies and fills C with NaN.
  // - send() makes each descriptor close-on-exec, gives the job worker w's slice of C,
  //   and passes both to Workers::send (worker_processes.cpp), which calls sendMessage
  //   (ipc_channel.cpp): the descriptors travel as SCM_RIGHTS beside the job's bytes.
  // - measure() times worker 0's kernel, then has every worker drop its imports (it
  //   sends kRelease and waits for kReleased), then times handoffs of A with shareWith.

  // The interprocess event is recorded once A and B are written. The workers wait for it
  // on the GPU, with no round trip through the host. (It cannot record timing.)
  ms::OwnedEvent inputsWritten;
  const unsigned int eventFlags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
  ms::check(cuEventCreate(inputsWritten.out(), eventFlags), "cuEventCreate");

  // What every job says; each path adds its handles, and each worker its slice.
  ipc::Job job;
  job.elements = parent.count;
  job.ownerDevice = sharing.ordinal;
  ms::check(cuIpcGetEventHandle(&job.inputsWritten, inputsWritten.get()),
            "cuIpcGetEventHandle");

  // A pool, like a VMM allocation (step 4), is exportable only if it asks for a handle
  // type when it is created.
  const CUmemAllocationHandleType fdType = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemPoolProps poolProps = {};
  poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  poolProps.handleTypes = fdType;
  poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, sharing.ordinal};

  try {
    //! [core]
    for (const ipc::SharePath path : ipc::kSharePaths) {
      // 4. Create A, B and C for other processes to import, then write A and B.
      ipc::Buffers shared(stream.get(), &workers);  // an error ends the workers first
      CUdeviceptr* const pointer = shared.pointer;
      CUmemAllocationProp prop = {};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, sharing.ordinal};
      prop.requestedHandleTypes = fdType;  // exportable only if asked for at creation
      const CUmemAccessDesc access = {prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
      const bool vmm = path == ipc::SharePath::VmmDescriptor;
      const std::size_t size = vmm ? ipc::vmmAllocationBytes(prop, bytes) : bytes;  // VMM: whole granules

      if (path == ipc::SharePath::Pool)
        ms::check(cuMemPoolCreate(shared.pool.out(), &poolProps), "cuMemPoolCreate");
      for (int i = 0; i < 3; ++i) {
        if (vmm) {
          // Kept until step 8 (not released once mapped): every job exports the handle.
          ms::check(cuMemCreate(shared.handle[i].out(), size, &prop, 0), "cuMemCreate");
          ms::check(cuMemAddressReserve(&pointer[i], size, 0, 0, 0), "cuMemAddressReserve");
          shared.range[i].own(pointer[i], size);
          ms::check(cuMemMap(pointer[i], size, 0, shared.handle[i].get(), 0), "cuMemMap");
          ms::check(cuMemSetAccess(pointer[i], size, &access, 1), "cuMemSetAccess");
        } else if (path == ipc::SharePath::LegacyIpc) {
          ms::check(cuMemAlloc(shared.memory[i].out(), size), "cuMemAlloc");
          pointer[i] = shared.memory[i].get();
        } else {
          CUdeviceptr* const made = shared.pooled[i].out();
          ms::check(cuMemAllocFromPoolAsync(made, size, shared.pool.get(), stream.get()),
                    "cuMemAllocFromPoolAsync");
          pointer[i] = *made;
        }
      }
      parent.writeInputs(shared.pointer);  // waits, notes A-C for step 8, writes A, B
      ms::check(cuEventRecord(inputsWritten.get(), stream.get()), "cuEventRecord");

      // 5. Export the first `allocations` for worker w, and send its job (SCM_RIGHTS).
      const auto shareWith = [&](std::size_t w, std::uint32_t allocations) {
        job.path = path;
        job.allocations = allocations;
        job.allocationBytes = size;
        std::vector<ipc::OwnedFd> descriptors;
        for (std::uint32_t i = 0; i < allocations; ++i) {
          int fd = -1;
          if (vmm)
            ms::check(cuMemExportToShareableHandle(&fd, shared.handle[i].get(), fdType, 0),
                      "cuMemExportToShareableHandle");
          if (path == ipc::SharePath::Pool && i == 0)
            ms::check(cuMemPoolExportToShareableHandle(&fd, shared.pool.get(), fdType, 0),
                      "cuMemPoolExportToShareableHandle");
          if (fd >= 0)
            descriptors.emplace_back(fd);  // owned at once: closed if a later call fails
          if (path == ipc::SharePath::LegacyIpc)
            ms::check(cuIpcGetMemHandle(&job.legacy[i], pointer[i]), "cuIpcGetMemHandle");
          if (path == ipc::SharePath::Pool)
            ms::check(cuMemPoolExportPointer(&job.pooled[i], pointer[i]), "cuMemPoolExportPointer");
        }
        parent.send(w, job, descriptors);  // close-on-exec, w's slice, sendMessage()
      };  // the parent's copies close here; the message in flight holds the files
      for (std::size_t w = 0; w < parent.workerCount; ++w)
        shareWith(w, 3);

      // 6. Wait until every worker has imported (step 5) and written its slice; check C.
      ipc::PathResult& result = parent.checkSlices(path, pointer[2]);

      // 7. Time the kernel on imports; workers drop them (kRelease); time handoffs of A.
      parent.measure(result, shareWith);

      // 8. Release in reverse order of creation; the importers went first (step 7).
      for (int i = 2; i >= 0; --i) {
        if (vmm) {
          ms::check(cuMemUnmap(shared.range[i].get(), size), "cuMemUnmap");
          ms::check(cuMemAddressFree(shared.range[i].release(), size), "cuMemAddressFree");
          ms::check(cuMemRelease(shared.handle[i].release()), "cuMemRelease");
        } else if (path == ipc::SharePath::LegacyIpc) {
          ms::check(cuMemFree(shared.memory[i].release()), "cuMemFree");
        } else {
          ms::check(cuMemFreeAsync(shared.pooled[i].release(), stream.get()), "cuMemFreeAsync");
        }
      }

      if (path == ipc::SharePath::Pool) {
        // Once the frees have completed, the pool must count no bytes in use.
        ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
        cuuint64_t& inUse = result.poolBytesInUse.emplace();
        const CUmemPool_attribute used = CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
        ms::check(cuMemPoolGetAttribute(shared.pool.get(), used, &inUse), "cuMemPoolGetAttribute");
        ms::check(cuMemPoolDestroy(shared.pool.release()), "cuMemPoolDestroy");
      }
      parent.confirmRelease(result);  // does the driver still know A, B or C?
    }
    //! [core]
  } catch (const std::exception&) {
    // Every worker ends first (none may still use the memory), and the owners have freed
    // the path in flight: the driver's answers say whether it is gone.
    out << parent.afterError();
    throw;
  }

  // 9. The workers quit and are reaped; the reference kernel runs on the parent's own
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
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runParent(options, report); });
}
