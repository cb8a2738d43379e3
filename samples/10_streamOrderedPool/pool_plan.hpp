/**
 * @file pool_plan.hpp
 * @brief The CUDA-free part of 10_streamOrderedPool, unit tested without a GPU: the options'
 *        checks, the two allocation loops' shapes (one same-size block per step, a mix of
 *        sizes 8 live per step), the live-bytes bookkeeping, the latency statistics and the
 *        tables the sample prints.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pool_plan {

/// Allocations per `--iterations`: the default 20 gives the 10,000 allocations of the mix.
constexpr int kAllocationsPerIteration = 500;
/// Blocks live at once in one step of the mix: a step's temporaries, whose sizes change.
constexpr int kMixLivePerStep = 8;
/// Blocks live at once in the same-size loop: one temporary, allocated and freed, as each layer
/// of a training or inference step asks for the same workspace.
constexpr int kSameSizeLivePerStep = 1;

/// Allocate + free pairs in one step of the same-size loop before the synchronization that ends
/// the step: a step of 8 layers, each taking the workspace and giving it back in stream order.
constexpr int kSameSizePairsPerStep = 8;
/// Allocations per `--iterations` of the same-size loop: the default 20 gives 2,000.
constexpr int kSameSizePairsPerIteration = 100;
/// The default size of the same-size loop (`--same-size`): 16 MiB, an activation-sized block.
constexpr std::uint64_t kDefaultSameSizeBytes = 16ull << 20;

/// What the command line asked for, checked: every mistake is a usage error before any device
/// is asked anything.
struct RunPlan {
  std::uint64_t minBytes = 0;       ///< Smallest allocation of the mix (`--min-size`).
  std::uint64_t maxBytes = 0;       ///< Largest allocation of the mix (`--max-size`).
  std::uint64_t keepThreshold = 0;  ///< The "keep" release threshold (`--threshold`).
  int allocations = 0;              ///< Allocations per variant of the mix.
  std::uint64_t sameBytes = 0;      ///< The size of every allocation of the same-size loop.
  int sameAllocations = 0;          ///< Allocations per variant of the same-size loop.
};

/// `--threshold`: "max" (keep everything: UINT64_MAX) or a byte size (4096, 64M, 0...).
/// @throws memsamples::UsageError naming `--threshold` for anything else.
std::uint64_t parseThreshold(std::string_view text);

/// Checks the options together: @p minBytes (default 1K) must not exceed @p maxBytes (default
/// 64M); @p sameBytes (`--same-size`, default kDefaultSameSizeBytes) sizes the same-size loop;
/// @p iterations (1 or more, as the parser checks) gives the allocations of both loops.
/// @throws memsamples::UsageError with one line naming both sizes when they are out of order.
RunPlan checkOptions(const std::optional<std::uint64_t>& minBytes,
                     const std::optional<std::uint64_t>& maxBytes, std::string_view threshold,
                     int iterations,
                     const std::optional<std::uint64_t>& sameBytes = std::nullopt);

/// The largest allocation after sizing: @p maxBytes, or less so that one step's temporaries
/// (@p livePerStep of the largest size) take at most a quarter of @p freeBytes; never below
/// @p minBytes. Sizing only: no verdict depends on free memory.
std::uint64_t fitLargest(std::uint64_t minBytes, std::uint64_t maxBytes, std::uint64_t freeBytes,
                         int livePerStep);

/// The same-size loop's allocations: @p count times @p bytes. Every step asks for the sizes the
/// step before asked for, as the steps of a training or inference loop do.
std::vector<std::uint64_t> sameSizes(int count, std::uint64_t bytes);

/// @p count sizes in [@p minBytes, @p maxBytes], log-uniformly spread (as many 1-4 KiB
/// temporaries as 16-64 MiB ones), each a multiple of 256 bytes where the range allows it,
/// reproducible from @p seed on every machine.
std::vector<std::uint64_t> sizeMix(int count, std::uint64_t minBytes, std::uint64_t maxBytes,
                                   std::uint32_t seed);

/// One allocation loop: the sizes it asks for, in order, how many of them are live at once, and
/// how many make one step. A step takes the next allocationsPerStep sizes (fewer in the last
/// step) in groups of livePerStep: each group is allocated, then freed; the step ends with a
/// synchronization, as a training or inference step ends.
struct Loop {
  std::vector<std::uint64_t> sizes;  ///< Every allocation of the loop, in order.
  int livePerStep = 1;               ///< Blocks live at once: one group.
  int allocationsPerStep = 1;        ///< Allocations between two synchronizations.
};

/// The same-size loop of @p plan: plan.sameAllocations blocks of plan.sameBytes, one live at a
/// time (kSameSizeLivePerStep), kSameSizePairsPerStep allocate + free pairs per step: a
/// workspace that every layer of a training or inference step needs at the same size.
Loop sameSizeLoop(const RunPlan& plan);

/// The mix of @p plan: plan.allocations sizes from sizeMix(), kMixLivePerStep live at once, one
/// group per step.
Loop mixLoop(const RunPlan& plan, std::uint32_t seed);

/// One step of a loop: the allocations [first, first + count) of its sizes.
struct StepRange {
  std::size_t first = 0;  ///< Index of the step's first allocation.
  std::size_t count = 0;  ///< Its allocations: livePerStep, fewer in a last short step.
};

/// The steps of @p loop, in order (allocationsPerStep each, fewer in the last); none for a loop
/// without sizes or with allocationsPerStep below 1.
std::vector<StepRange> steps(const Loop& loop);

/// The groups of @p step: livePerStep allocations each (fewer in the last), live together,
/// allocated then freed. A loop with livePerStep below 1 is taken as one block at a time.
std::vector<StepRange> groups(const Loop& loop, const StepRange& step);

/// Live-bytes bookkeeping: what the program itself holds, whatever the allocator reserves.
class LiveBytes {
 public:
  void allocate(std::uint64_t bytes);  ///< One more allocation of @p bytes is live.
  /// One allocation of @p bytes is freed. @throws std::logic_error when more is freed than live.
  void free(std::uint64_t bytes);
  std::uint64_t live() const noexcept { return live_; }  ///< Bytes live now.
  std::uint64_t high() const noexcept { return high_; }  ///< The high-water mark of live().

 private:
  std::uint64_t live_ = 0;
  std::uint64_t high_ = 0;
};

/// The high-water mark of live bytes of @p loop: each group's allocations live together, all
/// freed before the next group (the largest group's sum).
std::uint64_t loopHighWater(const Loop& loop);

/// The @p fraction quantile (0.5 = median, 0.99 = p99, nearest rank) of @p values; 0 for none.
double quantile(std::vector<double> values, double fraction);

/// One variant of the allocation loop, as the tables print it.
struct VariantResult {
  std::string name;                ///< "cuMemAlloc + cuMemFree", "pool, threshold max"...
  double medianUs = 0;             ///< Median microseconds per allocate + free pair.
  double p99Us = 0;                ///< 99th percentile, microseconds per pair.
  std::optional<std::uint64_t> reservedHigh;  ///< RESERVED_MEM_HIGH (pools only).
  std::optional<std::uint64_t> usedHigh;      ///< USED_MEM_HIGH (pools only).
  std::optional<std::uint64_t> reservedAfter;  ///< RESERVED_MEM_CURRENT after the last sync.
  std::optional<std::uint64_t> usedAfter;      ///< USED_MEM_CURRENT after the last free.
};

/// The latency table of one loop, headed @p title: one line per variant, and the speed-up of
/// each over the first.
std::string latencyTable(const std::string& title, const std::vector<VariantResult>& variants);

/// The footprint table: each variant's reserved and used high-water marks against @p liveHigh,
/// the program's own high-water mark of live bytes.
std::string footprintTable(const std::vector<VariantResult>& variants, std::uint64_t liveHigh);

/// One row of the reuse table: a rule, its scenario, and whether stream 2 got stream 1's block.
struct ReuseResult {
  std::string rule;      ///< e.g. "FOLLOW_EVENT_DEPENDENCIES".
  std::string scenario;  ///< What orders stream 2 after stream 1's free.
  bool reusedWhenOn = false;   ///< Stream 2 got stream 1's block with the rule on.
  bool reusedWhenOff = false;  ///< Stream 2 got stream 1's block with the rule off.
};

/// The reuse table: "yes" / "no" per rule turned on and off.
std::string reuseTable(const std::vector<ReuseResult>& rows);

}  // namespace pool_plan
