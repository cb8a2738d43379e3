// 10_streamOrderedPool's CUDA-free decisions and tables (see pool_plan.hpp).
#include "pool_plan.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <random>
#include <sstream>
#include <stdexcept>

#include "memsamples.hpp"
#include "support/cli.hpp"

namespace ms = memsamples;

namespace pool_plan {

namespace {

constexpr std::uint64_t kDefaultMinBytes = 1ull << 10;   // 1 KiB
constexpr std::uint64_t kDefaultMaxBytes = 64ull << 20;  // 64 MiB
constexpr std::uint64_t kSizeAlignment = 256;            // what cuMemAlloc aligns to

std::string bytesCell(const std::optional<std::uint64_t>& bytes) {
  return bytes ? ms::formatBytes(*bytes) : "-";
}

}  // namespace

std::uint64_t parseThreshold(std::string_view text) {
  if (text == "max")
    return UINT64_MAX;
  try {
    return ms::parseSize(text, "--threshold", 0, UINT64_MAX);
  } catch (const ms::UsageError&) {
    throw ms::UsageError("invalid value '" + std::string(text) +
                         "' for --threshold: expected 'max' or a byte count such as 0, 64K or "
                         "256M");
  }
}

RunPlan checkOptions(const std::optional<std::uint64_t>& minBytes,
                     const std::optional<std::uint64_t>& maxBytes, std::string_view threshold,
                     int iterations, const std::optional<std::uint64_t>& sameBytes) {
  RunPlan plan;
  plan.minBytes = minBytes.value_or(kDefaultMinBytes);
  plan.maxBytes = maxBytes.value_or(std::max(kDefaultMaxBytes, plan.minBytes));
  if (plan.minBytes > plan.maxBytes)
    throw ms::UsageError("--min-size " + ms::formatBytes(plan.minBytes) +
                         " is larger than --max-size " + ms::formatBytes(plan.maxBytes) +
                         ": the sizes are out of order");
  plan.keepThreshold = parseThreshold(threshold);
  if (iterations < 1)
    throw ms::UsageError("--iterations must be at least 1");
  plan.allocations = iterations * kAllocationsPerIteration;
  plan.sameBytes = sameBytes.value_or(kDefaultSameSizeBytes);
  plan.sameAllocations = iterations * kSameSizePairsPerIteration;
  return plan;
}

std::uint64_t fitLargest(std::uint64_t minBytes, std::uint64_t maxBytes, std::uint64_t freeBytes,
                         int livePerStep) {
  const auto blocks = static_cast<std::uint64_t>(std::max(livePerStep, 1));
  const std::uint64_t budget = freeBytes / 4 / blocks;
  return std::max(minBytes, std::min(maxBytes, budget));
}

std::vector<std::uint64_t> sameSizes(int count, std::uint64_t bytes) {
  return std::vector<std::uint64_t>(static_cast<std::size_t>(std::max(count, 0)), bytes);
}

std::vector<std::uint64_t> sizeMix(int count, std::uint64_t minBytes, std::uint64_t maxBytes,
                                   std::uint32_t seed) {
  // A fixed engine and our own mapping (std::uniform_real_distribution differs between
  // standard libraries), so the mix is the same everywhere.
  std::mt19937 engine(seed);
  const double low = std::log(static_cast<double>(minBytes));
  const double high = std::log(static_cast<double>(maxBytes));
  std::vector<std::uint64_t> sizes;
  sizes.reserve(static_cast<std::size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) {
    const double unit = static_cast<double>(engine()) / 4294967296.0;  // [0, 1)
    auto bytes = static_cast<std::uint64_t>(std::exp(low + unit * (high - low)));
    bytes = std::clamp(bytes, minBytes, maxBytes);
    const std::uint64_t aligned = bytes / kSizeAlignment * kSizeAlignment;
    if (aligned >= minBytes && aligned > 0)
      bytes = aligned;
    sizes.push_back(bytes);
  }
  return sizes;
}

Loop sameSizeLoop(const RunPlan& plan) {
  Loop loop;
  loop.sizes = sameSizes(plan.sameAllocations, plan.sameBytes);
  loop.livePerStep = kSameSizeLivePerStep;
  loop.allocationsPerStep = kSameSizePairsPerStep;
  return loop;
}

Loop mixLoop(const RunPlan& plan, std::uint32_t seed) {
  Loop loop;
  loop.sizes = sizeMix(plan.allocations, plan.minBytes, plan.maxBytes, seed);
  loop.livePerStep = kMixLivePerStep;
  loop.allocationsPerStep = kMixLivePerStep;
  return loop;
}

namespace {

/// [first, last) cut into ranges of @p length (the last one shorter).
std::vector<StepRange> cut(std::size_t first, std::size_t last, std::size_t length) {
  std::vector<StepRange> ranges;
  for (std::size_t start = first; start < last; start += length) {
    StepRange range;
    range.first = start;
    range.count = std::min(length, last - start);
    ranges.push_back(range);
  }
  return ranges;
}

}  // namespace

std::vector<StepRange> steps(const Loop& loop) {
  if (loop.allocationsPerStep < 1)
    return {};
  return cut(0, loop.sizes.size(), static_cast<std::size_t>(loop.allocationsPerStep));
}

std::vector<StepRange> groups(const Loop& loop, const StepRange& step) {
  const auto live = static_cast<std::size_t>(std::max(loop.livePerStep, 1));
  return cut(step.first, step.first + step.count, live);
}

void LiveBytes::allocate(std::uint64_t bytes) {
  live_ += bytes;
  high_ = std::max(high_, live_);
}

void LiveBytes::free(std::uint64_t bytes) {
  if (bytes > live_)
    throw std::logic_error("LiveBytes: " + std::to_string(bytes) + " bytes freed, but only " +
                           std::to_string(live_) + " are live");
  live_ -= bytes;
}

std::uint64_t loopHighWater(const Loop& loop) {
  LiveBytes live;
  for (const StepRange& step : steps(loop)) {
    for (const StepRange& group : groups(loop, step)) {
      const std::size_t last = group.first + group.count;
      for (std::size_t i = group.first; i < last; ++i)
        live.allocate(loop.sizes[i]);
      for (std::size_t i = group.first; i < last; ++i)
        live.free(loop.sizes[i]);
    }
  }
  return live.high();
}

double quantile(std::vector<double> values, double fraction) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least `fraction` of all values at or below it.
  const double rank = std::ceil(fraction * static_cast<double>(values.size()));
  const std::size_t index = static_cast<std::size_t>(std::max(rank, 1.0)) - 1;
  return values[std::min(index, values.size() - 1)];
}

