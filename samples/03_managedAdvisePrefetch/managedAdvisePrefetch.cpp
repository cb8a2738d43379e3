/**
 * @file managedAdvisePrefetch.cpp
 * @brief Managed memory with the CUDA driver API: advice, range and pointer attributes,
 *        prefetch, batch prefetch and discard, each checked, and what each costs.
 *
 * Managed memory (cuMemAllocManaged) is one address, valid on the host and on every
 * GPU. Its pages live in one place at a time and move on demand: the first access from
 * the "wrong" processor faults, the driver migrates the page and the access is
 * replayed. Convenient, and slow. This sample keeps 01_vectorAddDrv's C = A + B and
 * shows, in order, the calls that make managed memory fast. Steps 3 to 10 are the core:
 * the region between the two core markers, which the README shows.
 *
 * 1. **cuInit** and a device, as in 01.
 * 2. **cuCtxCreate** and the kernel (**cuModuleLoadData**), as in 01. Then planRun():
 *    what the device supports of managed memory (WAIVED without concurrent managed
 *    access on every device), and the sizes of the run, never more than is free.
 * 3. **cuMemAllocManaged** A, B and C, and a stream (**cuStreamCreate**).
 * 4. **cuPointerGetAttributes** on A, at its start and from inside it.
 * 5. **cuMemAdvise**, row by row from a table: preferred location (device, host, host
 *    NUMA node), accessed-by and read-mostly, each set and unset, then different advice
 *    on the two halves of A. After each row, eight **cuMemRangeGetAttribute** calls and
 *    one **cuMemRangeGetAttributes** call read the range back.
 * 6. **cuMemPrefetchAsync** A, B and C to the GPU, **cuLaunchKernel**, C back to the
 *    host.
 * 7. **cuMemPrefetchBatchAsync**: chunks 0-5 of A, B and C to the GPU and chunks 6-9 to
 *    the host, in one call; the GPU adds its share while the CPU adds the rest.
 * 8. **cuMemDiscardBatchAsync**: C's contents are dead, so the prefetch after it need
 *    not copy them.
 * 9. Measured (managedAdvisePrefetch_measure.cpp): the kernel under demand paging,
 *    prefetched, on cuMemAlloc memory and on advised host memory; prefetches against
 *    pinned and pageable copies, and results written in place over the link; one batch
 *    against single prefetches; the prefetch of live against discarded data.
 * 10. The teardown, each release checked: **cuStreamSynchronize**, **cuStreamDestroy**,
 *     **cuMemFree** (C, B, A),
 *     then 01's **cuModuleUnload** and **cuCtxDestroy**. PASS when every element is
 *     exact and every attribute read back what the advice or the prefetch implies.
 */
#include <array>
#include <string>
#include <vector>

#include "managedAdvisePrefetch_measure.hpp"
#include "managed_logic.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace mm = memsamples::managed;

namespace {

/// Managed memory from cuMemAllocManaged, freed with cuMemFree.
using OwnedManagedMemory = ms::DriverHandle<CUdeviceptr, cuMemFree>;

ms::Verdict runManagedAdvisePrefetch(const ManagedOptions& options, ms::Report& report) {
  // A mistake on the command line is reported before any waiver.
  mm::checkSizeOptions(options.sizeBytes, *options.rangeBytes);

  // 1. The driver and a device, as in 01.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);

  // 2. A context and the kernel, as in 01.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");

  const std::string fatbinPath = ms::locateFatbin("vectorAdd_kernel.fatbin");
  const std::vector<char> fatbin = ms::readBinaryFile(fatbinPath);
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"),
            "cuModuleGetFunction");

  // One call says what the device supports of managed memory (without concurrent
  // managed access the sample is WAIVED) and sizes the whole run against the memory that
  // is free. An over-subscribed GPU evicts managed pages and can stall every process on
  // it, so a --size that does not fit is refused here, before anything is allocated.
  const ManagedPlan plan = planRun(options, device, vecAdd, report);
  std::size_t bytes = plan.sizes.vectorBytes;  // not const: step 8 takes its address
  // The element count as VecAdd_kernel's parameter type exactly, as in 01; its launch is
  // 01's too: blocks of 256 threads, enough of them to fill every SM.
  unsigned long long count = bytes / sizeof(float);
  const unsigned int grid = plan.grid;
  const unsigned int block = plan.block;

