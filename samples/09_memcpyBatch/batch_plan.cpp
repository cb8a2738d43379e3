// 09_memcpyBatch's CUDA-free parts (see batch_plan.hpp).
#include "batch_plan.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "memsamples.hpp"

namespace memsamples {

namespace {

/// The first number from @p start up that is coprime with @p count (1 always is).
std::uint64_t coprimeFrom(std::uint64_t start, std::uint64_t count) {
  for (std::uint64_t stride = start; stride > 1; ++stride) {
    if (std::gcd(stride, count) == 1)
      return stride % count;
  }
  return 1;
}

std::string sizeText(std::uint64_t bytes) {
  return std::to_string(bytes) + " (" + formatBytes(bytes) + ")";
}

}  // namespace

void addBatchOptions(CommandLine& commandLine, BatchOptions& options) {
  // At least 2: the lesson's batch sends half the blocks from each host pool. Unnamed, the
  // count stays 0 and the default is cut to fit where it must (fitBlockCount()).
  commandLine.addInteger("blocks",
                         "how many blocks are copied, 2 to 65536 (default 1024, fewer where "
                         "they do not fit)",
                         options.blocks, 2, static_cast<long long>(kMaxBlocks));
  // 0 is accepted here and refused by validateOptions(), with the message of the sample's own.
  commandLine.addSize("block-size", "bytes per block, a multiple of 4 (default 64K)",
                      options.blockBytes, 0);
  commandLine.addFlag("sweep",
                      "also time the loop, the batch and the SMs at every block size, both "
                      "directions",
                      options.sweep);
  commandLine.addSize("sweep-min", "smallest block size of --sweep (default 4K)",
                      options.sweepMin, 0);
  commandLine.addSize("sweep-max", "largest block size of --sweep (default 1M)", options.sweepMax,
                      0);
}

void validateOptions(const BatchOptions& options) {
  const std::uint64_t block = options.blockSize();
  if (block == 0)
    throw UsageError("--block-size must be greater than 0");
  if (block % kBlockElementBytes != 0)
    throw UsageError("--block-size " + std::to_string(block) + " is not a multiple of " +
                     std::to_string(kBlockElementBytes) + " bytes (one element)");
  const std::uint64_t blocks = options.blockCount();
  if (blocks < 1 || block > kMaxTotalBytes / blocks)
    throw UsageError("--blocks " + std::to_string(blocks) + " x --block-size " +
                     sizeText(block) + " is more than this sample takes: at most 1T in all");
  if (!options.sweep)
    return;
  const std::uint64_t from = options.sweepFrom();
  const std::uint64_t to = options.sweepTo();
  for (const auto& [name, bytes] : {std::pair{"--sweep-min", from}, std::pair{"--sweep-max", to}}) {
    if (bytes == 0 || bytes % kBlockElementBytes != 0)
      throw UsageError(std::string(name) + " " + std::to_string(bytes) +
                       " is not a positive multiple of " + std::to_string(kBlockElementBytes) +
                       " bytes (one element)");
  }
  if (from > to)
    throw UsageError("--sweep-min " + sizeText(from) + " is larger than --sweep-max " +
                     sizeText(to));
}

BlockCount fitBlockCount(const BatchOptions& options, std::uint64_t poolBudget,
                         const std::string& limitedBy) {
  const std::uint64_t blockBytes = options.blockSize();
  const std::uint64_t wanted = options.blockCount();
  const std::uint64_t fits = poolBudget / blockBytes;
  if (wanted <= fits)
    return {wanted, false};

  // A named count is the experiment: never changed behind the user's back.
  if (options.blocksNamed()) {
    throw UsageError("--blocks " + std::to_string(wanted) + " x --block-size " +
                     formatBytes(blockBytes) + " = " + formatBytes(wanted * blockBytes) +
                     " does not fit " + limitedBy + ": at most " + formatBytes(poolBudget) +
                     " in all");
  }

  // The default count is only a starting point: a shared GPU or a small container gets fewer.
  if (fits < kMinFittedBlocks) {
    throw WaivedError("only " + formatBytes(poolBudget) + " per pool fits " + limitedBy +
                      ", fewer than " + std::to_string(kMinFittedBlocks) + " blocks of " +
                      formatBytes(blockBytes) + "; name a smaller --blocks or --block-size");
  }
  return {fits, true};
}

namespace {

/// (a x b) mod m without overflow: a and b may each be up to 2^38 (1 TiB of 4-byte blocks).
std::uint64_t mulMod(std::uint64_t a, std::uint64_t b, std::uint64_t m) noexcept {
  __extension__ typedef unsigned __int128 Wide;
  return static_cast<std::uint64_t>(static_cast<Wide>(a) * b % m);
}

}  // namespace

// [layout]
std::uint64_t BlockLayout::hostSlot(std::uint64_t block) const noexcept {
  // (block x stride) mod count visits every slot once when stride and count are coprime.
  return mulMod(block, hostStride, count);
}

std::uint64_t BlockLayout::deviceSlot(std::uint64_t block) const noexcept {
  // Shifted by half the pool, so block 0 is not at slot 0 of both pools.
  return (mulMod(block, deviceStride, count) + count / 2) % count;
}

BlockLayout makeLayout(std::uint64_t count, std::uint64_t blockBytes, bool listOffsets) {
  if (count == 0)
    throw std::invalid_argument("a layout needs at least one block");
  BlockLayout layout;
  layout.count = count;
  layout.blockBytes = blockBytes;
  layout.bytes = count * blockBytes;
  // Strides near 0.62 and 0.38 of the pool: neighbours in the batch land far apart in both pools.
  layout.hostStride = coprimeFrom(count * 5 / 8 + 1, count);
  // Block i sits at the same slot on both sides only where count divides i times the strides'
  // difference: a difference with no factor in common with count (2 at most, for even counts,
  // where both strides are odd) keeps that to a block or two.
  layout.deviceStride = coprimeFrom(count * 3 / 8 + 1, count);
  for (std::uint64_t step = 0; step < count; ++step) {
    const std::uint64_t stride = coprimeFrom(count * 3 / 8 + 1 + step, count);
    const std::uint64_t difference = (layout.hostStride + count - stride) % count;
    if (std::gcd(difference, count) <= 2) {
      layout.deviceStride = stride;
      break;
    }
  }
  if (listOffsets) {
    layout.hostOffsets.resize(count);
    layout.deviceOffsets.resize(count);
    for (std::uint64_t block = 0; block < count; ++block) {
      layout.hostOffsets[block] = layout.hostOffset(block);
      layout.deviceOffsets[block] = layout.deviceOffset(block);
    }
  }
  return layout;
}
// [layout]

void fillBlocks(std::uint32_t* pool, const BlockLayout& layout, PoolSide side,
                std::uint32_t seed) noexcept {
  const std::uint64_t words = layout.blockBytes / kBlockElementBytes;
  for (std::uint64_t block = 0; block < layout.count; ++block) {
    const std::uint64_t slot =
        side == PoolSide::Host ? layout.hostSlot(block) : layout.deviceSlot(block);
    for (std::uint64_t w = 0; w < words; ++w)
      pool[slot * words + w] = patternWord(seed, block * words + w);
  }
}

PatternCheck checkBlocks(const std::uint32_t* pool, const BlockLayout& layout, PoolSide side,
                         std::uint32_t seed) noexcept {
  PatternCheck result;
  const std::uint64_t words = layout.blockBytes / kBlockElementBytes;
  for (std::uint64_t block = 0; block < layout.count; ++block) {
    const std::uint64_t slot =
        side == PoolSide::Host ? layout.hostSlot(block) : layout.deviceSlot(block);
    for (std::uint64_t w = 0; w < words; ++w) {
      const std::uint32_t expected = patternWord(seed, block * words + w);
      const std::uint32_t actual = pool[slot * words + w];
      ++result.words;
      if (actual == expected)
        continue;
      if (result.mismatches++ == 0) {
        result.firstBad = slot * words + w;
        result.expected = expected;
        result.actual = actual;
      }
    }
  }
  return result;
}

void BatchPlan::beginGroup(const CUmemcpyAttributes& attributes) {
  if (!attrsIdxs.empty() && attrsIdxs.back() == count()) {
    attrs.back() = attributes;
    return;
  }
  attrs.push_back(attributes);
  attrsIdxs.push_back(count());
}

void BatchPlan::addCopy(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  if (attrs.empty())
    throw std::logic_error("BatchPlan::addCopy before beginGroup");
  dsts.push_back(dst);
  srcs.push_back(src);
  sizes.push_back(bytes);
}

CUmemcpyAttributes copyAttributes(CUmemcpySrcAccessOrder order, unsigned int flags) noexcept {
  CUmemcpyAttributes attributes{};
  attributes.srcAccessOrder = order;
  // No location hints (srcLocHint, dstLocHint stay zero): they matter only for managed memory,
  // or pageable memory that a GPU can page in, and the driver ignores them for the rest.
  attributes.flags = flags;
  return attributes;
}

BatchPlan planBlocks(const BlockLayout& layout, CUdeviceptr dstBase, CUdeviceptr srcBase,
                     bool hostToDevice, const CUmemcpyAttributes& attributes) {
  BatchPlan plan;
  plan.beginGroup(attributes);
  plan.dsts.reserve(layout.count);
  plan.srcs.reserve(layout.count);
  plan.sizes.reserve(layout.count);
  for (std::uint64_t block = 0; block < layout.count; ++block) {
    const std::uint64_t host = layout.hostOffset(block);
    const std::uint64_t device = layout.deviceOffset(block);
    plan.addCopy(dstBase + (hostToDevice ? device : host), srcBase + (hostToDevice ? host : device),
                 layout.blockBytes);
  }
  return plan;
}

// [plan-rules]
std::string planProblem(const BatchPlan& plan) {
  const std::size_t count = plan.count();
  if (count == 0)
    return "the batch has no copies";
  if (plan.dsts.size() != count || plan.srcs.size() != count)
    return "dsts, srcs and sizes differ in length";
  if (plan.attrs.empty() || plan.attrs.size() != plan.attrsIdxs.size())
    return "attrs and attrsIdxs differ in length, or are empty";
  if (plan.attrsIdxs.size() > count)
    return "more attributes than copies";
  if (plan.attrsIdxs.front() != 0)
    return "attrsIdxs[0] is not 0";
  for (std::size_t k = 1; k < plan.attrsIdxs.size(); ++k) {
    if (plan.attrsIdxs[k] <= plan.attrsIdxs[k - 1])
      return "attrsIdxs is not strictly increasing at " + std::to_string(k);
  }
  if (plan.attrsIdxs.back() >= count)
    return "the last attrsIdxs entry is not below the copy count";
  return {};
}

CUresult enqueueBatch(BatchPlan& plan, CUstream stream) {
  const std::string problem = planProblem(plan);
  if (!problem.empty())
    throw std::logic_error("malformed batch: " + problem);
  return cuMemcpyBatchAsync(plan.dsts.data(), plan.srcs.data(), plan.sizes.data(), plan.count(),
                            plan.attrs.data(), plan.attrsIdxs.data(), plan.attrs.size(), stream);
}
// [plan-rules]

std::optional<std::uint64_t> batchStopsMattering(const std::vector<std::uint64_t>& blockBytes,
                                                 const std::vector<double>& loopGBps,
                                                 const std::vector<double>& batchGBps,
                                                 double threshold) {
  // From the largest block size down, as long as the batch gains less than the threshold.
  const std::size_t sizes = std::min({blockBytes.size(), loopGBps.size(), batchGBps.size()});
  std::optional<std::uint64_t> from;
  for (std::size_t k = sizes; k-- > 0;) {
    if (batchGBps[k] >= threshold * loopGBps[k])
      break;
    from = blockBytes[k];
  }
  return from;
}

std::vector<std::uint64_t> sweepSizes(std::uint64_t from, std::uint64_t to,
                                      std::uint64_t totalBytes) {
  if (from == 0)
    throw std::invalid_argument("a sweep starts above 0 bytes");
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t bytes = from; bytes < to && bytes <= totalBytes; bytes *= 2)
    sizes.push_back(bytes);
  if (to <= totalBytes)
    sizes.push_back(to);
  return sizes;
}