std::string latencyTable(const std::string& title, const std::vector<VariantResult>& variants) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2);
  out << std::left << std::setw(36) << title << std::right
      << "   median us      p99 us   speed-up (median)\n";
  for (const VariantResult& variant : variants) {
    out << "  " << std::left << std::setw(34) << variant.name << std::right << std::setw(12)
        << variant.medianUs << std::setw(12) << variant.p99Us;
    if (!variants.empty() && variant.medianUs > 0)
      out << std::setw(14) << variants.front().medianUs / variant.medianUs << "x";
    out << '\n';
  }
  return out.str();
}

std::string footprintTable(const std::vector<VariantResult>& variants, std::uint64_t liveHigh) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2);
  out << "Footprint                            reserved high   used high   after sync"
         "   reserved / live\n";
  for (const VariantResult& variant : variants) {
    out << "  " << std::left << std::setw(34) << variant.name << std::right << std::setw(13)
        << bytesCell(variant.reservedHigh) << std::setw(12) << bytesCell(variant.usedHigh)
        << std::setw(13) << bytesCell(variant.reservedAfter);
    if (variant.reservedHigh && liveHigh > 0)
      out << std::setw(17)
          << static_cast<double>(*variant.reservedHigh) / static_cast<double>(liveHigh);
    out << '\n';
  }
  out << "  live bytes high-water mark of the loop: " << ms::formatBytes(liveHigh) << '\n';
  return out.str();
}

std::string reuseTable(const std::vector<ReuseResult>& rows) {
  std::ostringstream out;
  out << "Reuse across streams (same address on stream 2?)                rule on   rule off\n";
  for (const ReuseResult& row : rows) {
    out << "  " << std::left << std::setw(60) << (row.rule + ", " + row.scenario) << std::right
        << std::setw(8) << (row.reusedWhenOn ? "yes" : "no") << std::setw(11)
        << (row.reusedWhenOff ? "yes" : "no") << '\n';
  }
  return out.str();
}

}  // namespace pool_plan
