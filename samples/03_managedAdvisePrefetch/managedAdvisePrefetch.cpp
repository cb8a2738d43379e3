/**
 * @file managedAdvisePrefetch.cpp
 * @brief Managed memory with the CUDA driver API: advice and its read-back, prefetch, batch
 *        prefetch and discard, each checked, and what each costs.
 *
 * Managed memory (cuMemAllocManaged) is one address, valid on the host and on every GPU; each
 * page lives in one place at a time and, touched from the other side, faults and migrates:
 * convenient, and slow. This sample keeps 01_vectorAddDrv's C = A + B and shows, in run order,
 * the calls that make managed memory fast. Steps 3 to 9 are the core, one region of
 * runManagedAdvisePrefetch() just below; checkAdvice() (step 4's read-backs) and main() follow.
 *
 * 1. **cuInit** and a device, as in 01.
 * 2. **cuCtxCreate** and the kernel (**cuModuleLoadData**), as in 01. Then planRun():
 *    what the device supports of managed memory (WAIVED without concurrent managed
 *    access on every device), and the sizes of the run, never more than is free.
 * 3. **cuMemAllocManaged** A, B and C, and a stream (**cuStreamCreate**).
 * 4. **cuMemAdvise**: A and B SET_READ_MOSTLY (the CPU writes them, the GPU only reads them); C
 *    SET_PREFERRED_LOCATION the host and SET_ACCESSED_BY the GPU (the kernel writes C in place,
 *    over the link). checkAdvice() reads each back with **cuMemRangeGetAttribute**.
 * 5. The CPU writes A and B; **cuMemPrefetchAsync** C to the host and A and B to the GPU (these
 *    two skipped with --no-prefetch); **cuLaunchKernel**; the results are back once
 *    **cuStreamSynchronize** returns: C is in host memory, nothing migrates.
 * 6. The usage changes (each side adds its own part): the UNSET_ of each advice, then
 *    **cuMemPrefetchBatchAsync**: chunks 0-5 of A, B and C to the GPU and chunks 6-9 to the
 *    host, in one call; the GPU adds its share while the CPU adds the rest.
 * 7. **cuMemDiscardBatchAsync**: C's contents are dead, so the prefetch after it need
 *    not copy them.
 * 8. More checks and what each technique costs (managedAdvisePrefetch_measure.cpp):
 *    **cuPointerGetAttributes** on A, the advice table (the GPU, the host, a host NUMA
 *    node, halves of A); step 5 again, timed; the kernel under demand paging, prefetched, on
 *    cuMemAlloc memory and on advised host memory; prefetches against pinned and pageable
 *    copies, and results written in place over the link; one batch against single prefetches;
 *    the prefetch of live against discarded data, and discard + prefetch as two calls against
 *    one **cuMemDiscardAndPrefetchBatchAsync**.
 * 9. The teardown, each release checked: **cuStreamSynchronize**, **cuStreamDestroy**,
 *    **cuMemFree** (C, B, A), then 01's **cuModuleUnload** and **cuCtxDestroy**. PASS
 *    when every element is exact and every attribute read back what the advice or the
 *    prefetch implies.
 */
#include <string>
#include <vector>

#include "managedAdvisePrefetch_measure.hpp"
#include "managed_logic.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace mm = memsamples::managed;

namespace {

using ms::check;  // check(result, "call"): throws CudaError naming the call unless CUDA_SUCCESS

/// Managed memory from cuMemAllocManaged, freed with cuMemFree.
using OwnedManagedMemory = ms::DriverHandle<CUdeviceptr, cuMemFree>;

// Step 4's read-backs (below the lesson, shown under Going deeper in the README).
void checkAdvice(Checks& checks, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, std::size_t bytes);

ms::Verdict runManagedAdvisePrefetch(const ManagedOptions& options, ms::Report& report) {
  // A mistake on the command line is reported before any waiver.
  mm::checkSizeOptions(options.sizeBytes, *options.rangeBytes);

  // 1. The driver and a device, as in 01.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);

  // 2. A context and the kernel, as in 01.
  ms::OwnedContext context;
  check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");

  const std::string fatbinPath = ms::locateFatbin("vectorAdd_kernel.fatbin");
  const std::vector<char> fatbin = ms::readBinaryFile(fatbinPath);
  ms::OwnedModule module;
  check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");

  // One call says what the device supports of managed memory (without concurrent
  // managed access the sample is WAIVED) and sizes the whole run against the memory that
  // is free. An over-subscribed GPU evicts managed pages and can stall every process on
  // it, so a --size that does not fit is refused here, before anything is allocated.
  const ManagedPlan plan = planRun(options, device, vecAdd, report);
  std::size_t bytes = plan.sizes.vectorBytes;  // not const: step 7's discard takes its address
  // The element count as VecAdd_kernel's parameter type exactly, as in 01; its launch is
  // 01's too: blocks of 256 threads, enough of them to fill every SM.
  unsigned long long count = bytes / sizeof(float);
  const unsigned int grid = plan.grid;
  const unsigned int block = plan.block;

  // Every check of the run, recorded; each step's checks are one call (checks.afterStep5...).
  Checks checks(report, options, plan);

  //! [core]
  const CUmemLocation gpu = {CU_MEM_LOCATION_TYPE_DEVICE, plan.ordinal};  // a page is on this GPU
  const CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};  // or in host memory (needs no id)

