/**
 * @file batch_plan.hpp
 * @brief The CUDA-free parts of 09_memcpyBatch: the options and their checks, where each block
 *        lives in the two pools, the arrays one cuMemcpyBatchAsync takes, and the check of the
 *        copied bytes.
 *
 * Nothing here calls the driver except enqueueBatch(), which hands a BatchPlan to
 * cuMemcpyBatchAsync; ctest/unit/memcpyBatch tests all of it on machines without a GPU (the
 * batch call against a fake driver).
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/word_pattern.hpp"

namespace memsamples {

class CommandLine;

/// One element of a block: the pools hold 32-bit pattern words, so a block is whole words.
inline constexpr std::uint64_t kBlockElementBytes = 4;

/// The most bytes the sample moves in one pass (blocks x block size): 1 TiB, more than any GPU.
inline constexpr std::uint64_t kMaxTotalBytes = 1ull << 40;

/// The most blocks of one pass, named or swept: a loop of 65,536 copies already takes about
/// 0.2 s a pass, so more would turn a measurement into minutes.
inline constexpr std::uint64_t kMaxBlocks = 1ull << 16;

/// Blocks of the default run: 1,024 x 64 KiB = 64 MiB, enough for every ratio, in seconds.
inline constexpr std::uint64_t kDefaultBlocks = 1024;

/// The fewest blocks a default run is cut to where 1,024 do not fit; below, it waives.
inline constexpr std::uint64_t kMinFittedBlocks = 64;

/// The command line of 09_memcpyBatch.
struct BatchOptions {
  long long blocks = 0;                       ///< `--blocks`; 0 when not named.
  std::optional<std::uint64_t> blockBytes;    ///< `--block-size` (default 64 KiB).
  bool sweep = false;                         ///< `--sweep`: also time every block size.
  std::optional<std::uint64_t> sweepMin;      ///< `--sweep-min` (default 4 KiB).
  std::optional<std::uint64_t> sweepMax;      ///< `--sweep-max` (default 1 MiB).

  /// Whether `--blocks` was named (a named count is never cut to fit).
  bool blocksNamed() const noexcept { return blocks != 0; }
  /// The block count asked for: `--blocks`, or kDefaultBlocks.
  std::uint64_t blockCount() const noexcept {
    return blocksNamed() ? static_cast<std::uint64_t>(blocks) : kDefaultBlocks;
  }
  /// The block size: `--block-size`, or 64 KiB.
  std::uint64_t blockSize() const noexcept { return blockBytes.value_or(64 * 1024); }
  /// The sweep's smallest block size: `--sweep-min`, or 4 KiB.
  std::uint64_t sweepFrom() const noexcept { return sweepMin.value_or(4 * 1024); }
  /// The sweep's largest block size: `--sweep-max`, or 1 MiB.
  std::uint64_t sweepTo() const noexcept { return sweepMax.value_or(1024 * 1024); }
};

/// Registers `--blocks`, `--block-size`, `--sweep`, `--sweep-min` and `--sweep-max` into
/// @p options (the common options are the caller's).
void addBatchOptions(CommandLine& commandLine, BatchOptions& options);

/// Refuses what no run can do, before any device output: a block size of 0 or not whole words,
/// blocks x block size over kMaxTotalBytes, sweep bounds not whole words or out of order.
/// @throws UsageError naming the options.
void validateOptions(const BatchOptions& options);

/// How many blocks this machine takes, and whether that is fewer than asked for.
struct BlockCount {
  std::uint64_t count = 0;  ///< Blocks of the run.
  bool cut = false;         ///< The default count did not fit and was cut to this.
};

/**
 * The blocks of the run in @p poolBudget bytes per pool (what fits, limited by @p limitedBy,
 * e.g. "the device's free memory"): the count asked for where it fits; else an unnamed count
 * cut to what fits, down to kMinFittedBlocks.
 * @throws UsageError when a named `--blocks` does not fit; WaivedError, with the reason, when
 *         not even kMinFittedBlocks blocks of the default count fit.
 */
BlockCount fitBlockCount(const BatchOptions& options, std::uint64_t poolBudget,
                         const std::string& limitedBy);

