/**
 * @file memcpyBatch.cpp
 * @brief Thousands of scattered copies in one call: cuMemcpyBatchAsync, its source
 *        access orders and flags, measured against a loop of copies, an SM gather and
 *        one contiguous copy of the same bytes.
 *
 * Real programs seldom copy one big buffer: they move thousands of small blocks that
 * lie scattered on both sides (KV-cache pages offloaded to the host and back, a table's
 * columns, an allocator's pages). One cuMemcpyHtoDAsync per block pays the driver's
 * cost per call, thousands of times. cuMemcpyBatchAsync (CUDA 12.8) takes every block
 * in one call, with a promise per group of copies about when their sources may be read.
 * runMemcpyBatch() makes the calls in order:
 *
 * 1. Load the driver, make sure it has the batch calls (**cuInit**, Common's
 *    requireEntryPoint()), and pick a device (Common's selectDevice()).
 * 2. Create a context (**cuCtxCreate**): it owns everything below.
 * 3. Size and allocate the pools (1,024 blocks of 64 KiB by default, fewer where they do
 *    not fit): a device pool with room for a note from the stack after its last slot
 *    (**cuMemAlloc**), a pinned host pool the blocks come from and one they
 *    come back to (**cuMemHostAlloc**, mapped for step 7's kernels), and a pageable copy
 *    of the source pool (`std::vector`).
 * 4. Fill the pools: every block's data into its scattered slot of the host pools, and
 *    a sentinel into the whole device pool (**cuMemsetD32Async**) on a new stream
 *    (**cuStreamCreate**: the batch refuses the legacy NULL stream).
 * 5. One batch, three promises: **cuMemcpyBatchAsync** copies half the blocks from the
 *    pinned pool (read in stream order), the other half from the pageable copy (read at
 *    any time), and the note from the stack (read before the call returns).
 * 6. Check every byte: the whole device pool and the note come back
 *    (**cuMemcpyDtoHAsync**, **cuStreamSynchronize**), and every block must be in its
 *    slot.
 * 7. Measure every way in both directions next to one contiguous copy of the same bytes
 *    (memcpyBatch_measure.cpp): the loop, the batch, the pageable batch, the batch
 *    beside a kernel, the SM gather and scatter and the fewest CTAs that keep up with
 *    the link; then the 2D/3D shapes with their synchronous twins (cuMemcpy2D,
 *    cuMemcpy2DUnaligned, cuMemcpy3D) and the memsets, each checked; with `--sweep`,
 *    every block size, and where the batch catches up with the SMs.
 * 8. Release everything in reverse order of creation, each answer checked:
 *    **cuStreamDestroy**, **cuMemFreeHost**, **cuMemFree**, **cuCtxDestroy**.
 */
#include <array>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "batch_plan.hpp"
#include "memcpyBatch_measure.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;

