/**
 * @file streamOrderedPool_measure.hpp
 * @brief What 10_streamOrderedPool measures and probes, one call per step: the two allocation
 *        loops' latency and footprint (cuMemAlloc against the pool at two release thresholds,
 *        for steps of 8 same-size pairs and for a mix 8 at a time), the reuse rules, peer
 *        access, a kernel on pool memory against the same kernel on cuMemAlloc memory, and the
 *        trim. Step 8's other pools are in other_pools.hpp.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>

#include "memsamples.hpp"
#include "pool_plan.hpp"
#include "pool_verdict.hpp"
#include "support/checklist.hpp"

/// The options of the sample beyond Common's.
struct PoolOptions {
  std::optional<std::uint64_t> minBytes;     ///< `--min-size`: smallest allocation of the mix.
  std::optional<std::uint64_t> maxBytes;     ///< `--max-size`: largest allocation of the mix.
  std::optional<std::uint64_t> sameBytes;    ///< `--same-size`: the same-size loop's size.
  std::optional<std::uint64_t> kernelBytes;  ///< `--size`: bytes per vector of step 9's kernel.
  std::string threshold = "max";             ///< `--threshold`: the "keep" release threshold.
};

/// What the lesson hands each step: its device, pool and streams, the checked plan, and the
/// checks every step adds to (the verdict counts them all).
struct PoolRun {
  CUdevice device = 0;                 ///< The sample's device.
  int ordinal = 0;                     ///< Its ordinal (CUmemLocation::id).
  std::string deviceName;              ///< Its name (sizeRun() asks for it).
  CUmemoryPool pool = nullptr;         ///< The explicit pool, current for the device.
  CUstream first = nullptr;            ///< Stream 1.
  CUstream second = nullptr;           ///< Stream 2 (the reuse rules).
  pool_plan::RunPlan plan;             ///< The allocation mix, sized (sizeRun()).
  std::uint64_t kernelBytes = 0;       ///< Bytes per vector of step 9.
  int iterations = 1;                  ///< `--iterations` (timed kernel launches).
  int warmup = 0;                      ///< `--warmup`: untimed steps and launches first.
  memsamples::Checklist checks;        ///< Every check of the run.
};

/**
 * Sizes the run in the current context: the largest allocation of the mix and the same-size
 * loop's size are cut so that one step's temporaries (8 of the mix's largest, or the one
 * same-size block) take at most a quarter of the device's free memory, and the kernel's vectors (default 256 MiB each, six of them at once: three from
 * the pool, three from cuMemAlloc) fit in 80 % of it. Free memory is the whole device's
 * (cuMemGetInfo) and serves sizing only. Prints the "Device N: name" and "Loops:" lines.
 * @throws memsamples::UsageError when a `--size` does not fit; CudaError.
 */
void sizeRun(const PoolOptions& options, PoolRun& run, std::ostream& out);

/**
 * Step 5: two allocation loops, each step ended by a synchronization (untimed): 8 pairs of one
 * block of the same size allocated and freed per step (`--same-size`, a workspace that each layer
 * of a training or inference step needs at the same size; pool_plan::sameSizeLoop()), then a mix of
 * sizes with 8 blocks live per step (pool_plan::mixLoop()). Each loop runs three times:
 * cuMemAlloc + cuMemFree, then the pool at `--threshold` (default max: keep everything) and
 * at 0. Each allocate and free call is
 * timed on the host with std::chrono::steady_clock after `--warmup` untimed steps; the median
 * and p99 per pair are printed with each loop's goal (pool_verdict::goalLine()). The pool's
 * counters are read after each pool run and checked (pool_verdict::checkPoolLoop()). Leaves
 * the threshold at `--threshold`. @throws CudaError.
 */
void measureAllocations(PoolRun& run, memsamples::Report& report);

/**
 * Step 6: a block freed on stream 1, then allocated on stream 2 with each reuse rule alone on
 * and then off, in a scenario for each rule (an event, a free that a synchronization saw
 * complete, nothing); prints whether stream 2 got the same address. Observations, no verdict.
 * Restores the rules the pool had before.
 * @throws CudaError.
 */
void probeReuse(PoolRun& run, memsamples::Report& report);

/**
 * Step 7, the peer half: with a second GPU that can access this one, cuMemPoolSetAccess for it
 * and the access read back (checked); with one GPU, "not run". @throws CudaError.
 */
void probePeerAccess(PoolRun& run, memsamples::Report& report);

/**
 * Step 9: VecAdd_kernel on three vectors from the pool, then on three from cuMemAlloc, timed
 * with CUDA events (median of `--iterations` after `--warmup`), results checked both times;
 * prints GB/s and the ratio pool / cuMemAlloc. @throws CudaError.
 */
void measureKernel(PoolRun& run, memsamples::Report& report);

/// Step 10's report, after cuMemPoolTrimTo(pool, 0): the pool's counters read, what it held
/// before (@p reservedBefore) and after printed, written to the JSON and checked for what
/// cuda.h promises (pool_verdict::checkTrim()). @throws CudaError.
void reportTrim(PoolRun& run, std::uint64_t reservedBefore, memsamples::Report& report);

/// The verdict: PASS when every check of the run held; otherwise each failure is printed and
/// the JSON gets "failures" (pool_verdict::verdict()). Adds the device to the JSON.
memsamples::Verdict verdictOf(const PoolRun& run, memsamples::Report& report);
