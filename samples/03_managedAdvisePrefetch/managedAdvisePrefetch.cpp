/**
 * @file managedAdvisePrefetch.cpp
 * @brief Managed memory with the CUDA driver API: advice, range and pointer attributes,
 *        prefetch, batch prefetch and discard, each checked, and what demand paging costs.
 *
 * Managed memory (cuMemAllocManaged) is one address valid on the host and on every GPU. Its pages
 * live in one place at a time and move on demand: the first access from the "wrong" processor
 * faults, the driver migrates the page, the access is replayed: convenient, and slow. This sample
 * keeps 01_vectorAddDrv's C = A + B and shows the calls that make managed memory fast, in order:
 *
 * 1. **Capabilities**: CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, and CONCURRENT_MANAGED_ACCESS on every
 *    device (prefetching to a GPU, most advice and the batch calls need it); else WAIVED.
 * 2. **cuMemAllocManaged** A, B and C: one address each, no page until first touched. A size that
 *    would ask for more memory than the device has free is refused first.
 * 3. **cuPointerGetAttributes**: managed, which device, the allocation's range (also from an
 *    address inside it), one address for host and device.
 * 4. **cuMemAdvise**: preferred location (device, host, host NUMA node), accessed-by, read-mostly,
 *    each set and unset, then different advice on the two halves of A. Each is read back with
 *    eight **cuMemRangeGetAttribute** calls and one **cuMemRangeGetAttributes** call.
 * 5. **cuMemPrefetchAsync** A, B and C to the GPU, the kernel, C back to the host.
 * 6. **cuMemPrefetchBatchAsync**: chunks 0-5 of A, B and C to the GPU and chunks 6-9 to the host
 *    in one call, on a created stream; the GPU adds its share while the CPU adds the rest.
 * 7. **cuMemDiscardBatchAsync**: C's contents are dead, so the prefetch after it need not copy.
 * 8. **Measured** (managedAdvisePrefetch_measure.cpp): the kernel under demand paging, after a
 *    prefetch, on cuMemAlloc memory and on advised host memory; prefetch against pinned copies;
 *    one batch against single prefetches; the prefetch of live against discarded data.
 *
 * PASS when every element is exact and every attribute reads back what the advice or the
 * prefetch implies; a mismatch names the attribute, the expected and the actual value.
 */
#include <iostream>
#include <string>
#include <vector>

#include "managedAdvisePrefetch_measure.hpp"
#include "managed_logic.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace mm = memsamples::managed;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;     // per vector
constexpr std::uint64_t kMinBytes = 1ull << 20;         // ten 64 KiB-aligned chunks must fit
constexpr std::uint64_t kChunkAlignment = 64ull << 10;  // whole pages of 4, 16 or 64 KiB
constexpr std::size_t kBatchChunks = 10;                // step 6 cuts each vector in ten chunks:
constexpr std::size_t kDeviceChunks = 6;  // the first six go to the GPU, the last four stay
constexpr int kBlockSize = 256;           // threads per block of VecAdd_kernel

/// Managed memory from cuMemAllocManaged, freed with cuMemFree.
using OwnedManagedMemory = ms::DriverHandle<CUdeviceptr, cuMemFree>;

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  std::optional<std::uint64_t> rangeBytes = 64ull << 10;
  std::vector<int> batchCounts = {16, 256, 4096};
  int migrationIterations = 5;
};

