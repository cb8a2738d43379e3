/**
 * @file memcpyBatch_measure.hpp
 * @brief What 09_memcpyBatch measures: how many blocks fit, every way of moving them in both
 *        directions next to one contiguous copy of the same bytes (with the fewest CTAs the SMs
 *        need to keep up with the link), the block-size sweep and its crossover, and the shapes
 *        the copy engine walks itself (pitched 2D, 3D boxes, their batch and synchronous twins,
 *        the memsets).
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <iosfwd>

#include "batch_plan.hpp"
#include "memsamples.hpp"
#include "support/word_pattern.hpp"

namespace memsamples {

/// What the lesson made and hands to the measurements (all of it stays the lesson's).
struct BatchRun {
  CUdeviceptr devicePool = 0;             ///< The blocks' layout.bytes (a note follows them).
  std::uint32_t* sourcePool = nullptr;    ///< Pinned, mapped; every block in its host slot.
  std::uint32_t* returnPool = nullptr;    ///< Pinned, mapped; where device-to-host ways write.
  std::uint32_t* pageablePool = nullptr;  ///< Pageable (std::vector), filled as sourcePool.
  PatternCheck lessonBlocks;              ///< The lesson's batch: every block in its slot?
  bool noteArrived = false;               ///< The lesson's batch: the note from the stack?
};

/// The pattern seed of every block's words (batch_plan.hpp's fillBlocks / checkBlocks).
inline constexpr std::uint32_t kBlockSeed = 2025;

}  // namespace memsamples

/**
 * The layout of the run, and the lines that say so ("Device N: name" and "Blocks: ..." on
 * @p out): `--blocks` blocks of `--block-size` bytes, fitted (fitBlockCount()) to 80 % of the
 * device's free memory (one pool; cuMemGetInfo in the current context) and of the host memory
 * this process may take (two pinned pools and a pageable one). The default count is cut to
 * what fits; a named one that does not fit is refused with the limit named.
 * @throws memsamples::UsageError, memsamples::WaivedError, CudaError.
 */
memsamples::BlockLayout sizeRun(CUdevice device, const memsamples::BatchOptions& options,
                                std::ostream& out);

/**
 * Times every way of moving the blocks of @p layout with CUDA events, on a stream of its own
 * (median of `--iterations` after `--warmup`), each checked word by word before it is timed:
 * host to device the contiguous copy, a loop of cuMemcpyHtoDAsync, cuMemcpyBatchAsync (STREAM),
 * the batch from the pageable pool (ANY), the batch beside a running kernel without and with
 * CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE, the SM gather over mapped memory on every SM and
 * on the fewest CTAs that reach 0.9 of the contiguous copy; device to host the same but the
 * pageable batch. Prints GB/s, the ratio to the contiguous copy and the host's submit time per
 * copy; then the shapes (with the synchronous twins cuMemcpy2D, cuMemcpy2DUnaligned and
 * cuMemcpy3D) and memsets and, with `--sweep`, every block size in both directions
 * with where the batch catches up with the SMs. Every check, the lesson's batch first, goes to
 * a RunChecks, whose report is the verdict. @throws CudaError.
 */
memsamples::Verdict measureMemcpyBatch(const memsamples::BatchRun& run,
                                       const memsamples::BlockLayout& layout,
                                       const memsamples::CommonOptions& common,
                                       const memsamples::BatchOptions& options,
                                       memsamples::Report& report);
