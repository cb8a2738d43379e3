/**
 * @file managedAdvisePrefetch.cpp
 * @brief Managed memory with the CUDA driver API: advice, prefetch, batch prefetch, range and
 *        pointer attributes, and what demand paging costs compared with a prefetch.
 *
 * Managed memory (cuMemAllocManaged) is one address valid on the host and on every GPU. Its pages
 * live in one place at a time and move on demand: the first access from the "wrong" processor
 * faults, the driver migrates the page, the access is replayed. That is convenient and slow. This
 * sample keeps 01_vectorAddDrv's C = A + B and shows the three tools that make managed memory
 * fast, checks that each does what it says, and measures what each costs:
 *
 * 1. **Capabilities.** cuMemAllocManaged needs CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY; prefetching to
 *    a GPU, most advice and cuMemPrefetchBatchAsync need CONCURRENT_MANAGED_ACCESS (on every
 *    device for the batch call). Without them the sample is WAIVED.
 * 2. **Allocation behind a guard.** The three vectors and the benchmark span are ManagedBuffer
 *    objects (managed_buffer.hpp): a request of 0 bytes or of more than the free device memory
 *    is refused before the driver is called, and a ManagedMemoryBudget keeps their *sum* within
 *    the free memory, because cuMemGetInfo counts managed pages only once they are on the GPU and
 *    over-subscribing managed memory can stall a shared GPU.
 * 3. **cuPointerGetAttributes** on the managed pointer: is-managed, device ordinal, the
 *    allocation's start and size (also from an address inside it), context, host and device
 *    aliases.
 * 4. **Advice (cuMemAdvise, CUmemLocation form)**, each one read back with the eight
 *    cuMemRangeGetAttribute queries and with one cuMemRangeGetAttributes call: preferred location
 *    (device, host, host NUMA node where the driver accepts it), accessed-by, read-mostly, each
 *    set and unset; then different advice on the two halves, to show that a query over a range
 *    with mixed values answers "invalid / not set" rather than the value of the first page.
 * 5. **cuMemPrefetchAsync** of A, B and C to the GPU, the kernel, C back to the host; the last
 *    prefetch location is read back and C is checked exactly on the host.
 * 6. **cuMemPrefetchBatchAsync**: the first 60 % of A, B and C (chunks 0-5 of ten) to the GPU and
 *    the rest (chunks 6-9) to the host in *one* call, on a created stream (the driver rejects the
 *    legacy NULL stream). The arrays are validated first (managed_logic.hpp) with a clear message
 *    per rule. The GPU then adds its share while the CPU adds the rest at the same time; every
 *    range's last prefetch location is read back and all of C is checked.
 * 7. **cuMemDiscardBatchAsync**: declares C's contents dead, so the next prefetch to the GPU need
 *    not copy anything; the prefetch of live and of discarded data are timed.
 * 8. **Measured**, on the same buffers: the kernel on (a) managed memory that faults its way to
 *    the GPU (demand paging), (b) managed memory prefetched to the GPU, (c) cuMemAlloc memory,
 *    (d) managed memory left on the host but mapped for the GPU by advice; prefetch throughput
 *    against a pinned cuMemcpy of the same size; one batch of K small ranges against K single
 *    prefetches (K = 16, 256, 4096).
 *
 * The verdict is PASS when every computed element is exact and every attribute read back is what
 * the advice implies; each mismatch prints the attribute, the expected and the actual value.
 * The bandwidth ratios are reported with what to expect, not asserted: they depend on the link.
 */
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "managed_buffer.hpp"
#include "managed_memory.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace mm = memsamples::managed;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // per vector
constexpr std::uint64_t kMinBytes = 1ull << 20;      // ten 64 KiB-aligned chunks must fit
constexpr std::uint64_t kChunkAlignment = 64ull << 10;
constexpr std::size_t kBatchChunks = 10;  // the batch example cuts each vector in ten chunks,
constexpr std::size_t kDeviceChunks = 6;  // the first six go to the GPU, the last four stay
constexpr std::uint64_t kDefaultRangeBytes = 64ull << 10;
constexpr std::array<int, 3> kDefaultBatchCounts = {16, 256, 4096};
constexpr std::uint32_t kPoison = 0xFFFFFFFFu;  // a NaN: never equal to A + B
constexpr unsigned char kSpanPattern = 0x5A;
constexpr int kBlockSize = 256;  // threads per block of every VecAdd_kernel launch

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  std::optional<std::uint64_t> rangeBytes;
  std::vector<int> batchCounts;
  int migrationIterations = 5;
};

/// Everything the steps share.
struct Session {
  CUdevice device = 0;
  int ordinal = 0;
  int accessedBySlots = 2;  // devices + 1: room for every answer ACCESSED_BY can give
  CUfunction kernel = nullptr;
  unsigned int grid = 0;
  CUstream stream = nullptr;
  std::ostream* out = nullptr;
  mm::Checklist* checks = nullptr;
};

// ------------------------------------------------------------------------------- step 1: support

struct ManagedSupport {
  int managedMemory = 0;
  int concurrentManagedAccess = 0;
  int pageableMemoryAccess = 0;
  int directManagedAccessFromHost = 0;
  int hostNumaId = -1;
  int deviceCount = 0;
  int firstDeviceWithoutConcurrentAccess = -1;
};

ManagedSupport querySupport(CUdevice device) {
  ManagedSupport support;
  support.managedMemory = ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  support.concurrentManagedAccess =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  support.pageableMemoryAccess =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  support.directManagedAccessFromHost =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
  support.hostNumaId = ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
  ms::check(cuDeviceGetCount(&support.deviceCount), "cuDeviceGetCount");
  // cuMemPrefetchBatchAsync requires concurrent managed access on *every* device of the system.
  for (int i = 0; i < support.deviceCount; ++i) {
    CUdevice other = 0;
    ms::check(cuDeviceGet(&other, i), "cuDeviceGet");
    if (!ms::deviceAttribute(other, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)) {
      support.firstDeviceWithoutConcurrentAccess = i;
      break;
    }
  }
  return support;
}

// ------------------------------------------------------------------------ small shared helpers

std::string hex(std::uint64_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << value;
  return text.str();
}

std::string mismatchText(const ms::VectorAddCheck& result) {
  if (result.mismatches == 0)
    return "0 mismatches";
  std::ostringstream text;
  text << result.mismatches << " mismatches (first at element " << result.firstBad << ": expected "
       << result.expected << ", got " << result.actual << ")";
  return text.str();
}