/**
 * Where block i lives: at slot hostSlot(i) of the host pool and deviceSlot(i) of the device
 * pool, each pool `count` slots of `blockBytes`. Both are permutations of 0 .. count - 1 (i times
 * a stride coprime with count, modulo count), different from each other and from the identity
 * wherever count allows, so the copies are scattered and never overlap.
 */
struct BlockLayout {
  std::uint64_t count = 0;       ///< Blocks, and slots in each pool.
  std::uint64_t blockBytes = 0;  ///< Bytes per block, whole words.
  std::uint64_t bytes = 0;       ///< count x blockBytes: each pool's size.
  std::uint64_t hostStride = 1;    ///< The host permutation's stride, coprime with count.
  std::uint64_t deviceStride = 1;  ///< The device permutation's stride, coprime with count.
  std::vector<std::uint64_t> hostOffsets;    ///< hostOffset(i) for every block, when asked for.
  std::vector<std::uint64_t> deviceOffsets;  ///< deviceOffset(i) for every block, when asked for.

  /// The host pool's slot of @p block: (block x hostStride) mod count.
  std::uint64_t hostSlot(std::uint64_t block) const noexcept;
  /// The device pool's slot of @p block: (block x deviceStride + count / 2) mod count.
  std::uint64_t deviceSlot(std::uint64_t block) const noexcept;
  /// Where @p block starts in the host pool, in bytes.
  std::uint64_t hostOffset(std::uint64_t block) const noexcept {
    return hostSlot(block) * blockBytes;
  }
  /// Where @p block starts in the device pool, in bytes.
  std::uint64_t deviceOffset(std::uint64_t block) const noexcept {
    return deviceSlot(block) * blockBytes;
  }
  /// count x blockBytes, computed (bytes holds the same once makeLayout() made the layout).
  std::uint64_t totalBytes() const noexcept { return count * blockBytes; }
};

/// The layout of @p count blocks of @p blockBytes, with every block's offsets listed when
/// @p listOffsets. @throws std::invalid_argument for count 0.
BlockLayout makeLayout(std::uint64_t count, std::uint64_t blockBytes, bool listOffsets = true);

/// Which pool's slots a check reads.
enum class PoolSide { Host, Device };

/// Writes block i's data (words i x W .. of the pattern of @p seed, W words per block) into its
/// slot of @p pool, a pool laid out as @p side.
void fillBlocks(std::uint32_t* pool, const BlockLayout& layout, PoolSide side,
                std::uint32_t seed) noexcept;

/// Checks every block's slot of @p pool (laid out as @p side) against its data; the first bad
/// word is named by its index in the pool.
PatternCheck checkBlocks(const std::uint32_t* pool, const BlockLayout& layout, PoolSide side,
                         std::uint32_t seed) noexcept;

/// The arrays of one cuMemcpyBatchAsync: one entry per copy, and one CUmemcpyAttributes per group
/// of consecutive copies, attrsIdxs[k] the first copy of group k.
struct BatchPlan {
  std::vector<CUdeviceptr> dsts;          ///< Each copy's destination.
  std::vector<CUdeviceptr> srcs;          ///< Each copy's source.
  std::vector<std::size_t> sizes;         ///< Each copy's bytes.
  std::vector<CUmemcpyAttributes> attrs;  ///< Each group's attributes.
  std::vector<std::size_t> attrsIdxs;     ///< Each group's first copy.

  /// Starts a group: the copies added next get @p attributes. A group with no copy yet is
  /// replaced instead of left empty (the driver wants every index < count, strictly increasing).
  void beginGroup(const CUmemcpyAttributes& attributes);
  /// Adds one copy of @p bytes from @p src to @p dst to the current group.
  /// @throws std::logic_error before any beginGroup().
  void addCopy(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes);
  /// How many copies the batch holds.
  std::size_t count() const noexcept { return sizes.size(); }
};

/// Attributes for a group: @p order, no location hints, @p flags.
CUmemcpyAttributes copyAttributes(CUmemcpySrcAccessOrder order, unsigned int flags = 0) noexcept;