std::vector<SweepPoint> sweepPoints(std::uint64_t from, std::uint64_t to,
                                    std::uint64_t poolBytes) {
  std::vector<SweepPoint> points;
  for (const std::uint64_t blockBytes : sweepSizes(from, to, poolBytes)) {
    // The same cap as --blocks: a tiny block size moves less than the pool, never more copies.
    const std::uint64_t count = std::min(poolBytes / blockBytes, kMaxBlocks);
    if (count >= 2)
      points.push_back({blockBytes, count});
  }
  return points;
}

std::uint64_t boxMismatches(const std::uint32_t* got, const std::uint32_t* source,
                            const Volume& volume, const std::vector<Box>& boxes) noexcept {
  std::uint64_t wrong = 0;
  for (std::uint64_t z = 0; z < volume.depth; ++z) {
    for (std::uint64_t y = 0; y < volume.height; ++y) {
      for (std::uint64_t x = 0; x < volume.width; ++x) {
        bool inside = false;
        for (const Box& box : boxes)
          inside = inside || box.contains(x, y, z);
        const std::uint64_t at = volume.index(x, y, z);
        const std::uint32_t expected = inside ? source[at] : kSentinelWord;
        wrong += got[at] != expected ? 1 : 0;
      }
    }
  }
  return wrong;
}

}  // namespace memsamples