/// Checks every element of C against A + B on the host and records the result.
bool verifyOnHost(const Session& s, const mm::ManagedBuffer& a, const mm::ManagedBuffer& b,
                  const mm::ManagedBuffer& c, const std::string& what) {
  const std::size_t count = c.size() / sizeof(float);
  const ms::VectorAddCheck result =
      ms::checkVectorAdd(a.as<float>(), b.as<float>(), c.as<float>(), count);
  s.checks->expect(result.mismatches == 0, what, "C == A + B everywhere", mismatchText(result));
  *s.out << "  " << what << ": "
         << (result.mismatches == 0 ? "C == A + B, exact" : mismatchText(result)) << '\n';
  return result.mismatches == 0;
}

/// Reads all range attributes individually and at once, compares both with @p expected.
void expectRange(const Session& s, const std::string& label, CUdeviceptr ptr, std::size_t bytes,
                 const mm::ExpectedRange& expected, bool print = true) {
  const mm::RangeAttributes one = mm::readRangeAttributes(ptr, bytes, s.accessedBySlots);
  const mm::RangeAttributes all = mm::readRangeAttributesAtOnce(ptr, bytes, s.accessedBySlots);
  const bool asAdvised =
      s.checks->expectAttributes(label, mm::compareRangeAttributes(expected, one));
  const bool consistent =
      s.checks->expectAttributes(label + " (cuMemRangeGetAttributes vs cuMemRangeGetAttribute)",
                                 mm::differingAttributes(one, all));
  if (print || !asAdvised || !consistent) {
    *s.out << "  " << std::left << std::setw(44) << label << std::right << ' '
           << mm::describeRangeAttributes(one) << (asAdvised && consistent ? "" : "  <- MISMATCH")
           << '\n';
  }
}

/// VecAdd_kernel(a, b, c, count) on the session's stream, with a grid that fills the device.
void launchVectorAdd(const Session& s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                     std::size_t count) {
  unsigned long long n = count;  // the kernel's parameter types, exactly
  void* args[] = {&a, &b, &c, &n};
  ms::check(cuLaunchKernel(s.kernel, s.grid, 1, 1, kBlockSize, 1, 1, 0, s.stream, args, nullptr),
            "cuLaunchKernel");
}

/// A timing event in the current context.
ms::OwnedEvent createEvent() {
  ms::OwnedEvent event;
  ms::check(cuEventCreate(event.out(), CU_EVENT_DEFAULT), "cuEventCreate");
  return event;
}

void poison(CUdeviceptr ptr, std::size_t bytes, CUstream stream) {
  ms::check(cuMemsetD32Async(ptr, kPoison, bytes / sizeof(std::uint32_t), stream),
            "cuMemsetD32Async");
}

void prefetchAll(const std::vector<const mm::ManagedBuffer*>& buffers, const CUmemLocation& where,
                 CUstream stream) {
  for (const mm::ManagedBuffer* buffer : buffers)
    mm::prefetchAsync(buffer->get(), buffer->size(), where, stream);
}

// ----------------------------------------------------------------------- step 2: the guard

void demonstrateGuard(const Session& s, std::size_t totalBytes) {
  std::ostream& out = *s.out;
  out << "\n[2] Managed allocations behind the free-memory guard and the budget\n";

  // The guard refuses 0 (the driver would answer CUDA_ERROR_INVALID_VALUE) and anything larger
  // than free memory, before calling the driver: no failing call is made, so the run stays
  // clean under compute-sanitizer. The oversized request is larger than the whole device, so it
  // is above free memory whatever other processes do meanwhile.
  const std::uint64_t requests[] = {0, static_cast<std::uint64_t>(totalBytes) + (2ull << 20)};
  for (std::uint64_t request : requests) {
    std::string message;
    try {
      mm::ManagedBuffer refused(static_cast<std::size_t>(request));
    } catch (const mm::ManagedAllocationRefused& error) {
      message = error.what();
    }
    out << "  ManagedBuffer(" << ms::formatBytes(request)
        << "): " << (message.empty() ? "ALLOCATED (guard failed)" : "refused: " + message) << '\n';
    s.checks->expect(!message.empty(), "guard on ManagedBuffer(" + ms::formatBytes(request) + ")",
                     "refused", message.empty() ? "allocated" : "refused");
  }
}

// -------------------------------------------------------------------- step 3: pointer attributes

void showPointerAttributes(const Session& s, const mm::ManagedBuffer& a, CUcontext context) {
  std::ostream& out = *s.out;
  out << "\n[3] cuPointerGetAttributes on A (" << hex(a.get()) << ", " << ms::formatBytes(a.size())
      << ")\n";
  const mm::PointerAttributes p = mm::readPointerAttributes(a.get());
  out << "  memory type      " << mm::memoryTypeName(p.memoryType)
      << " (for managed memory this says nothing about where the pages are)\n"
      << "  is managed       " << p.isManaged << '\n'
      << "  device ordinal   " << p.deviceOrdinal << " (the device of the allocating context)\n"
      << "  range            start " << hex(p.rangeStart) << ", size " << p.rangeSize << " bytes\n"
      << "  device pointer   " << hex(p.devicePointer) << ", host pointer "
      << hex(reinterpret_cast<std::uintptr_t>(p.hostPointer)) << " (one address everywhere)\n";
  mm::Checklist& checks = *s.checks;
  checks.expect(p.isManaged == 1, "CU_POINTER_ATTRIBUTE_IS_MANAGED", "1",
                std::to_string(p.isManaged));
  checks.expect(p.deviceOrdinal == s.ordinal, "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL",
                std::to_string(s.ordinal), std::to_string(p.deviceOrdinal));
  // The range the driver tracks must contain the whole allocation (for cuMemAllocManaged it is
  // the allocation itself).
  const bool contains = p.rangeStart <= a.get() && p.rangeStart + p.rangeSize >= a.get() + a.size();
  checks.expect(contains, "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/_SIZE",
                "a range containing [" + hex(a.get()) + ", " + hex(a.get() + a.size()) + ")",
                "[" + hex(p.rangeStart) + ", " + hex(p.rangeStart + p.rangeSize) + ")");
  checks.expect(p.devicePointer == a.get(), "CU_POINTER_ATTRIBUTE_DEVICE_POINTER", hex(a.get()),
                hex(p.devicePointer));
  checks.expect(p.hostPointer == a.as<void>(), "CU_POINTER_ATTRIBUTE_HOST_POINTER", hex(a.get()),
                hex(reinterpret_cast<std::uintptr_t>(p.hostPointer)));
  out << "  context          "
      << (p.context == context ? "the sample's context" : "another context") << '\n';

  // An address inside the allocation leads back to its start: how allocators find their blocks.
  const CUdeviceptr inside = a.get() + a.size() / 2;
  const mm::PointerAttributes q = mm::readPointerAttributes(inside);
  out << "  from " << hex(inside) << " (the middle): range start " << hex(q.rangeStart) << ", size "
      << q.rangeSize << " bytes\n";
  checks.expect(q.rangeStart == p.rangeStart && q.rangeSize == p.rangeSize,
                "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/_SIZE of A + size/2",
                "the same range as A's",
                "[" + hex(q.rangeStart) + ", " + hex(q.rangeStart + q.rangeSize) + ")");
}