  // A CUmemLocation says where pages should be: a device, by its ordinal, or the host
  // (whose id is ignored). After a prefetch, a range must name its destination as the
  // last prefetch location, and carry no advice: read-mostly 0, no preferred location,
  // no accessed-by.
  const CUmemLocation gpu = {CU_MEM_LOCATION_TYPE_DEVICE, plan.ordinal};
  const CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  // The host NUMA node nearest the device (-1: none), for step 5's advice to a node.
  const int numaNode = plan.support.hostNumaId;
  mm::ExpectedRange onGpu;
  onGpu.lastPrefetch = gpu;
  mm::ExpectedRange onHost;
  onHost.lastPrefetch = host;

  // Reading the core: checks.hostA, hostB and hostC are A, B and C's managed
  // addresses as float*: the CPU reads and writes the managed memory itself. The CPU
  // adds its share in step 7 while the kernel runs, which concurrent managed access
  // allows (planRun() waived without it). expect() records a check; with a label alone
  // it compares C with A + B on the host. The rows of step 5 are the advice table
  // (managed_logic.cpp); the attributes of steps 4 and 5 are in managed_logic.hpp.

  //! [core]
  // 3. Three managed vectors, which any stream of any device may use (ATTACH_GLOBAL).
  OwnedManagedMemory a;
  OwnedManagedMemory b;
  OwnedManagedMemory c;
  ms::check(cuMemAllocManaged(a.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  ms::check(cuMemAllocManaged(b.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  ms::check(cuMemAllocManaged(c.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  std::vector<CUdeviceptr> abc = {a.get(), b.get(), c.get()};  // loops, kernel arguments
  ms::OwnedStream stream;  // created: cuMemPrefetchBatchAsync refuses the NULL stream
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const CUstream s = stream.get();
  Checks checks(report, options, plan, vecAdd, s, abc);  // records every check below

  // 4. Eight answers about an address from one call; from inside A they still name A.
  mm::PointerAttributeQuery said[2];  // about A's first byte, and about its middle
  const CUdeviceptr where[2] = {a.get(), a.get() + bytes / 2};
  for (int i = 0; i < 2; ++i)
    ms::check(cuPointerGetAttributes(8, said[i].asked, said[i].answers, where[i]),
              "cuPointerGetAttributes");
  expect(checks, said[0].said, said[1].said);

  // 5. Advice from a table, each row read back: eight calls, then one call for all eight.
  for (const mm::AdviceStep& row : mm::adviceSteps(bytes, plan.ordinal, numaNode)) {
    const CUdeviceptr ptr = a.get() + row.range.offset;
    const std::size_t size = row.range.bytes;
    const CUresult advised =
        row.advice ? cuMemAdvise(ptr, size, *row.advice, row.where) : CUDA_SUCCESS;
    if (!expect(checks, row, advised) || !row.expected)  // refused (a NUMA node), or no read
      continue;
    mm::RangeAttributeQuery one(plan.accessedBySlots);  // one cuMemRangeGetAttribute each
    mm::RangeAttributeQuery all(plan.accessedBySlots);  // one cuMemRangeGetAttributes call
    for (std::size_t i = 0; i < one.asked.size(); ++i)
      ms::check(cuMemRangeGetAttribute(one.data[i], one.sizes[i], one.asked[i], ptr, size),
                "cuMemRangeGetAttribute");
    ms::check(cuMemRangeGetAttributes(all.data.data(), all.sizes.data(), all.asked.data(),
                                      all.asked.size(), ptr, size),
              "cuMemRangeGetAttributes");
    expect(checks, row.label, *row.expected, one.said, all.said);
  }

  // 6. Inputs written by the CPU; A, B and C to the GPU before the kernel; C back.
  ms::fillVectorAddInputs(checks.hostA, checks.hostB, count, 2024);
  for (const CUdeviceptr vector : abc)
    ms::check(cuMemPrefetchAsync(vector, bytes, gpu, 0, s), "cuMemPrefetchAsync");
  void* params[] = {&abc[0], &abc[1], &abc[2], &count};
  ms::check(cuLaunchKernel(vecAdd, grid, 1, 1, block, 1, 1, 0, s, params, nullptr),
            "cuLaunchKernel");
  ms::check(cuMemPrefetchAsync(c.get(), bytes, host, 0, s), "cuMemPrefetchAsync");
  ms::check(cuStreamSynchronize(s), "cuStreamSynchronize");
  expect(checks, "A after prefetch to the GPU", a.get(), bytes, onGpu);
  expect(checks, "C after prefetch back to host", c.get(), bytes, onHost);
  expect(checks, "GPU result read on the host after the round trip");

  // 7. New inputs; one call sends chunks 0-5 of A, B, C to the GPU, 6-9 to the host.
  ms::fillVectorAddInputs(checks.hostA, checks.hostB, count, 7);
  mm::PrefetchBatch batch = mm::chunkBatch(abc, bytes, gpu, host, s);  // checked arrays
  ms::check(cuMemPrefetchBatchAsync(batch.dptrs.data(), batch.sizes.data(), batch.dptrs.size(),
                                    batch.locations.data(), batch.locationStarts.data(),
                                    batch.locations.size(), 0, s),
            "cuMemPrefetchBatchAsync");
  // The first host range is chunk 6 of A: the GPU adds what is before it, the CPU the rest.
  unsigned long long gpuShare = (batch.dptrs[batch.locationStarts[1]] - a.get()) / 4;
  void* gpuParams[] = {&abc[0], &abc[1], &abc[2], &gpuShare};
  ms::check(cuLaunchKernel(vecAdd, grid, 1, 1, block, 1, 1, 0, s, gpuParams, nullptr),
            "cuLaunchKernel");
  for (unsigned long long i = gpuShare; i < count; ++i)
    checks.hostC[i] = checks.hostA[i] + checks.hostB[i];
  ms::check(cuStreamSynchronize(s), "cuStreamSynchronize");
  expect(checks, batch);  // every range reads back its own destination; then C

  // 8. C's contents are dead: the driver may drop its pages instead of migrating them.
  expect(checks, cuMemDiscardBatchAsync(&abc[2], &bytes, 1, 0, s));
  ms::check(cuMemPrefetchAsync(c.get(), bytes, gpu, 0, s), "cuMemPrefetchAsync");
  ms::check(cuLaunchKernel(vecAdd, grid, 1, 1, block, 1, 1, 0, s, params, nullptr),
            "cuLaunchKernel");
  ms::check(cuStreamSynchronize(s), "cuStreamSynchronize");
  expect(checks, "C after discard + prefetch", c.get(), bytes, onGpu);
  expect(checks, "C written by the GPU after the discard");

  // 9. What each technique costs, on these buffers, and the summary of every check.
  const ms::Verdict verdict = measureCosts(checks);

  // 10. The teardown, each release checked (on an error path the owners do the same).
  ms::check(cuStreamSynchronize(s), "cuStreamSynchronize");
  ms::check(cuStreamDestroy(stream.release()), "cuStreamDestroy");
  ms::check(cuMemFree(c.release()), "cuMemFree");
  ms::check(cuMemFree(b.release()), "cuMemFree");
  ms::check(cuMemFree(a.release()), "cuMemFree");
  ms::check(cuModuleUnload(module.release()), "cuModuleUnload");
  ms::check(cuCtxDestroy(context.release()), "cuCtxDestroy");
  //! [core]

  return verdict;
}

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
                      "bytes per vector, a multiple of 4, 1M to 1T (default 1G, "
                      "less if memory is short; never more than fits in free memory)",
                      options.sizeBytes, kMinVectorBytes, 1ull << 40, sizeof(float));
  commandLine.addSize("range-size",
                      "bytes per range of the batch benchmark, whole pages up to 2M "
                      "(default 64K)",
                      options.rangeBytes, 4096, 2ull << 20);
  commandLine.addIntegerList("batch-counts",
                             "numbers of ranges K in that benchmark (16,256,4096)",
                             options.batchCounts, 1, 65536);
  commandLine.addInteger("migration-iterations",
                         "repetitions of the runs that move whole vectors (default 5)",
                         options.migrationIterations, 1, 1000);

  return ms::runSample(commandLine, options.common, argc, argv, [&](ms::Report& report) {
    return runManagedAdvisePrefetch(options, report);
  });
}
