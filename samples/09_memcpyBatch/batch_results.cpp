// What 09_memcpyBatch's measurements mean (see batch_results.hpp).
#include "batch_results.hpp"

#include <algorithm>
#include <ostream>

namespace memsamples {

// [cta-search]
CtaSearch::CtaSearch(unsigned int maxCtas, double goalGBps)
    : max_(std::max(maxCtas, 1u)), goal_(goalGBps) {}

std::optional<unsigned int> CtaSearch::next() const {
  // First the largest grid: if it misses the goal, no grid meets it.
  if (!met_)
    return missed_ ? std::nullopt : std::optional<unsigned int>(max_);

  // Halve while the goal is met: the grids that are fast to measure come first.
  if (!missed_)
    return *met_ > 1 ? std::optional<unsigned int>(*met_ / 2) : std::nullopt;

  // Then bisect between the largest grid that missed and the smallest that met it, until the
  // gap is within a quarter of the latter (at least 1: then the answer is exact).
  const unsigned int gap = *met_ - *missed_;
  if (gap <= std::max(1u, *met_ / 4))
    return std::nullopt;
  return *missed_ + gap / 2;
}

void CtaSearch::record(unsigned int ctas, double gbps) {
  if (gbps >= goal_) {
    if (!met_ || ctas < *met_)
      met_ = ctas;
  } else if (!missed_ || ctas > *missed_) {
    missed_ = ctas;
  }
}

// [cta-search]

BestWay bestWay(const SweepRow& row) {
  BestWay best{"loop", row.loop};
  if (row.batch > best.share)
    best = {"batch", row.batch};
  if (row.sm > best.share)
    best = {"SMs", row.sm};
  best.share = row.contiguous > 0 ? best.share / row.contiguous : 0;
  return best;
}

// [catch-up]
std::optional<std::uint64_t> batchCatchesUp(const std::vector<SweepRow>& rows) {
  // From the largest block size down, as long as the batch keeps up with the SMs.
  std::optional<std::uint64_t> from;
  for (auto row = rows.rbegin(); row != rows.rend(); ++row) {
    if (row->batch < kCatchUpShare * row->sm)
      break;
    from = row->blockBytes;
  }
  return from;
}
// [catch-up]

std::optional<SweepRow> weakestRow(const std::vector<SweepRow>& rows) {
  std::optional<SweepRow> weakest;
  for (const SweepRow& row : rows) {
    if (!weakest || bestWay(row).share < bestWay(*weakest).share)
      weakest = row;
  }
  return weakest;
}

void RunChecks::expect(bool ok, const std::string& what, const std::string& problem) {
  ++count_;
  if (!ok)
    failures_.push_back(problem.empty() ? what : what + ": " + problem);
}

void RunChecks::expectWords(const PatternCheck& check, const std::string& what) {
  expect(check.passed(), what, describePatternCheck(check));
}

Verdict RunChecks::report(std::ostream& out, JsonObject& json) const {
  out << "Checks: " << count_ - failures_.size() << " of " << count_ << " passed\n";
  for (const std::string& failure : failures_)
    out << "  FAILED: " << failure << '\n';
  json.set("checks", static_cast<std::uint64_t>(count_))
      .set("failedChecks", static_cast<std::uint64_t>(failures_.size()));
  // A run that checked nothing proved nothing.
  return count_ > 0 && failures_.empty() ? Verdict::Pass : Verdict::Fail;
}

}  // namespace memsamples