// ----------------------------------------------------------------------------- step 4: advice

void adviceRoundTrips(const Session& s, const mm::ManagedBuffer& a, int hostNumaId) {
  std::ostream& out = *s.out;
  out << "\n[4] Advice on A, read back with cuMemRangeGetAttribute (x8) and "
         "cuMemRangeGetAttributes (x1)\n";
  const CUdeviceptr ptr = a.get();
  const std::size_t bytes = a.size();
  const CUmemLocation gpu = mm::deviceLocation(s.ordinal);
  const CUmemLocation host = mm::hostLocation();
  mm::ExpectedRange expected;  // what the advice so far implies; a fresh range has none

  expectRange(s, "fresh allocation (no advice)", ptr, bytes, expected);

  mm::advise(ptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu);
  expected.preferred = gpu;
  expectRange(s, "SET_PREFERRED_LOCATION " + mm::describeLocation(gpu), ptr, bytes, expected);

  mm::advise(ptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host);
  expected.preferred = host;
  expectRange(s, "SET_PREFERRED_LOCATION host", ptr, bytes, expected);

  if (hostNumaId >= 0) {
    const CUmemLocation node = mm::hostNumaLocation(hostNumaId);
    const CUresult result = mm::tryAdvise(ptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, node);
    if (result == CUDA_SUCCESS) {
      // Measured on a one-node H200 VM (driver 580): the advice is accepted but reads back as
      // plain HOST, since there host memory has nothing to choose between. With several nodes
      // the node itself is expected back.
      const bool oneHostNode = ms::onlineHostNumaNodes("/sys").size() <= 1;
      expected.preferred = oneHostNode ? host : node;
      if (oneHostNode) {
        out << "  (one host NUMA node online: the driver reports a HOST_NUMA preference as HOST)\n";
      }
      expectRange(s, "SET_PREFERRED_LOCATION " + mm::describeLocation(node), ptr, bytes, expected);
    } else {
      out << "  SET_PREFERRED_LOCATION " << mm::describeLocation(node)
          << ": not accepted on this system (" << ms::describeResult(result)
          << "); the preferred location stays host\n";
    }
  } else {
    out << "  SET_PREFERRED_LOCATION host NUMA node: skipped, the driver reports no host NUMA "
           "node for this device (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = -1)\n";
  }

  mm::advise(ptr, bytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host);
  expected.preferred.reset();
  expectRange(s, "UNSET_PREFERRED_LOCATION", ptr, bytes, expected);

  mm::advise(ptr, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu);
  expected.accessedBy = {s.ordinal};
  expectRange(s, "SET_ACCESSED_BY " + mm::describeLocation(gpu), ptr, bytes, expected);

  mm::advise(ptr, bytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu);
  expected.accessedBy.clear();
  expectRange(s, "UNSET_ACCESSED_BY " + mm::describeLocation(gpu), ptr, bytes, expected);

  mm::advise(ptr, bytes, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu);  // the location is ignored
  expected.readMostly = true;
  expectRange(s, "SET_READ_MOSTLY", ptr, bytes, expected);

  mm::advise(ptr, bytes, CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu);
  expected.readMostly = false;
  expectRange(s, "UNSET_READ_MOSTLY", ptr, bytes, expected);

  // Different advice on the two halves. A query over the whole range reports a value only when
  // every page has it: otherwise INVALID (preferred location), 0 (read-mostly) or "not listed"
  // (accessed-by). It never reports the first page's value.
  const std::vector<mm::ByteRange> halves = mm::splitIntoChunks(bytes, 2, kChunkAlignment);
  const CUdeviceptr first = ptr + halves[0].offset, second = ptr + halves[1].offset;
  mm::advise(first, halves[0].bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu);
  mm::advise(first, halves[0].bytes, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu);
  mm::advise(first, halves[0].bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu);
  mm::advise(second, halves[1].bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host);
  out << "  -- first half: preferred " << mm::describeLocation(gpu)
      << ", read-mostly, accessed-by; second half: preferred host --\n";
  mm::ExpectedRange firstHalf;
  firstHalf.preferred = gpu;
  firstHalf.readMostly = true;
  firstHalf.accessedBy = {s.ordinal};
  mm::ExpectedRange secondHalf;
  secondHalf.preferred = host;
  expectRange(s, "query the first half", first, halves[0].bytes, firstHalf);
  expectRange(s, "query the second half", second, halves[1].bytes, secondHalf);
  expectRange(s, "query the whole range (mixed values)", ptr, bytes, mm::ExpectedRange{});

  // Leave A without advice for the measurements.
  mm::advise(ptr, bytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, gpu);
  mm::advise(ptr, bytes, CU_MEM_ADVISE_UNSET_READ_MOSTLY, gpu);
  mm::advise(ptr, bytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu);
  expectRange(s, "all advice unset again", ptr, bytes, mm::ExpectedRange{});
}

// --------------------------------------------------------------------- step 5: single prefetch

void prefetchRoundTrip(const Session& s, const mm::ManagedBuffer& a, const mm::ManagedBuffer& b,
                       const mm::ManagedBuffer& c) {
  std::ostream& out = *s.out;
  out << "\n[5] cuMemPrefetchAsync: A, B, C to the GPU, compute, C back to the host\n";
  const std::size_t count = c.size() / sizeof(float);
  // The CPU writes the inputs: first touch places their pages in host memory.
  ms::fillVectorAddInputs(a.as<float>(), b.as<float>(), count, 2024);
  const CUmemLocation gpu = mm::deviceLocation(s.ordinal);
  prefetchAll({&a, &b, &c}, gpu, s.stream);
  mm::ExpectedRange onGpu;
  onGpu.lastPrefetch = gpu;
  expectRange(s, "A after prefetch to " + mm::describeLocation(gpu), a.get(), a.size(), onGpu);
  launchVectorAdd(s, a.get(), b.get(), c.get(), count);
  mm::prefetchAsync(c.get(), c.size(), mm::hostLocation(), s.stream);
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  mm::ExpectedRange onHost;
  onHost.lastPrefetch = mm::hostLocation();
  expectRange(s, "C after prefetch back to host", c.get(), c.size(), onHost);
  verifyOnHost(s, a, b, c, "GPU result read on the host after the round trip");
}

// ---------------------------------------------------------------------- step 6: batch prefetch