/// Reads every range attribute of [ptr, ptr + bytes) twice, with one cuMemRangeGetAttribute call
/// each and with one cuMemRangeGetAttributes call, and records both against @p expected.
void expectRange(const ManagedRun& run, const std::string& label, CUdeviceptr ptr,
                 std::size_t bytes, const mm::ExpectedRange& expected, bool print = true) {
  // [range-attributes]
  mm::RangeAttributes one, all;
  const mm::RangeAttributeQuery each = mm::rangeAttributeQuery(one, run.accessedBySlots);
  for (std::size_t i = 0; i < each.asked.size(); ++i) {
    ms::check(cuMemRangeGetAttribute(each.data[i], each.sizes[i], each.asked[i], ptr, bytes),
              "cuMemRangeGetAttribute");
  }
  mm::RangeAttributeQuery once = mm::rangeAttributeQuery(all, run.accessedBySlots);
  ms::check(cuMemRangeGetAttributes(once.data.data(), once.sizes.data(), once.asked.data(),
                                    once.asked.size(), ptr, bytes),
            "cuMemRangeGetAttributes");
  // [range-attributes]
  recordRange(run, label, expected, one, all, print);
}

ms::Verdict runManagedAdvisePrefetch(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  const std::uint64_t rangeBytes = *options.rangeBytes;
  const std::vector<int>& counts = options.batchCounts;
  mm::checkSizeOptions(options.sizeBytes, rangeBytes);  // a mistake is reported before a waiver

  // 1. The driver, a device, and what it supports of managed memory.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  const int ordinal = ms::deviceOrdinal(device);
  out << "Device " << ordinal << ": " << ms::deviceName(device) << '\n';
  mm::ManagedSupport support;
  support.managedMemory = ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  support.concurrentManagedAccess =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  support.pageableMemoryAccess =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  support.directManagedAccessFromHost =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
  support.pageableUsesHostPageTables =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
  support.hostNumaId = ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
  // cuMemPrefetchBatchAsync needs concurrent managed access on every device of the system.
  ms::check(cuDeviceGetCount(&support.deviceCount), "cuDeviceGetCount");
  for (int i = 0; i < support.deviceCount && support.firstDeviceWithoutConcurrentAccess < 0; ++i) {
    CUdevice other = 0;
    ms::check(cuDeviceGet(&other, i), "cuDeviceGet");
    if (!ms::deviceAttribute(other, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))
      support.firstDeviceWithoutConcurrentAccess = i;
  }
  out << "[1] " << mm::describeSupport(support) << '\n';
  if (const std::string reason = mm::waiverReason(support, ordinal); !reason.empty())
    throw ms::WaivedError(reason);

  // 2. Context and kernel as in 01, then A, B and C in managed memory.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
  // Never more managed memory than is free (an over-subscribed GPU evicts pages and can stall
  // every process on it), nor than the host can hold (A, B and C while their pages are there, and
  // step 8's pinned vector): the whole run, step 8's buffers included, is checked here, once.
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const mm::ManagedSizes sizes =
      mm::planManagedSizes(options.sizeBytes, kDefaultBytes, kMinBytes, rangeBytes, counts,
                           freeBytes, ms::hostMemoryAvailable());
  const std::size_t bytes = sizes.vectorBytes, count = bytes / sizeof(float);
  out << mm::describeSizes(sizes, freeBytes, totalBytes) << '\n';

  // [allocate]
  // One address each, valid on the host and on every device; no page exists before the first
  // touch. CU_MEM_ATTACH_GLOBAL: any stream of any device may use them.
  OwnedManagedMemory a, b, c;
  ms::check(cuMemAllocManaged(a.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  ms::check(cuMemAllocManaged(b.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  ms::check(cuMemAllocManaged(c.out(), bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  // A created stream, since cuMemPrefetchBatchAsync refuses the legacy NULL one. Declared after
  // the memory, it is drained before that memory is freed, also when an error unwinds.
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  // [allocate]
  mm::Checklist checks;
  const unsigned int grid = ms::residentGridSize(vecAdd, device, kBlockSize);
  const ms::VectorAddLaunch launch{vecAdd,  grid,    kBlockSize, stream.get(),
                                   a.get(), b.get(), c.get(),    count};
  const ManagedRun run{
      launch,  ordinal, support.deviceCount + 1, options.common, options.migrationIterations,
      &report, &checks, mm::pagingModel(support)};
  float *hostA = run.host(a.get()), *hostB = run.host(b.get()), *hostC = run.host(c.get());
  const auto addOnGpu = [&](std::size_t elements) {  // the launch of 01, on the first elements
    CUdeviceptr x = a.get(), y = b.get(), z = c.get();
    unsigned long long n = elements;
    void* params[] = {&x, &y, &z, &n};
    ms::check(
        cuLaunchKernel(vecAdd, grid, 1, 1, kBlockSize, 1, 1, 0, stream.get(), params, nullptr),
        "cuLaunchKernel");
  };

  // [pointer-attributes]
  // 3. What the driver says about an address: one cuPointerGetAttributes call, eight answers.
  const auto pointerAttributes = [](CUdeviceptr ptr) {
    mm::PointerAttributes p;
    CUpointer_attribute asked[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,    CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,     CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
        CU_POINTER_ATTRIBUTE_HOST_POINTER,   CU_POINTER_ATTRIBUTE_CONTEXT};
    void* answers[] = {&p.memoryType, &p.isManaged,     &p.deviceOrdinal, &p.rangeStart,
                       &p.rangeSize,  &p.devicePointer, &p.hostPointer,   &p.context};
    ms::check(cuPointerGetAttributes(8, asked, answers, ptr), "cuPointerGetAttributes");
    return p;
  };
  const mm::PointerAttributes atStart = pointerAttributes(a.get());
  // From an address inside, the driver finds the allocation: how allocators find their blocks.
  const CUdeviceptr middle = a.get() + bytes / 2;
  const mm::PointerAttributes inside = pointerAttributes(middle);
  // [pointer-attributes]
  reportPointerAttributes(run, atStart, inside, middle, context.get());

  // [advice]
  // 4. Advice moves nothing: it changes what happens at the next fault or prefetch. Each one is
  // read back; `expected` is what the advice so far implies (a new allocation has none).
  out << "\n[4] Advice on A, each read back by cuMemRangeGetAttribute(s) (x8, then x1)\n";
  const CUdeviceptr ptr = a.get();
  const CUmemLocation gpu = mm::deviceLocation(ordinal), host = mm::hostLocation();
  mm::ExpectedRange expected;
  expectRange(run, "fresh allocation (no advice)", ptr, bytes, expected);
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu), "cuMemAdvise");
  expected.preferred = gpu;
  expectRange(run, "SET_PREFERRED_LOCATION " + mm::describeLocation(gpu), ptr, bytes, expected);
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host), "cuMemAdvise");
  expected.preferred = host;
  expectRange(run, "SET_PREFERRED_LOCATION host", ptr, bytes, expected);
  // Not every system takes a host NUMA node; one that does may report it back as plain HOST.
  const CUmemLocation node = mm::hostNumaLocation(support.hostNumaId);
  const CUresult nodeAdvice =
      support.hostNumaId < 0 ? CUDA_ERROR_NOT_SUPPORTED
                             : cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, node);
  if (nodeAdvice == CUDA_SUCCESS) {
    expected.preferred = node;
    expectRange(run, "SET_PREFERRED_LOCATION " + mm::describeLocation(node), ptr, bytes, expected);
  } else {
    out << "  SET_PREFERRED_LOCATION host NUMA node " << support.hostNumaId << ": not accepted ("
        << ms::describeResult(nodeAdvice) << "), the preferred location stays host\n";
  }
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host), "cuMemAdvise");
  expected.preferred.reset();
  expectRange(run, "UNSET_PREFERRED_LOCATION", ptr, bytes, expected);
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu), "cuMemAdvise");
  expected.accessedBy = {ordinal};
  expectRange(run, "SET_ACCESSED_BY " + mm::describeLocation(gpu), ptr, bytes, expected);
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu), "cuMemAdvise");
  expected.accessedBy.clear();
  expectRange(run, "UNSET_ACCESSED_BY " + mm::describeLocation(gpu), ptr, bytes, expected);
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu), "cuMemAdvise");
  expected.readMostly = true;  // (the location of a read-mostly advice is ignored)
  expectRange(run, "SET_READ_MOSTLY", ptr, bytes, expected);
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu), "cuMemAdvise");
  expected.readMostly = false;
  expectRange(run, "UNSET_READ_MOSTLY", ptr, bytes, expected);

  // Different advice on the two halves. A query over a range reports a value only when every
  // page has it, else INVALID (a location), 0 (read-mostly) or "not listed" (accessed-by).
  const std::vector<mm::ByteRange> halves = mm::splitIntoChunks(bytes, 2, kChunkAlignment);
  const CUdeviceptr second = ptr + halves[1].offset;
  const std::size_t firstBytes = halves[0].bytes, secondBytes = halves[1].bytes;
  ms::check(cuMemAdvise(ptr, firstBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu), "cuMemAdvise");
  ms::check(cuMemAdvise(ptr, firstBytes, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu), "cuMemAdvise");
  ms::check(cuMemAdvise(ptr, firstBytes, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu), "cuMemAdvise");
  ms::check(cuMemAdvise(second, secondBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host),
            "cuMemAdvise");
  out << "  -- first half: preferred GPU, read-mostly, accessed-by; second: preferred host --\n";
  expectRange(run, "query the first half", ptr, firstBytes, {true, gpu, {ordinal}, {}});
  expectRange(run, "query the second half", second, secondBytes, {false, host, {}, {}});
  expectRange(run, "query the whole range (mixed values)", ptr, bytes, {});
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, gpu), "cuMemAdvise");
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu), "cuMemAdvise");
  ms::check(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu), "cuMemAdvise");
  expectRange(run, "all advice unset again", ptr, bytes, {});
  // [advice]

  // [prefetch]
  // 5. The CPU writes the inputs (its first touch puts their pages in host memory); prefetches
  // move all three vectors to the GPU before the kernel needs them, in the kernel's stream.
  out << "\n[5] cuMemPrefetchAsync: A, B, C to the GPU, compute, C back to the host\n";
  ms::fillVectorAddInputs(hostA, hostB, count, 2024);
  for (const CUdeviceptr vector : {a.get(), b.get(), c.get()})
    ms::check(cuMemPrefetchAsync(vector, bytes, gpu, 0, stream.get()), "cuMemPrefetchAsync");
  expectRange(run, "A after prefetch to the GPU", a.get(), bytes, mm::prefetchedTo(gpu));
  addOnGpu(count);
  ms::check(cuMemPrefetchAsync(c.get(), bytes, host, 0, stream.get()), "cuMemPrefetchAsync");
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
  // [prefetch]
  expectRange(run, "C after prefetch back to host", c.get(), bytes, mm::prefetchedTo(host));
  verifyOnHost(run, "GPU result read on the host after the round trip");

  // [batch-prefetch]
  // 6. New inputs, on the host. One call sends chunks 0-5 of A, B and C to the GPU and chunks 6-9
  // to the host; ranges in destination order, so each destination is one prefetchLocs entry.
  out << "\n[6] cuMemPrefetchBatchAsync: chunks 0-5 of A, B, C to the GPU, 6-9 to the host\n";
  ms::fillVectorAddInputs(hostA, hostB, count, 7);
  const auto chunks = mm::splitIntoChunks(bytes, kBatchChunks, kChunkAlignment);
  mm::PrefetchBatchBuilder builder;
  for (const CUdeviceptr vector : {a.get(), b.get(), c.get()}) {
    for (std::size_t i = 0; i < kDeviceChunks; ++i)
      builder.add(vector + chunks[i].offset, chunks[i].bytes, gpu);
  }
  for (const CUdeviceptr vector : {a.get(), b.get(), c.get()}) {
    for (std::size_t i = kDeviceChunks; i < kBatchChunks; ++i)
      builder.add(vector + chunks[i].offset, chunks[i].bytes, host);
  }
  mm::PrefetchBatch batch = builder.batch();
  out << "  " << mm::describeBatch(batch) << '\n';
  // The driver answers a broken index array with a bare CUDA_ERROR_INVALID_VALUE; checking the
  // rules first names the one that is broken.
  mm::validatePrefetchBatch(batch, stream.get());
  ms::check(cuMemPrefetchBatchAsync(batch.dptrs.data(), batch.sizes.data(), batch.dptrs.size(),
                                    batch.locations.data(), batch.locationStarts.data(),
                                    batch.locations.size(), 0, stream.get()),
            "cuMemPrefetchBatchAsync");
  // The GPU adds its share while the CPU adds the rest: concurrent managed access lets both
  // touch the same allocations at once.
  const std::size_t gpuElements = chunks[kDeviceChunks].offset / sizeof(float);
  addOnGpu(gpuElements);
  for (std::size_t i = gpuElements; i < count; ++i)
    hostC[i] = hostA[i] + hostB[i];
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
  // [batch-prefetch]
  expectBatchDestinations(run, batch, chunks, expectRange);
  verifyOnHost(run, "GPU share + CPU share read on the host");

  // [discard]
  // 7. C is about to be overwritten: its contents are dead. Told so, the driver may drop C's pages
  // instead of migrating them; C's values are indeterminate until it is written or prefetched
  // again. Keep the discard and every use of C in one stream.
  out << "\n[7] cuMemDiscardBatchAsync: C's contents are dead before the kernel overwrites it\n";
  CUdeviceptr dead[] = {c.get()};
  std::size_t deadBytes[] = {bytes};
  const CUresult discarded = cuMemDiscardBatchAsync(dead, deadBytes, 1, 0, stream.get());
  if (discarded != CUDA_ERROR_NOT_SUPPORTED)
    ms::check(discarded, "cuMemDiscardBatchAsync");
  ms::check(cuMemPrefetchAsync(c.get(), bytes, gpu, 0, stream.get()), "cuMemPrefetchAsync");
  addOnGpu(count);
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
  // [discard]
  if (discarded == CUDA_ERROR_NOT_SUPPORTED)
    out << "  not supported by this driver (" << ms::describeResult(discarded) << ")\n";
  expectRange(run, "C after discard + prefetch", c.get(), bytes, mm::prefetchedTo(gpu));
  verifyOnHost(run, "C written by the GPU after the discard");

  // 8. What each technique costs, on the same buffers (managedAdvisePrefetch_measure.cpp).
  ManagedRatios ratios;
  measureKernels(run, ratios, expectRange);
  measurePrefetchThroughput(run, ratios);
  measureBatchVersusSingle(run, sizes.spanBytes, rangeBytes, counts);
  measureDiscard(run);
  // 9. The verdict: every failed check is listed (what, expected, got).
  return reportRun(run, ratios, ms::deviceName(device), support, batch);
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "managedAdvisePrefetch",
      "Managed memory with the driver API: advice, prefetch, batch prefetch "
      "and discard, each checked, and what each costs.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4, at least 1M (default 1G, less if memory "
                      "is short; never more than fits in free memory)",
                      options.sizeBytes, kMinBytes);
  commandLine.addSize("range-size",
                      "bytes per range of the batch benchmark, whole pages up to 2M (default 64K)",
                      options.rangeBytes, 4096, 2ull << 20);
  commandLine.addIntegerList("batch-counts", "numbers of ranges K in that benchmark (16,256,4096)",
                             options.batchCounts, 1, 65536);
  commandLine.addInteger("migration-iterations",
                         "repetitions of the runs that move whole vectors (default 5)",
                         options.migrationIterations, 1, 1000);
  return ms::runSample(commandLine, options.common, argc, argv, [&](ms::Report& report) {
    return runManagedAdvisePrefetch(options, report);
  });
}