namespace {

// The pattern every block's words come from; step 7 checks with the same seed.
constexpr std::uint32_t kSeed = ms::kBlockSeed;

// The note the batch copies from the stack: the run's shape, checked when it comes back.
using Note = std::array<std::uint64_t, 3>;

/// The lesson: one batch of scattered copies, each call in the order a program makes it.
ms::Verdict runMemcpyBatch(const ms::CommonOptions& common,
                           const ms::BatchOptions& options, ms::Report& report) {
  std::ostream& out = report.out();

  //! [core]
  // 1. Load the driver (waived below the toolkit's major version), make sure it has the
  // batch calls (CUDA 13.0's _v2 entry points), and pick a device.
  ms::checkDriverInit(cuInit(0));
  ms::requireEntryPoint(cuMemcpyBatchAsync, "cuMemcpyBatchAsync_v2");
  ms::requireEntryPoint(cuMemcpy3DBatchAsync, "cuMemcpy3DBatchAsync_v2");
  const CUdevice device = ms::selectDevice(common.device);

  // 2. Create a context: current on this thread from now on, it owns all that follows.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");

  // 3. Size the pools to what fits, and allocate them (mapped for step 7's kernels).
  const ms::BlockLayout layout = sizeRun(device, options, out);
  ms::OwnedDeviceMemory devicePool;
  ms::check(cuMemAlloc(devicePool.out(), layout.bytes + sizeof(Note)), "cuMemAlloc");
  const CUdeviceptr noteDst = devicePool.get() + layout.bytes;  // after the last slot
  ms::OwnedPinnedHostMemory sourcePool;
  ms::OwnedPinnedHostMemory returnPool;
  const unsigned int mapped = CU_MEMHOSTALLOC_DEVICEMAP;
  ms::check(cuMemHostAlloc(sourcePool.out(), layout.bytes, mapped), "cuMemHostAlloc");
  ms::check(cuMemHostAlloc(returnPool.out(), layout.bytes, mapped), "cuMemHostAlloc");
  std::vector<std::uint32_t> pageablePool(layout.bytes / sizeof(std::uint32_t));
  Note arrived = {};  // step 6 copies the note back here: it must outlive the stream

  // 4. Fill the pools, the device's with sentinels, on a stream: the batch refuses stream 0.
  auto* source = static_cast<std::uint32_t*>(sourcePool.get());
  auto* back = static_cast<std::uint32_t*>(returnPool.get());
  ms::fillBlocks(source, layout, ms::PoolSide::Host, kSeed);
  ms::fillBlocks(pageablePool.data(), layout, ms::PoolSide::Host, kSeed);
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const std::size_t words = (layout.bytes + sizeof(Note)) / sizeof(std::uint32_t);
  ms::check(cuMemsetD32Async(devicePool.get(), ms::kSentinelWord, words, stream.get()),
            "cuMemsetD32Async");

  // 5. One batch: a destination, a source and a size per copy. Half the blocks come from
  // the pinned pool, the rest from the pageable one (offsets are in bytes), and last, as
  // copy number layout.count, a note on the stack.
  std::vector<CUdeviceptr> dsts;
  std::vector<CUdeviceptr> srcs;
  std::vector<std::size_t> sizes;
  for (std::uint64_t block = 0; block < layout.count; ++block) {
    const auto* from = block < layout.count / 2 ? source : pageablePool.data();
    dsts.push_back(devicePool.get() + layout.deviceOffsets[block]);
    srcs.push_back(reinterpret_cast<CUdeviceptr>(from) + layout.hostOffsets[block]);
    sizes.push_back(layout.blockBytes);
  }
  const Note note = {layout.count, layout.blockBytes, kSeed};
  dsts.push_back(noteDst);
  srcs.push_back(reinterpret_cast<CUdeviceptr>(note.data()));
  sizes.push_back(sizeof(note));

  // One attribute per group (attrsIdxs: its first copy), a promise about when sources are
  // read. STREAM: in stream order. ANY: at any time. DURING_API_CALL: before it returns.
  std::array<CUmemcpyAttributes, 3> attrs = {
      ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM),
      ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_ANY),
      ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL)};
  std::array<std::size_t, 3> attrsIdxs = {0, layout.count / 2, layout.count};

  // Every answer is checked: no refusal of the batch is a reason to carry on.
  ms::check(cuMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(),
                               attrs.data(), attrsIdxs.data(), attrs.size(), stream.get()),
            "cuMemcpyBatchAsync");

  // 6. Check every byte: the pool and the note come back in one contiguous copy each.
  ms::check(cuMemcpyDtoHAsync(back, devicePool.get(), layout.bytes, stream.get()),
            "cuMemcpyDtoHAsync");
  ms::check(cuMemcpyDtoHAsync(arrived.data(), noteDst, sizeof(note), stream.get()),
            "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
  ms::BatchRun run;
  run.lessonBlocks = ms::checkBlocks(back, layout, ms::PoolSide::Device, kSeed);
  run.noteArrived = arrived == note;

  // 7. Measure every way against one contiguous copy of the same bytes, each checked.
  run.devicePool = devicePool.get();
  run.sourcePool = source;
  run.returnPool = back;
  run.pageablePool = pageablePool.data();
  const ms::Verdict verdict = measureMemcpyBatch(run, layout, common, options, report);

  // 8. Release everything in reverse order, each checked (step 6 drained the stream).
  ms::check(cuStreamDestroy(stream.release()), "cuStreamDestroy");
  ms::check(cuMemFreeHost(returnPool.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(sourcePool.release()), "cuMemFreeHost");
  ms::check(cuMemFree(devicePool.release()), "cuMemFree");
  ms::check(cuCtxDestroy(context.release()), "cuCtxDestroy");
  //! [core]

  return verdict;
}

}  // namespace

/// Parses the options and hands the lesson to runSample(), which owns output and exit
/// codes.
int main(int argc, char** argv) {
  ms::CommonOptions common;
  ms::BatchOptions options;
  ms::CommandLine commandLine(
      "memcpyBatch",
      "Copies thousands of scattered blocks between pinned host memory and the device: "
      "a loop of copies, one cuMemcpyBatchAsync, an SM gather and one contiguous copy, "
      "every byte verified; then 2D/3D copies and memsets. --sweep finds the block size "
      "where the batch catches up with the SMs.");
  commandLine.addCommonOptions(common);
  ms::addBatchOptions(commandLine, options);
  return ms::runSample(commandLine, common, argc, argv, [&](ms::Report& report) {
    // Bad sizes are usage errors before the driver is even loaded.
    ms::validateOptions(options);
    return runMemcpyBatch(common, options, report);
  });
}