void batchPrefetchSplitWork(const Session& s, const mm::ManagedBuffer& a,
                            const mm::ManagedBuffer& b, const mm::ManagedBuffer& c,
                            ms::JsonObject& json) {
  std::ostream& out = *s.out;
  out << "\n[6] cuMemPrefetchBatchAsync: chunks 0-5 of A, B, C to the GPU, chunks 6-9 to the "
         "host, one call\n";
  const std::size_t count = c.size() / sizeof(float);
  ms::fillVectorAddInputs(a.as<float>(), b.as<float>(), count, 7);  // new inputs, on the host
  const std::vector<mm::ByteRange> chunks =
      mm::splitIntoChunks(c.size(), kBatchChunks, kChunkAlignment);
  const CUmemLocation gpu = mm::deviceLocation(s.ordinal);
  const CUmemLocation host = mm::hostLocation();

  // Ranges in destination order, so that each destination is one entry of prefetchLocs.
  mm::PrefetchBatchBuilder builder;
  for (bool toGpu : {true, false}) {
    for (const mm::ManagedBuffer* buffer : {&a, &b, &c}) {
      for (std::size_t i = 0; i < chunks.size(); ++i) {
        if ((i < kDeviceChunks) == toGpu)
          builder.add(buffer->get() + chunks[i].offset, chunks[i].bytes, toGpu ? gpu : host);
      }
    }
  }
  const mm::PrefetchBatch& batch = builder.batch();
  out << "  " << batch.dptrs.size() << " ranges; prefetchLocs = {";
  for (std::size_t k = 0; k < batch.locations.size(); ++k)
    out << (k ? ", " : "") << mm::describeLocation(batch.locations[k]);
  out << "}, prefetchLocIdxs = {";
  for (std::size_t k = 0; k < batch.locationStarts.size(); ++k)
    out << (k ? ", " : "") << batch.locationStarts[k];
  out << "}, numPrefetchLocs = " << batch.locations.size() << '\n';

  // What the wrapper refuses before the driver sees it. The driver itself answers
  // CUDA_ERROR_INVALID_VALUE for the legacy NULL stream (measured on the H200); the wrapper says
  // why instead, and no failing call reaches the driver.
  std::string nullStreamMessage, badIndexMessage;
  try {
    mm::prefetchBatchAsync(batch, nullptr);
  } catch (const mm::BatchPrefetchError& error) {
    nullStreamMessage = error.what();
  }
  mm::PrefetchBatch broken = batch;
  broken.locations.push_back(host);
  broken.locationStarts.push_back(broken.locationStarts.back());
  try {
    mm::prefetchBatchAsync(broken, s.stream);
  } catch (const mm::BatchPrefetchError& error) {
    badIndexMessage = error.what();
  }
  out << "  wrapper, legacy NULL stream:   " << nullStreamMessage << '\n'
      << "  wrapper, repeated start index: " << badIndexMessage << '\n';
  s.checks->expect(!nullStreamMessage.empty(), "batch wrapper on the NULL stream", "refused",
                   "enqueued");
  s.checks->expect(!badIndexMessage.empty(), "batch wrapper with prefetchLocIdxs {0, 18, 18}",
                   "refused", "enqueued");

  // The real call, on the created stream. The GPU adds its share while the CPU adds the rest;
  // concurrent managed access lets both touch the same allocations at once.
  mm::prefetchBatchAsync(batch, s.stream);
  const std::size_t gpuElements = chunks[kDeviceChunks].offset / sizeof(float);
  launchVectorAdd(s, a.get(), b.get(), c.get(), gpuElements);
  const float* x = a.as<float>();
  const float* y = b.as<float>();
  float* z = c.as<float>();
  for (std::size_t i = gpuElements; i < count; ++i)
    z[i] = x[i] + y[i];
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");

  for (std::size_t i = 0; i < batch.dptrs.size(); ++i) {
    const std::size_t k =
        std::upper_bound(batch.locationStarts.begin(), batch.locationStarts.end(), i) -
        batch.locationStarts.begin() - 1;
    mm::ExpectedRange expected;
    expected.lastPrefetch = batch.locations[k];
    expectRange(s, "batch range " + std::to_string(i), batch.dptrs[i], batch.sizes[i], expected,
                false);
  }
  out << "  every range reads back its own destination as LAST_PREFETCH_LOCATION ("
      << batch.dptrs.size() << " ranges checked); chunk 0 and chunk 9 of C:\n";
  mm::ExpectedRange firstChunk;
  firstChunk.lastPrefetch = gpu;
  mm::ExpectedRange lastChunk;
  lastChunk.lastPrefetch = host;
  expectRange(s, "C chunk 0", c.get() + chunks.front().offset, chunks.front().bytes, firstChunk);
  expectRange(s, "C chunk 9", c.get() + chunks.back().offset, chunks.back().bytes, lastChunk);
  expectRange(s, "all of C (mixed destinations)", c.get(), c.size(), mm::ExpectedRange{});
  verifyOnHost(s, a, b, c, "GPU share + CPU share read on the host");

  json.set("batchRanges", static_cast<std::uint64_t>(batch.dptrs.size()))
      .set("batchLocations", static_cast<std::uint64_t>(batch.locations.size()));
}

// ---------------------------------------------------------------------------- step 7: discard

void discardAndPrefetch(const Session& s, const mm::ManagedBuffer& a, const mm::ManagedBuffer& b,
                        const mm::ManagedBuffer& c, int repetitions, ms::JsonObject& json) {
  std::ostream& out = *s.out;
  out << "\n[7] cuMemDiscardBatchAsync: C's contents are dead before the kernel overwrites it\n";
  const CUmemLocation gpu = mm::deviceLocation(s.ordinal);
  const std::vector<CUdeviceptr> ranges = {c.get()};
  const std::vector<std::size_t> sizes = {c.size()};
  std::vector<double> liveMs, discardedMs;
  for (int rep = 0; rep < repetitions; ++rep) {
    for (bool discard : {false, true}) {
      // C starts on the host each time. Moving it there copies its pages back from the GPU, so
      // it holds data again (the values do not matter: the kernel overwrites C afterwards).
      mm::prefetchAsync(c.get(), c.size(), mm::hostLocation(), s.stream);
      if (discard) {
        try {
          mm::discardBatchAsync(ranges, sizes, s.stream);
        } catch (const ms::CudaError& error) {
          if (error.result() != CUDA_ERROR_NOT_SUPPORTED)
            throw;
          out << "  skipped, not supported by this driver: " << error.what() << '\n';
          return;
        }
      }
      ms::OwnedEvent start = createEvent(), stop = createEvent();
      ms::check(cuEventRecord(start.get(), s.stream), "cuEventRecord");
      mm::prefetchAsync(c.get(), c.size(), gpu, s.stream);
      ms::check(cuEventRecord(stop.get(), s.stream), "cuEventRecord");
      ms::check(cuEventSynchronize(stop.get()), "cuEventSynchronize");
      float elapsedMs = 0;
      ms::check(cuEventElapsedTime(&elapsedMs, start.get(), stop.get()), "cuEventElapsedTime");
      (discard ? discardedMs : liveMs).push_back(elapsedMs);
    }
  }
  const ms::TimingStats live = ms::summarizeTimings(liveMs);
  const ms::TimingStats dead = ms::summarizeTimings(discardedMs);
  out << std::fixed << std::setprecision(3) << "  prefetch of C (" << ms::formatBytes(c.size())
      << ") host -> GPU: live data " << live.medianMs << " ms, after discard " << dead.medianMs
      << " ms (median of " << repetitions << ").\n"
      << "  Discarded pages hold nothing worth keeping, so the driver may populate them on the "
         "GPU instead of copying them.\n";
  // The discarded C now holds indeterminate values; the kernel overwrites all of it.
  launchVectorAdd(s, a.get(), b.get(), c.get(), c.size() / sizeof(float));
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  mm::ExpectedRange onGpu;
  onGpu.lastPrefetch = gpu;
  expectRange(s, "C after discard + prefetch", c.get(), c.size(), onGpu);
  verifyOnHost(s, a, b, c, "C written by the GPU after the discard");
  json.set("prefetchLiveMs", live.medianMs).set("prefetchDiscardedMs", dead.medianMs);
}

