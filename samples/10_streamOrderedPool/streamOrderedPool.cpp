/**
 * @file streamOrderedPool.cpp
 * @brief The stream-ordered allocator: a device's pools, allocation in stream
 *        order, the release threshold, the reuse rules and trimming, measured
 *        against cuMemAlloc.
 *
 * cuMemAlloc and cuMemFree are slow (tens of microseconds a pair), and cuMemFree may
 * synchronize: cuda.h says it "may perform implicit synchronization", so a free can wait for
 * work in flight. Every framework allocator exists because of that. The driver's own answer is
 * a pool that hands out memory in stream order (cuMemAllocAsync), takes it back in stream
 * order (cuMemFreeAsync), and keeps what it holds for the next allocation. runPool() walks
 * through it:
 *
 * 1. Load the driver, pick a device, and check that it has memory pools
 *    (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED; without them: WAIVED).
 * 2. Create a context and two streams, watch for the driver's over-budget notification
 *    (**cuDeviceRegisterAsyncNotification**, budget_notice.cpp), and size the run.
 * 3. Find the device's pools: the default pool, asked for by location
 *    (**cuMemGetDefaultMemPool**, CUDA 13) and by device
 *    (**cuDeviceGetDefaultMemPool**), and the current one (**cuMemGetMemPool**);
 *    create an explicit pool (**cuMemPoolCreate**) and make it the device's
 *    current pool (**cuMemSetMemPool**).
 * 4. Allocate in stream order and use the memory: **cuMemAllocAsync** (from
 *    the current pool), **cuMemAllocFromPoolAsync** (from a named pool), a
 *    fill and a copy, **cuMemFreeAsync**.
 * 5. Set the release threshold (**cuMemPoolSetAttribute**) and measure two
 *    allocation loops, steps of 8 same-size pairs (one block live) and a mix
 *    of sizes 8 at a time: cuMemAlloc + cuMemFree against the pool keeping
 *    everything and the pool at threshold 0, latency per pair, and footprint
 *    against the loop's own live bytes.
 * 6. Watch the reuse rules: a block freed on stream 1 and allocated on
 *    stream 2, each rule on and off.
 * 7. Ask who may access the pool's memory (**cuMemPoolGetAccess**), and give
 *    a peer GPU access where there is one.
 * 8. Try a managed-memory pool and a host-location pool, and say what the
 *    driver answered.
 * 9. Run a kernel on pool memory and on cuMemAlloc memory, and compare.
 * 10. Tear down: wait for both streams, trim the pool (**cuMemPoolTrimTo**)
 *     and report what it still holds, make the default pool current again,
 *     destroy the pool (**cuMemPoolDestroy**), stop watching the budget
 *     (**cuDeviceUnregisterAsyncNotification**) and say what arrived, then the
 *     streams and the context.
 */
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "budget_notice.hpp"
#include "memsamples.hpp"
#include "other_pools.hpp"
#include "pool_plan.hpp"
#include "streamOrderedPool_measure.hpp"

namespace ms = memsamples;

