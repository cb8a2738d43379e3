/**
 * @file batch_results.hpp
 * @brief What 09_memcpyBatch's measurements mean, CUDA-free: the search for the fewest CTAs
 *        that copy as fast as the link allows, where the batch catches up with the SMs, the best
 *        way at each block size, and the run's checks that make its verdict.
 *
 * memcpyBatch_measure.cpp measures; these functions judge. ctest/unit/memcpyBatch tests them
 * with good and bad measurements, so a verdict or a search that lies fails a CPU test.
 */
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "support/json.hpp"
#include "support/word_pattern.hpp"

namespace memsamples {

/// The share of the contiguous copy that a way must reach to count as "as fast as the link".
inline constexpr double kLinkShare = 0.9;

/// The share of the SMs' rate from which the batch counts as caught up with them.
inline constexpr double kCatchUpShare = 0.95;

/**
 * The fewest CTAs (thread blocks) of the SM copy that reach a goal rate, found by measuring:
 * ask next() for a grid, measure it, record() the rate, until next() says nothing. It halves
 * from the largest grid while the goal is met (large grids are the fast ones to measure), then
 * bisects between the last grid that missed and the smallest that met it, to within a quarter
 * of the latter. It assumes that more CTAs never copy slower.
 */
class CtaSearch {
 public:
  /// A search up to @p maxCtas CTAs (at least 1) for @p goalGBps.
  CtaSearch(unsigned int maxCtas, double goalGBps);
  /// The grid to measure next, or nullopt when the search is done.
  std::optional<unsigned int> next() const;
  /// Records that @p ctas CTAs copied at @p gbps (the grid next() named).
  void record(unsigned int ctas, double gbps);
  /// The fewest CTAs measured to meet the goal, or nullopt where even maxCtas missed it.
  std::optional<unsigned int> fewest() const { return met_; }
  /// The goal rate.
  double goalGBps() const { return goal_; }

 private:
  unsigned int max_;
  double goal_;
  std::optional<unsigned int> met_;     // smallest grid that met the goal
  std::optional<unsigned int> missed_;  // largest grid that missed it
};

/// One block size of a sweep in one direction, as measured (GB/s).
struct SweepRow {
  std::uint64_t blockBytes = 0;  ///< Bytes per block.
  double contiguous = 0;         ///< One contiguous copy of the same bytes: the link.
  double loop = 0;               ///< One cuMemcpy*Async per block.
  double batch = 0;              ///< One cuMemcpyBatchAsync.
  double sm = 0;                 ///< The SM copy kernel on every SM.
};

/// The fastest way of a row: its name ("loop", "batch" or "SMs") and its share of the
/// contiguous copy.
struct BestWay {
  std::string name;     ///< "loop", "batch" or "SMs".
  double share = 0;     ///< Its GB/s over the contiguous copy's.
};

/// The fastest of the loop, the batch and the SMs at @p row (the first named wins a tie).
BestWay bestWay(const SweepRow& row);

/// The smallest block size from which the batch reaches kCatchUpShare of the SMs' rate at that
/// size and every larger one swept (@p rows in increasing block size), or nullopt when it does
/// not at the largest.
std::optional<std::uint64_t> batchCatchesUp(const std::vector<SweepRow>& rows);

/// The row where the best way's share of the contiguous copy is lowest (the goal is that it is
/// at least kLinkShare everywhere), or nullopt for no rows.
std::optional<SweepRow> weakestRow(const std::vector<SweepRow>& rows);

/**
 * The checks of a run, each recorded as it is made, so that the verdict lists every one that
 * failed: the lesson's batch, every way, shape and memset, each sweep point. The verdict is
 * PASS only when at least one check was made and none failed.
 */
class RunChecks {
 public:
  /// Records one check; @p what names what was checked, @p problem says what was wrong.
  void expect(bool ok, const std::string& what, const std::string& problem = "");
  /// Records the word-by-word check of @p what.
  void expectWords(const PatternCheck& check, const std::string& what);
  /// Checks recorded so far.
  std::size_t count() const noexcept { return count_; }
  /// One line per failed check, in the order they were made.
  const std::vector<std::string>& failures() const noexcept { return failures_; }
  /// "Checks: N of M passed", a FAILED line per failure, the JSON `checks` and `failedChecks`.
  /// @return Pass when at least one check was made and every one passed.
  Verdict report(std::ostream& out, JsonObject& json) const;

 private:
  std::size_t count_ = 0;
  std::vector<std::string> failures_;
};

}  // namespace memsamples