// ----------------------------------------------------------------------- step 8: measurements

/// The figures the issue asks for, repeated in the summary.
struct Ratios {
  double prefetchedOverDevice = 0;  ///< (b)/(c) kernel bandwidth
  double pagingSlowdown = 0;        ///< (a)/(b) kernel time
  double prefetchOverPinned = 0;    ///< prefetch host -> GPU / pinned cuMemcpyHtoD
};

struct KernelRow {
  const char* label;
  ms::TimingStats timing;
  double gbps = 0;
};

void printKernelRow(std::ostream& out, const KernelRow& row) {
  out << "  " << std::left << std::setw(60) << row.label << std::right << std::fixed
      << std::setprecision(1) << std::setw(9) << row.gbps << " GB/s  median "
      << std::setprecision(3) << row.timing.medianMs << " ms\n";
}

/// (a) demand paging, (b) prefetched, (d) advised remote mapping, (c) cuMemAlloc.
void measureKernels(const Session& s, const Options& options, const mm::ManagedBuffer& a,
                    const mm::ManagedBuffer& b, const mm::ManagedBuffer& c, ms::JsonObject& json,
                    Ratios& ratios) {
  std::ostream& out = *s.out;
  const std::size_t bytes = c.size();
  const std::size_t count = bytes / sizeof(float);
  const double moved = 3.0 * static_cast<double>(bytes);  // reads A and B, writes C
  const int warmup = options.common.warmup;
  const int iterations = options.common.iterations;
  const CUmemLocation gpu = mm::deviceLocation(s.ordinal);
  const CUmemLocation host = mm::hostLocation();
  const auto kernel = [&](CUdeviceptr x, CUdeviceptr y, CUdeviceptr z) {
    launchVectorAdd(s, x, y, z, count);
  };
  out << "\n[8a] Kernel C = A + B on " << ms::formatBytes(bytes)
      << " vectors (3 x size bytes per launch)\n";

  // (a) Demand paging: before each launch A, B and C are moved to the host (untimed), so the
  // timed kernel faults every page over to the GPU.
  poison(c.get(), bytes, s.stream);
  std::vector<double> pagingMs;
  for (int rep = -1; rep < options.migrationIterations; ++rep) {  // rep -1: warm-up
    prefetchAll({&a, &b, &c}, host, s.stream);
    ms::OwnedEvent start = createEvent(), stop = createEvent();
    ms::check(cuEventRecord(start.get(), s.stream), "cuEventRecord");
    kernel(a.get(), b.get(), c.get());
    ms::check(cuEventRecord(stop.get(), s.stream), "cuEventRecord");
    ms::check(cuEventSynchronize(stop.get()), "cuEventSynchronize");
    float elapsedMs = 0;
    ms::check(cuEventElapsedTime(&elapsedMs, start.get(), stop.get()), "cuEventElapsedTime");
    if (rep >= 0)
      pagingMs.push_back(elapsedMs);
  }
  KernelRow paging{"(a) managed, demand paging (pages start on the host)",
                   ms::summarizeTimings(pagingMs)};
  verifyOnHost(s, a, b, c, "(a) result");

  // (b) Prefetched: one prefetch, then the kernel finds every page resident.
  poison(c.get(), bytes, s.stream);
  prefetchAll({&a, &b, &c}, gpu, s.stream);
  KernelRow prefetched{
      "(b) managed, prefetched to the GPU",
      ms::timeOnStream(s.stream, warmup, iterations, [&] { kernel(a.get(), b.get(), c.get()); })};
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  verifyOnHost(s, a, b, c, "(b) result");

  // (c) The reference: ordinary device memory.
  ms::OwnedDeviceMemory da, db, dc;
  for (ms::OwnedDeviceMemory* buffer : {&da, &db, &dc})
    ms::check(cuMemAlloc(buffer->out(), bytes), "cuMemAlloc");
  ms::check(cuMemcpyAsync(da.get(), a.get(), bytes, s.stream), "cuMemcpyAsync");
  ms::check(cuMemcpyAsync(db.get(), b.get(), bytes, s.stream), "cuMemcpyAsync");
  poison(dc.get(), bytes, s.stream);
  KernelRow device{"(c) cuMemAlloc device memory (reference)",
                   ms::timeOnStream(s.stream, warmup, iterations,
                                    [&] { kernel(da.get(), db.get(), dc.get()); })};
  poison(c.get(), bytes, s.stream);
  ms::check(cuMemcpyAsync(c.get(), dc.get(), bytes, s.stream), "cuMemcpyAsync");
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  verifyOnHost(s, a, b, c, "(c) result (copied into C)");

  // (d) Advice instead of migration: pages stay in host memory and the GPU maps them, so the
  // kernel reads and writes across the bus without a single fault.
  for (const mm::ManagedBuffer* buffer : {&a, &b, &c}) {
    mm::advise(buffer->get(), bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host);
    mm::advise(buffer->get(), bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu);
  }
  poison(c.get(), bytes, s.stream);
  prefetchAll({&a, &b, &c}, host, s.stream);
  mm::ExpectedRange advised;
  advised.preferred = host;
  advised.accessedBy = {s.ordinal};
  advised.lastPrefetch = host;
  expectRange(s, "A with preferred host + accessed-by GPU", a.get(), bytes, advised);
  KernelRow remote{"(d) managed, kept on the host, GPU-mapped by advice",
                   ms::timeOnStream(s.stream, std::min(warmup, 1),
                                    std::min(iterations, options.migrationIterations),
                                    [&] { kernel(a.get(), b.get(), c.get()); })};
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  verifyOnHost(s, a, b, c, "(d) result");
  for (const mm::ManagedBuffer* buffer : {&a, &b, &c}) {
    mm::advise(buffer->get(), bytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host);
    mm::advise(buffer->get(), bytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu);
  }

  for (KernelRow* row : {&paging, &prefetched, &device, &remote}) {
    row->gbps = ms::gigabytesPerSecond(moved, row->timing.medianMs);
    printKernelRow(out, *row);
  }
  const double prefetchedOverDevice = prefetched.gbps / device.gbps;
  const double pagingSlowdown = paging.timing.medianMs / prefetched.timing.medianMs;
  out << std::setprecision(3) << "  (b)/(c) = " << prefetchedOverDevice
      << " (expected >= 0.95 on an H200: resident managed pages are ordinary device memory)\n"
      << std::setprecision(1) << "  demand paging is " << pagingSlowdown
      << "x slower than the prefetched run; (d) runs at " << std::setprecision(3)
      << remote.gbps / device.gbps << " of (c), bounded by the host link\n";
  json.set("kernelPagingMs", paging.timing.medianMs)
      .set("kernelPagingGBps", paging.gbps)
      .set("kernelPrefetchedMs", prefetched.timing.medianMs)
      .set("kernelPrefetchedGBps", prefetched.gbps)
      .set("kernelDeviceMs", device.timing.medianMs)
      .set("kernelDeviceGBps", device.gbps)
      .set("kernelRemoteMs", remote.timing.medianMs)
      .set("kernelRemoteGBps", remote.gbps)
      .set("prefetchedOverDevice", prefetchedOverDevice)
      .set("demandPagingSlowdown", pagingSlowdown);
  ratios.prefetchedOverDevice = prefetchedOverDevice;
  ratios.pagingSlowdown = pagingSlowdown;
}