namespace {

/// An explicit pool for the error paths: cuMemPoolCreate -> cuMemPoolDestroy.
using OwnedPool = ms::DriverHandle<CUmemoryPool, cuMemPoolDestroy>;

/// The type of memory the lesson's pools hold: CU_MEM_ALLOCATION_TYPE_PINNED, memory
/// that stays where it was placed, as opposed to managed memory, which migrates. At a
/// device location, as here, that is the device's own memory, not page-locked host
/// memory (which is also called pinned).
constexpr CUmemAllocationType kPinned = CU_MEM_ALLOCATION_TYPE_PINNED;

/// The lesson: the pool's calls in the order a program makes them.
ms::Verdict runPool(const ms::CommonOptions& common, const PoolOptions& options,
                    ms::Report& report) {
  std::ostream& out = report.out();
  PoolRun run;

  // Every option is checked before the driver is asked anything, so a mistake is one
  // line and nothing else.
  run.plan = pool_plan::checkOptions(options.minBytes, options.maxBytes,
                                     options.threshold, common.iterations,
                                     options.sameBytes);
  run.iterations = common.iterations;
  run.warmup = common.warmup;

  // 1. Load the driver, pick a device, and check that it has memory pools.
  ms::checkDriverInit(cuInit(0));
  run.device = ms::selectDevice(common.device);
  run.ordinal = ms::deviceOrdinal(run.device);

  int pools = 0;
  const CUdevice_attribute poolsSupported = CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED;
  ms::check(cuDeviceGetAttribute(&pools, poolsSupported, run.device),
            "cuDeviceGetAttribute");
  if (pools == 0)
    throw ms::WaivedError("device " + std::to_string(run.ordinal) + " has no memory pools "
                          "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 0)");

  // 2. Create a context and two streams, watch the budget, and size the run to the device.
  // Both streams are non-blocking: neither waits for the legacy NULL stream other code may use.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, run.device), "cuCtxCreate");

  // Ask the driver to call us when this process goes over its device memory budget. The
  // callback runs on a driver thread and only counts; the counters live as long as the
  // process, since cuda.h does not say that a callback under way has returned when the
  // unregister does. A driver that answers CUDA_ERROR_NOT_SUPPORTED is reported, not failed.
  static pool_budget::Notices notices;
  pool_budget::Watch budget(run.device, notices);
  budget.start();

  // Step 4's two blocks, declared before the streams: on an error the streams' owners
  // die first and drain them, so no queued copy still uses a block when it is freed.
  // The owner frees with cuMemFree, which only an error path reaches (cuMemFree does
  // not wait for the stream); the good path gives each block to cuMemFreeAsync with
  // release().
  ms::OwnedDeviceMemory a;
  ms::OwnedDeviceMemory b;

  ms::OwnedStream first;
  ms::OwnedStream second;
  ms::check(cuStreamCreate(first.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::check(cuStreamCreate(second.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  run.first = first.get();
  run.second = second.get();
  sizeRun(options, run, out);

  //! [core]
  // 3. Find the device's pools. CUDA 13 names a pool by where its memory lives (a
  // location) and by the type of memory; the older call takes the device.
  CUmemLocation location = {};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = run.ordinal;

  CUmemoryPool defaultPool = nullptr;
  CUmemoryPool byDevice = nullptr;
  CUmemoryPool current = nullptr;
  ms::check(cuMemGetDefaultMemPool(&defaultPool, &location, kPinned),
            "cuMemGetDefaultMemPool");
  ms::check(cuDeviceGetDefaultMemPool(&byDevice, run.device),
            "cuDeviceGetDefaultMemPool");
  ms::check(cuMemGetMemPool(&current, &location, kPinned), "cuMemGetMemPool");
  run.checks.expect(byDevice == defaultPool && current == defaultPool,
                    "step 3: default pool by location, by device, current pool",
                    "one pool", "pools that differ");

  // An explicit pool of device memory, made the device's current pool: from now on
  // cuMemAllocAsync on a stream of this device takes its memory from it.
  CUmemPoolProps props = {};
  props.allocType = kPinned;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location = location;
  OwnedPool pool;
  ms::check(cuMemPoolCreate(pool.out(), &props), "cuMemPoolCreate");
  ms::check(cuMemSetMemPool(&location, kPinned, pool.get()), "cuMemSetMemPool");
  run.pool = pool.get();

  // 4. Allocate into a and b (owners from step 2) and use the memory. Both calls
  // return at once: the memory is valid for work queued behind them on this stream. A
  // free takes effect when the stream reaches it: work queued before may still use it.
  const std::size_t words = run.plan.maxBytes / 4;  // whole 32-bit words
  const std::size_t bytes = words * 4;
  ms::check(cuMemAllocAsync(a.out(), bytes, run.first), "cuMemAllocAsync");
  ms::check(cuMemAllocFromPoolAsync(b.out(), bytes, run.pool, run.first),
            "cuMemAllocFromPoolAsync");

  std::vector<std::uint32_t> host(words);
  ms::check(cuMemsetD32Async(a.get(), 0x600DF00Du, words, run.first),
            "cuMemsetD32Async");
  ms::check(cuMemcpyDtoDAsync(b.get(), a.get(), bytes, run.first), "cuMemcpyDtoDAsync");
  ms::check(cuMemcpyDtoHAsync(host.data(), b.get(), bytes, run.first), "cuMemcpyDtoHAsync");
  ms::check(cuMemFreeAsync(b.release(), run.first), "cuMemFreeAsync");
  ms::check(cuMemFreeAsync(a.release(), run.first), "cuMemFreeAsync");
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");

  const auto good = std::count(host.begin(), host.end(), 0x600DF00Du);
  run.checks.expect(static_cast<std::size_t>(good) == words, "step 4: the copy",
                    std::to_string(words) + " words", std::to_string(good));

  // 5. Set the release threshold: what the pool keeps at each synchronization. Two loops
  // (the same sizes every step, a mix) run on cuMemAlloc and on the pool at this value and
  // at 0; steps 6 to 10 run at this value (at max, step 9's vectors stay until the trim).
  cuuint64_t keep = run.plan.keepThreshold;
  ms::check(cuMemPoolSetAttribute(run.pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
            "cuMemPoolSetAttribute");
  measureAllocations(run, report);

  // 6. Watch the reuse rules: when may stream 2 get a block that stream 1 freed?
  probeReuse(run, report);

  // 7. Ask who may access the pool's memory: its own device reads and writes it.
  CUmemAccess_flags access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  ms::check(cuMemPoolGetAccess(&access, run.pool, &location), "cuMemPoolGetAccess");
  run.checks.expect(access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                    "step 7: the device's access", "read and write",
                    std::to_string(static_cast<int>(access)));
  probePeerAccess(run, report);

  // 8. Try a managed-memory pool and a host-location pool.
  probeOtherPools(run, report);

  // 9. Run a kernel on pool memory and on cuMemAlloc memory, and compare.
  measureKernel(run, report);

  // 10. Tear down. With nothing live, the trim gives back what the pool can safely
  // release; cuda.h lets it keep the rest, so reportTrim() says what remains.
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  ms::check(cuStreamSynchronize(run.second), "cuStreamSynchronize");

  cuuint64_t reservedBefore = 0;
  const CUmemPool_attribute reservedNow = CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
  ms::check(cuMemPoolGetAttribute(run.pool, reservedNow, &reservedBefore),
            "cuMemPoolGetAttribute");
  ms::check(cuMemPoolTrimTo(run.pool, 0), "cuMemPoolTrimTo");
  reportTrim(run, reservedBefore, report);

  ms::check(cuMemSetMemPool(&location, kPinned, defaultPool), "cuMemSetMemPool");
  ms::check(cuMemPoolDestroy(pool.release()), "cuMemPoolDestroy");
  //! [core]

  // Stop watching the budget, and say what arrived while the lesson ran.
  budget.stop();
  const pool_verdict::BudgetReport budgetSeen = budget.report();
  out << pool_verdict::budgetLine(budgetSeen) << '\n';
  report.json().set("overBudgetNotifications", pool_verdict::budgetJson(budgetSeen));

  // The streams are idle (step 10 waited for both); the context goes last.
  ms::check(cuStreamDestroy(second.release()), "cuStreamDestroy");
  ms::check(cuStreamDestroy(first.release()), "cuStreamDestroy");
  ms::check(cuCtxDestroy(context.release()), "cuCtxDestroy");
  return verdictOf(run, report);
}

}  // namespace

/// Parses the options and hands the lesson to runSample(), which owns output and
/// exit codes.
int main(int argc, char** argv) {
  ms::CommonOptions common;
  PoolOptions options;
  ms::CommandLine commandLine(
      "streamOrderedPool",
      "Allocates in stream order from a memory pool: default, current and explicit "
      "pools, the release threshold, the reuse rules and trimming, measured against "
      "cuMemAlloc.");
  commandLine.addCommonOptions(common);

  const std::uint64_t largest = 1ull << 40;  // 1T: more than any GPU holds
  commandLine.addSize("min-size", "smallest allocation of the mix (default 1K)",
                      options.minBytes, 1, largest);
  commandLine.addSize("max-size",
                      "largest allocation of the mix, at least 4 (default 64M, less "
                      "if memory is short)",
                      options.maxBytes, 4, largest);
  commandLine.addSize("same-size",
                      "size of every allocation of the same-size loop (default 16M, less "
                      "if memory is short)",
                      options.sameBytes, 1, largest);
  commandLine.addSize("size",
                      "bytes per vector of step 9's kernel, a multiple of 4 "
                      "(default 256M, less if memory is short)",
                      options.kernelBytes, 4, largest, sizeof(float));
  commandLine.addString("threshold",
                        "release threshold that keeps memory: 'max' or bytes "
                        "(default max)",
                        options.threshold, "BYTES|max");

  return ms::runSample(commandLine, common, argc, argv, [&](ms::Report& report) {
    return runPool(common, options, report);
  });
}
