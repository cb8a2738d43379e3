/**
 * @file memcpyBatch_measure.hpp
 * @brief What 09_memcpyBatch measures: how many blocks fit, every way of moving them in both
 *        directions next to one contiguous copy of the same bytes, the block-size sweep, and the
 *        shapes the copy engine walks itself (pitched 2D, 3D boxes, their batch, the memsets).
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <iosfwd>

#include "batch_plan.hpp"
#include "memsamples.hpp"

namespace memsamples {

/// What the lesson made and hands to the measurements (all of it stays the lesson's).
struct BatchRun {
  CUdeviceptr devicePool = 0;             ///< The blocks' layout.bytes (a note follows them).
  std::uint32_t* sourcePool = nullptr;    ///< Pinned, mapped; every block in its host slot.
  std::uint32_t* returnPool = nullptr;    ///< Pinned, mapped; where device-to-host ways write.
  std::uint32_t* pageablePool = nullptr;  ///< Pageable (std::vector), filled as sourcePool.
  CUresult batchAnswer = CUDA_SUCCESS;    ///< What the lesson's cuMemcpyBatchAsync answered.
  bool lessonPassed = false;              ///< The lesson's batch delivered every byte.
};

/// The pattern seed of every block's words (batch_plan.hpp's fillBlocks / checkBlocks).
inline constexpr std::uint32_t kBlockSeed = 2025;

}  // namespace memsamples

/**
 * The layout of the run, and the lines that say so ("Device N: name" and "Blocks: ..." on
 * @p out): `--blocks` blocks
 * of `--block-size` bytes, checked against the device's free memory (one pool; cuMemGetInfo in
 * the current context) and the host memory this process may take (two pinned pools and a
 * pageable one). A run that does not fit is refused with the limit named.
 * @throws memsamples::UsageError, CudaError.
 */
memsamples::BlockLayout sizeRun(CUdevice device, const memsamples::BatchOptions& options,
                                std::ostream& out);

/**
 * Times every way of moving the blocks of @p layout with CUDA events, on a stream of its own (median of `--iterations` after
 * `--warmup`), each checked word by word before it is timed: host to device the contiguous
 * copy, a loop of cuMemcpyHtoDAsync, cuMemcpyBatchAsync (STREAM), the batch from the pageable
 * pool (ANY), the batch beside a running kernel without and with
 * CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE, and the SM gather over mapped memory; device to
 * host the same but the pageable batch. Prints GB/s, the ratio to the contiguous copy and the
 * host's submit time per copy; then the shapes (measureShapes) and, with `--sweep`, every block
 * size. Ways the driver answers CUDA_ERROR_NOT_SUPPORTED are printed as such and skipped.
 * PASS when the lesson's batch (unless unsupported) and every check passed. @throws CudaError.
 */
memsamples::Verdict measureMemcpyBatch(const memsamples::BatchRun& run,
                                       const memsamples::BlockLayout& layout,
                                       const memsamples::CommonOptions& common,
                                       const memsamples::BatchOptions& options,
                                       memsamples::Report& report);