/// Prefetch throughput of one whole vector, against pinned copies of the same size.
void measurePrefetchThroughput(const Session& s, const Options& options, const mm::ManagedBuffer& a,
                               ms::JsonObject& json, Ratios& ratios) {
  std::ostream& out = *s.out;
  const std::size_t bytes = a.size();
  const CUmemLocation gpu = mm::deviceLocation(s.ordinal);
  out << "\n[8b] Prefetch throughput, " << ms::formatBytes(bytes)
      << " (A starts on the GPU and moves GPU -> host -> GPU each repetition)\n";
  const int warmup = options.common.warmup;
  const int iterations = options.common.iterations;
  const std::size_t total = static_cast<std::size_t>(warmup + iterations);
  std::vector<ms::OwnedEvent> marks(3 * total);
  for (ms::OwnedEvent& mark : marks)
    mark = createEvent();
  // A known start: A entirely on the GPU. The step before left it on the host, where the first
  // GPU -> host prefetch would move nothing and, with --warmup 0, time a no-op.
  mm::prefetchAsync(a.get(), bytes, gpu, s.stream);
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  for (std::size_t i = 0; i < total; ++i) {
    ms::check(cuEventRecord(marks[3 * i].get(), s.stream), "cuEventRecord");
    mm::prefetchAsync(a.get(), bytes, mm::hostLocation(), s.stream);
    ms::check(cuEventRecord(marks[3 * i + 1].get(), s.stream), "cuEventRecord");
    mm::prefetchAsync(a.get(), bytes, gpu, s.stream);
    ms::check(cuEventRecord(marks[3 * i + 2].get(), s.stream), "cuEventRecord");
  }
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  std::vector<double> toHostMs, toGpuMs;
  for (std::size_t i = static_cast<std::size_t>(warmup); i < total; ++i) {
    float down = 0, up = 0;
    ms::check(cuEventElapsedTime(&down, marks[3 * i].get(), marks[3 * i + 1].get()),
              "cuEventElapsedTime");
    ms::check(cuEventElapsedTime(&up, marks[3 * i + 1].get(), marks[3 * i + 2].get()),
              "cuEventElapsedTime");
    toHostMs.push_back(down);
    toGpuMs.push_back(up);
  }
  const double prefetchUp =
      ms::gigabytesPerSecond(static_cast<double>(bytes), ms::summarizeTimings(toGpuMs).medianMs);
  const double prefetchDown =
      ms::gigabytesPerSecond(static_cast<double>(bytes), ms::summarizeTimings(toHostMs).medianMs);

  ms::OwnedPinnedHostMemory pinned;
  ms::check(cuMemHostAlloc(pinned.out(), bytes, 0), "cuMemHostAlloc");
  std::memset(pinned.get(), 1, bytes);
  ms::OwnedDeviceMemory target;
  ms::check(cuMemAlloc(target.out(), bytes), "cuMemAlloc");
  const ms::TimingStats copyUp = ms::timeOnStream(s.stream, warmup, iterations, [&] {
    ms::check(cuMemcpyHtoDAsync(target.get(), pinned.get(), bytes, s.stream), "cuMemcpyHtoDAsync");
  });
  const ms::TimingStats copyDown = ms::timeOnStream(s.stream, warmup, iterations, [&] {
    ms::check(cuMemcpyDtoHAsync(pinned.get(), target.get(), bytes, s.stream), "cuMemcpyDtoHAsync");
  });
  const double pinnedUp = ms::gigabytesPerSecond(static_cast<double>(bytes), copyUp.medianMs);
  const double pinnedDown = ms::gigabytesPerSecond(static_cast<double>(bytes), copyDown.medianMs);

  out << std::fixed << std::setprecision(1) << "  host -> GPU  cuMemPrefetchAsync " << std::setw(7)
      << prefetchUp << " GB/s   pinned cuMemcpyHtoDAsync " << std::setw(7) << pinnedUp
      << " GB/s   ratio " << std::setprecision(3) << prefetchUp / pinnedUp
      << " (expected >= 0.8 on an H200)\n"
      << std::setprecision(1) << "  GPU -> host  cuMemPrefetchAsync " << std::setw(7)
      << prefetchDown << " GB/s   pinned cuMemcpyDtoHAsync " << std::setw(7) << pinnedDown
      << " GB/s   ratio " << std::setprecision(3) << prefetchDown / pinnedDown << '\n';
  json.set("prefetchHtoDGBps", prefetchUp)
      .set("pinnedHtoDGBps", pinnedUp)
      .set("prefetchOverPinnedHtoD", prefetchUp / pinnedUp)
      .set("prefetchDtoHGBps", prefetchDown)
      .set("pinnedDtoHGBps", pinnedDown)
      .set("prefetchOverPinnedDtoH", prefetchDown / pinnedDown);
  ratios.prefetchOverPinned = prefetchUp / pinnedUp;
}