/// The batch of every block of @p layout from @p srcBase to @p dstBase in one group of
/// @p attributes; @p hostToDevice says which pool each base is.
BatchPlan planBlocks(const BlockLayout& layout, CUdeviceptr dstBase, CUdeviceptr srcBase,
                     bool hostToDevice, const CUmemcpyAttributes& attributes);

/// What the driver asks of the arrays, as a message, or empty when @p plan is well formed:
/// at least one copy, attrsIdxs[0] = 0, strictly increasing, last < count, numAttrs <= count.
std::string planProblem(const BatchPlan& plan);

/// cuMemcpyBatchAsync(@p plan, @p stream), the driver's answer returned for the caller to
/// check. @throws std::logic_error for a malformed plan.
CUresult enqueueBatch(BatchPlan& plan, CUstream stream);

/// The smallest block size of a sweep from which on, at that size and every larger one, the batch
/// gains less than @p threshold over the loop (batchGBps[k] / loopGBps[k] < threshold); nullopt
/// when it gains at the largest size. A small size where the batch happens to gain little (the
/// loop's 8 KiB run-to-run noise) does not count while a larger size still gains.
std::optional<std::uint64_t> batchStopsMattering(const std::vector<std::uint64_t>& blockBytes,
                                                 const std::vector<double>& loopGBps,
                                                 const std::vector<double>& batchGBps,
                                                 double threshold = 1.1);

/// The block sizes of a sweep: @p from, doubled until @p to (which is always included), each at
/// most @p totalBytes. @throws std::invalid_argument when from is 0.
std::vector<std::uint64_t> sweepSizes(std::uint64_t from, std::uint64_t to,
                                      std::uint64_t totalBytes);

/// One block size of a sweep, and how many blocks of it are copied.
struct SweepPoint {
  std::uint64_t blockBytes = 0;  ///< Bytes per block.
  std::uint64_t count = 0;       ///< Blocks: the pool's bytes in blocks, at most kMaxBlocks.
};

/// The points of a sweep from @p from to @p to over a pool of @p poolBytes: each sweepSizes()
/// size with the pool cut into blocks of it, never more than kMaxBlocks (the same cap as
/// `--blocks`), and at least 2 (sizes over half the pool are left out).
std::vector<SweepPoint> sweepPoints(std::uint64_t from, std::uint64_t to,
                                    std::uint64_t poolBytes);

/// A dense volume of 32-bit words: rows of `width` words, layers of `height` rows.
struct Volume {
  std::uint64_t width = 0;   ///< Words per row.
  std::uint64_t height = 0;  ///< Rows per layer.
  std::uint64_t depth = 1;   ///< Layers.
  /// All its words.
  std::uint64_t words() const noexcept { return width * height * depth; }
  /// The index of word @p x of row @p y of layer @p z.
  std::uint64_t index(std::uint64_t x, std::uint64_t y, std::uint64_t z) const noexcept {
    return (z * height + y) * width + x;
  }
};

/// A box inside a Volume, in words, rows and layers: the part a 2D or 3D copy moves.
struct Box {
  std::uint64_t x = 0;       ///< First word of each row.
  std::uint64_t y = 0;       ///< First row of each layer.
  std::uint64_t z = 0;       ///< First layer.
  std::uint64_t width = 0;   ///< Words per row.
  std::uint64_t height = 0;  ///< Rows per layer.
  std::uint64_t depth = 1;   ///< Layers.
  /// Whether word @p px of row @p py of layer @p pz is inside.
  bool contains(std::uint64_t px, std::uint64_t py, std::uint64_t pz) const noexcept {
    return px >= x && px < x + width && py >= y && py < y + height && pz >= z && pz < z + depth;
  }
};

/// The words of @p got (a dense copy of @p volume) that are wrong: inside one of @p boxes each
/// must equal the same word of @p source, outside all of them kSentinelWord.
std::uint64_t boxMismatches(const std::uint32_t* got, const std::uint32_t* source,
                            const Volume& volume, const std::vector<Box>& boxes) noexcept;

}  // namespace memsamples