  // 3. Three managed vectors: one address each, valid on the host and on every GPU.
  OwnedManagedMemory a, b, c;  // out() is the slot the driver fills; release() hands it back
  check(cuMemAllocManaged(a.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  check(cuMemAllocManaged(b.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  check(cuMemAllocManaged(c.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  std::vector<CUdeviceptr> abc = {a.get(), b.get(), c.get()};
  float* hostA = reinterpret_cast<float*>(a.get());  // the CPU uses the same addresses:
  float* hostB = reinterpret_cast<float*>(b.get());  // no copies
  float* hostC = reinterpret_cast<float*>(c.get());
  ms::OwnedStream stream;  // a created stream: cuMemPrefetchBatchAsync refuses the NULL stream
  check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const CUstream s = stream.get();

  // 4. Advice. A, B (CPU writes, GPU reads): each side may keep a read-only copy; READ_MOSTLY
  //    ignores its location. C (GPU writes, CPU reads): stays on the host, mapped by the GPU.
  check(cuMemAdvise(a.get(), bytes, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu), "cuMemAdvise");
  check(cuMemAdvise(b.get(), bytes, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu), "cuMemAdvise");
  check(cuMemAdvise(c.get(), bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host), "cuMemAdvise");
  check(cuMemAdvise(c.get(), bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu), "cuMemAdvise");
  checkAdvice(checks, a.get(), b.get(), c.get(), bytes);  // each read back: cuMemRangeGetAttribute

  // 5. The CPU writes A and B. Prefetches make C's pages on the host and copy A and B to the GPU.
  ms::fillVectorAddInputs(hostA, hostB, count, 2024);
  check(cuMemPrefetchAsync(c.get(), bytes, host, 0, s), "cuMemPrefetchAsync");
  if (!options.noPrefetch) {  // with --no-prefetch the kernel's page faults move A and B
    check(cuMemPrefetchAsync(a.get(), bytes, gpu, 0, s), "cuMemPrefetchAsync");
    check(cuMemPrefetchAsync(b.get(), bytes, gpu, 0, s), "cuMemPrefetchAsync");
  }
  void* params[] = {&abc[0], &abc[1], &abc[2], &count};
  check(cuLaunchKernel(vecAdd, grid, 1, 1, block, 1, 1, 0, s, params, nullptr), "cuLaunchKernel");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");  // C is back: the GPU wrote it in place
  checks.afterStep5(abc);  // C == A + B on the host; A's and C's attributes read back

  // 6. The usage changes: the GPU now adds chunks 0-5 of each vector, the CPU chunks 6-9, each in
  //    its own memory. Step 4's advice fits step 5's use only (no chunk is read on both sides now,
  //    and C is not written over the link), so each SET_ gets its UNSET_; the batch places pages.
  check(cuMemAdvise(a.get(), bytes, CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu), "cuMemAdvise");
  check(cuMemAdvise(b.get(), bytes, CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu), "cuMemAdvise");
  check(cuMemAdvise(c.get(), bytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host), "cuMemAdvise");
  check(cuMemAdvise(c.get(), bytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu), "cuMemAdvise");
  ms::fillVectorAddInputs(hostA, hostB, count, 7);  // new inputs

  //    One call, 30 ranges: each vector cut into ten chunks (0-9), in dptrs/sizes in the order
  //    below. Location k applies from range prefetchLocIdxs[k] on.
  mm::PrefetchBatch batch = mm::chunkRanges(abc, bytes);  // chunks A0-5 B0-5 C0-5, A6-9 B6-9 C6-9
  const std::size_t firstHostRange = 3 * 6;  // 3 vectors x 6 chunks (0-5) for the GPU come first
  batch.prefetchLocs = {gpu, host};
  batch.prefetchLocIdxs = {0, firstHostRange};  // ranges 0-17 to the GPU, 18-29 to the host
  mm::validatePrefetchBatch(batch, s);  // names a broken rule; the driver would say INVALID_VALUE
  check(cuMemPrefetchBatchAsync(batch.dptrs.data(), batch.sizes.data(), batch.dptrs.size(),
                                batch.prefetchLocs.data(), batch.prefetchLocIdxs.data(),
                                batch.prefetchLocs.size(), 0, s), "cuMemPrefetchBatchAsync");

  //    The GPU adds chunks 0-5 of each vector while the CPU adds chunks 6-9.
  unsigned long long gpuCount = mm::gpuPartBytes(bytes) / sizeof(float);  // where chunk 6 starts
  void* gpuPart[] = {&abc[0], &abc[1], &abc[2], &gpuCount};
  check(cuLaunchKernel(vecAdd, grid, 1, 1, block, 1, 1, 0, s, gpuPart, nullptr), "cuLaunchKernel");
  for (unsigned long long i = gpuCount; i < count; ++i)
    hostC[i] = hostA[i] + hostB[i];
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  checks.afterStep6(abc, batch);  // C == A + B; each range's last prefetch is its destination

  // 7. C's contents are dead: after a discard, the prefetch need not copy them.
  const CUresult discarded = cuMemDiscardBatchAsync(&abc[2], &bytes, 1, 0, s);
  checks.discardSupported = checks.checkOrNotSupported(discarded, "cuMemDiscardBatchAsync");
  check(cuMemPrefetchAsync(c.get(), bytes, gpu, 0, s), "cuMemPrefetchAsync");
  check(cuLaunchKernel(vecAdd, grid, 1, 1, block, 1, 1, 0, s, params, nullptr), "cuLaunchKernel");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  checks.afterStep7(abc);  // C == A + B; C last prefetched to the GPU

  // 8. Not the pattern: more checks, and what each technique costs (step 5 again, timed).
  const ms::Verdict verdict = measureCosts(checks, vecAdd, s, abc);

  // 9. The teardown, each release checked (on an error path before it, the owners free).
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuStreamDestroy(stream.release()), "cuStreamDestroy");
  check(cuMemFree(c.release()), "cuMemFree");
  check(cuMemFree(b.release()), "cuMemFree");
  check(cuMemFree(a.release()), "cuMemFree");
  //! [core]

  // 01's teardown: the module and the context.
  check(cuModuleUnload(module.release()), "cuModuleUnload");
  check(cuCtxDestroy(context.release()), "cuCtxDestroy");
  return verdict;
}

// [advice-read-back]
/// Step 4's advice, read back for whole ranges: advice moves no data, so this is where it shows.
void checkAdvice(Checks& checks, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, std::size_t bytes) {
  // A and B: READ_MOSTLY is one int, 1 when every page of the range is read-mostly.
  for (const CUdeviceptr input : {a, b}) {
    int readMostly = 0;
    check(cuMemRangeGetAttribute(&readMostly, sizeof(readMostly),
                                 CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, input, bytes),
          "cuMemRangeGetAttribute");
    checks.expect("READ_MOSTLY after SET_READ_MOSTLY", readMostly, 1);
  }

  // C's preferred location. A host location has no id, so its type is the whole answer.
  CUmemLocation preferred = {};
  check(cuMemRangeGetAttribute(&preferred.type, sizeof(preferred.type),
                               CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, c, bytes),
        "cuMemRangeGetAttribute");
  checks.expect("PREFERRED_LOCATION after SET_PREFERRED_LOCATION", preferred, checks.host);

  // C's accessed-by: an int array, the ordinal of each device with the advice, the rest
  // CU_DEVICE_INVALID. accessedBySlots: one slot per device of the system, and one for the host.
  std::vector<int> accessedBy(checks.plan.accessedBySlots, CU_DEVICE_INVALID);
  check(cuMemRangeGetAttribute(accessedBy.data(), accessedBy.size() * sizeof(int),
                               CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, c, bytes),
        "cuMemRangeGetAttribute");
  checks.expect("ACCESSED_BY after SET_ACCESSED_BY", accessedBy, std::vector{checks.plan.ordinal});
}
// [advice-read-back]

}  // namespace

/// Parses the options; runSample() runs the sample and owns output and exit codes.
int main(int argc, char** argv) {
  ManagedOptions options;
  ms::CommandLine commandLine("managedAdvisePrefetch",
                              "Managed memory with the driver API: advice, prefetch, "
                              "batch prefetch and discard, each checked, and what each "
                              "costs.");
  commandLine.addCommonOptions(options.common);

  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4, 1M to 1T (default 64M, with --full 1G; "
                      "less if memory is short; never more than fits in free memory)",
                      options.sizeBytes, kMinVectorBytes, 1ull << 40, sizeof(float));
  commandLine.addFlag("full",
                      "the benchmark behind the course's plots: 1G per vector and batches of "
                      "16,256,4096 ranges (about 70 s on an H200; the default run takes seconds)",
                      options.full);
  commandLine.addFlag("no-prefetch",
                      "step 5 without A's and B's prefetches to the GPU: the kernel's faults "
                      "move their pages (demand paging); watch step 5's time",
                      options.noPrefetch);
  commandLine.addFlag("verbose", "print every check of steps 3-8 and the measurements' details",
                      options.verbose);
  commandLine.addSize("range-size",
                      "bytes per range of the batch benchmark, whole pages up to 2M "
                      "(default 64K)",
                      options.rangeBytes, 4096, 2ull << 20);
  commandLine.addIntegerList("batch-counts",
                             "numbers of ranges K in that benchmark (default 16,64; with --full "
                             "16,256,4096)",
                             options.batchCounts, 1, 65536);
  commandLine.addInteger("migration-iterations",
                         "repetitions of the runs that move whole vectors (default 5)",
                         options.migrationIterations, 1, 1000);

  return ms::runSample(commandLine, options.common, argc, argv, [&](ms::Report& report) {
    applyRunDefaults(options);  // the batch counts of a default or a --full run
    return runManagedAdvisePrefetch(options, report);
  });
}