/// One batch of K ranges against K single prefetches, for each K.
void measureBatchVersusSingle(const Session& s, const Options& options,
                              const mm::ManagedBuffer& span, std::uint64_t rangeBytes,
                              const std::vector<int>& counts, ms::JsonObject& json) {
  std::ostream& out = *s.out;
  const CUmemLocation gpu = mm::deviceLocation(s.ordinal);
  const CUmemLocation host = mm::hostLocation();
  out << "\n[8c] One cuMemPrefetchBatchAsync of K ranges vs K cuMemPrefetchAsync calls\n"
      << "  ranges of " << ms::formatBytes(rangeBytes) << ", one every "
      << ms::formatBytes(2 * rangeBytes) << " of a " << ms::formatBytes(span.size())
      << " managed span, host -> GPU. Before each timed\n"
      << "  repetition the span goes back to the host (untimed), so every prefetch moves data.\n"
      << "  GPU time: CUDA events around the enqueue (includes any gap while the host is still\n"
      << "  enqueueing); host time: how long the calls kept the CPU busy. Medians.\n"
      << "       K   batch GPU ms  singles GPU ms  speedup   batch host ms  singles host ms\n";
  std::memset(span.as<void>(), kSpanPattern, span.size());  // pages on the host, with data
  const int warmup = options.common.warmup;
  const int iterations = options.common.iterations;
  ms::JsonArray rows;
  for (int k : counts) {
    const std::vector<mm::ByteRange> ranges =
        mm::stridedRanges(static_cast<std::size_t>(k), rangeBytes, 2 * rangeBytes);
    mm::PrefetchBatchBuilder builder;
    for (const mm::ByteRange& range : ranges)
      builder.add(span.get() + range.offset, range.bytes, gpu);
    const mm::PrefetchBatch& batch = builder.batch();

    const std::size_t total = static_cast<std::size_t>(warmup + iterations);
    std::vector<ms::OwnedEvent> marks(4 * total);
    for (ms::OwnedEvent& mark : marks)
      mark = createEvent();
    std::vector<double> batchHostMs, singlesHostMs;
    for (std::size_t i = 0; i < total; ++i) {
      mm::prefetchAsync(span.get(), span.size(), host, s.stream);
      ms::check(cuEventRecord(marks[4 * i].get(), s.stream), "cuEventRecord");
      auto begin = std::chrono::steady_clock::now();
      mm::prefetchBatchAsync(batch, s.stream);
      const std::chrono::duration<double, std::milli> batchCall =
          std::chrono::steady_clock::now() - begin;
      ms::check(cuEventRecord(marks[4 * i + 1].get(), s.stream), "cuEventRecord");

      mm::prefetchAsync(span.get(), span.size(), host, s.stream);
      ms::check(cuEventRecord(marks[4 * i + 2].get(), s.stream), "cuEventRecord");
      begin = std::chrono::steady_clock::now();
      for (const mm::ByteRange& range : ranges)
        mm::prefetchAsync(span.get() + range.offset, range.bytes, gpu, s.stream);
      const std::chrono::duration<double, std::milli> singleCalls =
          std::chrono::steady_clock::now() - begin;
      ms::check(cuEventRecord(marks[4 * i + 3].get(), s.stream), "cuEventRecord");
      if (i >= static_cast<std::size_t>(warmup)) {
        batchHostMs.push_back(batchCall.count());
        singlesHostMs.push_back(singleCalls.count());
      }
    }
    ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
    std::vector<double> batchMs, singlesMs;
    for (std::size_t i = static_cast<std::size_t>(warmup); i < total; ++i) {
      float one = 0, many = 0;
      ms::check(cuEventElapsedTime(&one, marks[4 * i].get(), marks[4 * i + 1].get()),
                "cuEventElapsedTime");
      ms::check(cuEventElapsedTime(&many, marks[4 * i + 2].get(), marks[4 * i + 3].get()),
                "cuEventElapsedTime");
      batchMs.push_back(one);
      singlesMs.push_back(many);
    }
    const double batchGpu = ms::summarizeTimings(batchMs).medianMs;
    const double singlesGpu = ms::summarizeTimings(singlesMs).medianMs;
    const double batchHost = ms::summarizeTimings(batchHostMs).medianMs;
    const double singlesHost = ms::summarizeTimings(singlesHostMs).medianMs;
    out << std::fixed << std::setw(8) << k << std::setprecision(3) << std::setw(15) << batchGpu
        << std::setw(16) << singlesGpu << std::setprecision(2) << std::setw(8)
        << singlesGpu / batchGpu << 'x' << std::setprecision(3) << std::setw(15) << batchHost
        << std::setw(17) << singlesHost << '\n';
    ms::JsonObject row;
    row.set("ranges", k)
        .set("batchGpuMs", batchGpu)
        .set("singlesGpuMs", singlesGpu)
        .set("batchHostMs", batchHost)
        .set("singlesHostMs", singlesHost);
    rows.addRaw(row.dump());
  }
  json.set("batchVsSingle", rows).set("batchRangeBytes", static_cast<std::uint64_t>(rangeBytes));

  // The span went back and forth many times; its bytes must still be what the CPU wrote.
  mm::prefetchAsync(span.get(), span.size(), host, s.stream);
  ms::check(cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  const auto* data = span.as<const unsigned char>();
  const std::size_t changed = static_cast<std::size_t>(
      std::count_if(data, data + span.size(), [](unsigned char v) { return v != kSpanPattern; }));
  s.checks->expect(changed == 0, "benchmark span after all prefetches", "every byte unchanged",
                   std::to_string(changed) + " bytes changed");
}

// ------------------------------------------------------------------------------------ the sample

ms::Verdict runManagedAdvisePrefetch(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();
  mm::Checklist checks;
  const std::uint64_t rangeBytes = options.rangeBytes.value_or(kDefaultRangeBytes);
  if (rangeBytes % 4096 != 0) {
    throw ms::UsageError("--range-size " + std::to_string(rangeBytes) +
                         " is not a multiple of 4 KiB: the driver widens every range to whole "
                         "pages, so the ranges would no longer be separate");
  }
  std::vector<int> counts = options.batchCounts;
  if (counts.empty())
    counts.assign(kDefaultBatchCounts.begin(), kDefaultBatchCounts.end());

  // 1. Driver, device, capabilities.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  const int ordinal = ms::deviceOrdinal(device);
  out << "Device " << ordinal << ": " << ms::deviceName(device) << '\n';
  const ManagedSupport support = querySupport(device);
  out << "[1] managed memory " << support.managedMemory << ", concurrent managed access "
      << support.concurrentManagedAccess << ", pageable memory access "
      << support.pageableMemoryAccess << ", direct host access to GPU-resident managed memory "
      << support.directManagedAccessFromHost << ", host NUMA id " << support.hostNumaId << '\n';
  if (!support.managedMemory) {
    throw ms::WaivedError("device " + std::to_string(ordinal) +
                          " cannot allocate managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY "
                          "= 0)");
  }
  if (!support.concurrentManagedAccess || support.firstDeviceWithoutConcurrentAccess >= 0) {
    const int which =
        support.concurrentManagedAccess ? support.firstDeviceWithoutConcurrentAccess : ordinal;
    throw ms::WaivedError(
        "device " + std::to_string(which) +
        " has no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 0, "
        "e.g. Windows or an old GPU): prefetching to a GPU and cuMemPrefetchBatchAsync need it "
        "on every device");
  }

  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  // A created stream: cuMemPrefetchBatchAsync refuses the legacy NULL one.
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  Session s;
  s.device = device;
  s.ordinal = ordinal;
  s.accessedBySlots = support.deviceCount + 1;
  ms::check(cuModuleGetFunction(&s.kernel, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");
  s.grid = ms::residentGridSize(s.kernel, device, kBlockSize);
  s.stream = stream.get();
  s.out = &out;
  s.checks = &checks;

  // Sizes: six vectors (three managed, three cuMemAlloc for the reference) and the span of the
  // batch benchmark must fit in free device memory together.
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const int largestCount = *std::max_element(counts.begin(), counts.end());
  const std::uint64_t spanBytes = static_cast<std::uint64_t>(largestCount) * 2 * rangeBytes;
  if (spanBytes >= freeBytes / 2) {
    throw ms::UsageError("the batch benchmark span (" + std::to_string(largestCount) + " x 2 x " +
                         ms::formatBytes(rangeBytes) + " = " + ms::formatBytes(spanBytes) +
                         ") would take half of the " + ms::formatBytes(freeBytes) +
                         " free; lower --range-size or --batch-counts");
  }
  const std::uint64_t bytes = ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes,
                                                    freeBytes - spanBytes, 6, sizeof(float));
  if (bytes < kMinBytes) {
    throw std::runtime_error("only " + ms::formatBytes(freeBytes) +
                             " of device memory is free: too little for six 1 MiB vectors");
  }
  out << "Vectors: " << ms::formatBytes(bytes) << " each (3 managed + 3 cuMemAlloc), batch span "
      << ms::formatBytes(spanBytes) << "; " << ms::formatBytes(freeBytes) << " of "
      << ms::formatBytes(totalBytes) << " free\n";

  // 2. The guard, then the managed buffers, all charged to one budget.
  demonstrateGuard(s, totalBytes);
  mm::ManagedMemoryBudget budget(freeBytes);
  mm::ManagedBuffer a(bytes, &budget), b(bytes, &budget), c(bytes, &budget);
  mm::ManagedBuffer span(spanBytes, &budget);
  {
    // What cuMemGetInfo cannot see: the buffers above are not on the GPU yet, so "free" still
    // looks untouched. The budget refuses what would over-subscribe once they are.
    const std::uint64_t tooMuch = budget.limit() - budget.reserved() + (2ull << 20);
    std::string message;
    try {
      mm::ManagedBuffer refused(static_cast<std::size_t>(tooMuch), &budget);
    } catch (const mm::ManagedAllocationRefused& error) {
      message = error.what();
    }
    out << "  ManagedBuffer(" << ms::formatBytes(tooMuch) << ") after A, B, C and the span: "
        << (message.empty() ? "ALLOCATED (budget failed)" : "refused: " + message) << '\n';
    checks.expect(!message.empty(), "budget after A, B, C and the span", "refused",
                  message.empty() ? "allocated" : "refused");
  }

  // 3. - 7. The API, step by step, each result checked.
  showPointerAttributes(s, a, context.get());
  adviceRoundTrips(s, a, support.hostNumaId);
  prefetchRoundTrip(s, a, b, c);
  batchPrefetchSplitWork(s, a, b, c, json);
  discardAndPrefetch(s, a, b, c, options.migrationIterations, json);

  // 8. What each technique costs.
  Ratios ratios;
  measureKernels(s, options, a, b, c, json, ratios);
  measurePrefetchThroughput(s, options, a, json, ratios);
  measureBatchVersusSingle(s, options, span, rangeBytes, counts, json);

  out << std::fixed
      << "\nSummary: kernel on prefetched managed / cuMemAlloc = " << std::setprecision(3)
      << ratios.prefetchedOverDevice
      << ", prefetch / pinned copy (host -> GPU) = " << ratios.prefetchOverPinned
      << ", demand paging slowdown = " << std::setprecision(1) << ratios.pagingSlowdown << "x\n";
  out << "Checks: " << checks.checks() << ", failed: " << checks.failures().size() << '\n';
  for (const std::string& failure : checks.failures())
    out << "  FAIL " << failure << '\n';
  ms::JsonArray failures;
  for (const std::string& failure : checks.failures())
    failures.add(failure);
  json.set("device", ordinal)
      .set("deviceName", ms::deviceName(device))
      .set("bytesPerVector", static_cast<std::uint64_t>(bytes))
      .set("iterations", options.common.iterations)
      .set("migrationIterations", options.migrationIterations)
      .set("hostNumaId", support.hostNumaId)
      .set("pageableMemoryAccess", support.pageableMemoryAccess)
      .set("checks", static_cast<std::uint64_t>(checks.checks()))
      .set("failures", failures);
  return checks.passed() ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "managedAdvisePrefetch",
      "Managed memory with the driver API: advice read back through range attributes, prefetch "
      "and batch prefetch verified by computing on the migrated data, and demand paging, "
      "prefetch and batch prefetch measured against ordinary device memory and pinned copies.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4, at least 1M (default 1G, less if memory "
                      "is short; never more than fits in free memory)",
                      options.sizeBytes, kMinBytes);
  commandLine.addSize("range-size",
                      "bytes per range in the batch-vs-single benchmark, 4K to 2M (default 64K)",
                      options.rangeBytes, 4096, 2ull << 20);
  commandLine.addIntegerList("batch-counts",
                             "numbers of ranges K compared in that benchmark (default "
                             "16,256,4096)",
                             options.batchCounts, 1, 65536);
  commandLine.addInteger("migration-iterations",
                         "repetitions of the measurements that move whole vectors each time "
                         "(demand paging, discard, remote access; default 5)",
                         options.migrationIterations, 1, 1000);
  return ms::runSample(commandLine, options.common, argc, argv, [&](ms::Report& report) {
    return runManagedAdvisePrefetch(options, report);
  });
}
