// What 09_memcpyBatch's measurements mean: the CTA search, the best way and the crossover of a
// sweep, and the run's checks that make its verdict, each fed good and bad measurements.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "batch_results.hpp"

namespace ms = memsamples;

namespace {

/// Runs a search against a made-up machine where @p rate gives the GB/s of each grid; returns
/// the grids it measured, in order.
template <typename Rate>
std::vector<unsigned int> runSearch(ms::CtaSearch& search, Rate rate) {
  std::vector<unsigned int> tried;
  while (const auto ctas = search.next()) {
    tried.push_back(*ctas);
    search.record(*ctas, rate(*ctas));
    if (tried.size() > 64)
      break;  // a search that never ends fails below
  }
  return tried;
}

TEST(MemcpyBatchCtaSearch, FindsTheFewestCtasNearTheTruth) {
  // Each CTA moves 1.7 GB/s until the link (55) is full: 30 CTAs are the first to reach 49.5.
  const auto rate = [](unsigned int ctas) { return std::min(55.0, 1.7 * ctas); };
  ms::CtaSearch search(264, 0.9 * 55.0);
  const std::vector<unsigned int> tried = runSearch(search, rate);
  ASSERT_TRUE(search.fewest());
  EXPECT_GE(*search.fewest(), 30u);
  EXPECT_LE(*search.fewest(), 30u + 30u / 4 + 1);  // within a quarter of the answer
  EXPECT_LT(tried.size(), 16u);
  // The largest grid first, then halving: the slow grids of few CTAs are the last measured.
  EXPECT_EQ(tried[0], 264u);
  EXPECT_EQ(tried[1], 132u);
  // Every grid it reports was measured to meet the goal.
  EXPECT_NE(std::find(tried.begin(), tried.end(), *search.fewest()), tried.end());
  EXPECT_GE(rate(*search.fewest()), search.goalGBps());
}

TEST(MemcpyBatchCtaSearch, ExactForFewCtas) {
  // A step: 2 CTAs miss, 3 meet. From 4: 4 meets, 2 misses, 3 meets, and the gap is 1.
  ms::CtaSearch search(4, 50.0);
  const auto tried = runSearch(search, [](unsigned int ctas) { return ctas >= 3 ? 52.0 : 20.0; });
  EXPECT_EQ(tried, (std::vector<unsigned int>{4, 2, 3}));
  EXPECT_EQ(search.fewest(), 3u);

  // A step at 9 of 16: 16, 8, 12, 10, then within a quarter of 10.
  ms::CtaSearch wider(16, 50.0);
  runSearch(wider, [](unsigned int ctas) { return ctas >= 9 ? 52.0 : 20.0; });
  EXPECT_EQ(wider.fewest(), 10u);
}

TEST(MemcpyBatchCtaSearch, OneCtaOrNone) {
  ms::CtaSearch easy(264, 10.0);
  runSearch(easy, [](unsigned int) { return 50.0; });
  EXPECT_EQ(easy.fewest(), 1u);

  // Where even every SM misses the goal, there is no answer, after one measurement.
  ms::CtaSearch hopeless(264, 50.0);
  const std::vector<unsigned int> tried = runSearch(hopeless, [](unsigned int) { return 20.0; });
  EXPECT_EQ(hopeless.fewest(), std::nullopt);
  EXPECT_EQ(tried, (std::vector<unsigned int>{264}));
}

/// A sweep shaped like the H100 probe of SPEC (host to device, shares of a 55 GB/s link).
std::vector<ms::SweepRow> h100Sweep() {
  const double link = 55.0;
  return {
      {4096, link, 0.03 * link, 0.14 * link, 0.92 * link},
      {16384, link, 0.10 * link, 0.24 * link, 0.92 * link},
      {65536, link, 0.30 * link, 0.58 * link, 0.93 * link},
      {262144, link, 0.64 * link, 0.90 * link, 0.93 * link},
      {1048576, link, 0.88 * link, 0.95 * link, 0.93 * link},
  };
}

TEST(MemcpyBatchSweep, BestWayAndItsShare) {
  const std::vector<ms::SweepRow> rows = h100Sweep();
  EXPECT_EQ(ms::bestWay(rows[0]).name, "SMs");
  EXPECT_NEAR(ms::bestWay(rows[0]).share, 0.92, 1e-9);
  EXPECT_EQ(ms::bestWay(rows[4]).name, "batch");
  EXPECT_NEAR(ms::bestWay(rows[4]).share, 0.95, 1e-9);
  EXPECT_EQ(ms::bestWay({4096, 50, 30, 20, 10}).name, "loop");

  const auto weakest = ms::weakestRow(rows);
  ASSERT_TRUE(weakest);
  EXPECT_EQ(weakest->blockBytes, 4096u);
  EXPECT_EQ(ms::weakestRow({}), std::nullopt);
}

TEST(MemcpyBatchSweep, WhereTheBatchCatchesUpWithTheSms) {
  std::vector<ms::SweepRow> rows = h100Sweep();
  // 0.90 / 0.93 = 0.968 of the SMs at 256 KiB, and more at 1 MiB.
  EXPECT_EQ(ms::batchCatchesUp(rows), 262144u);
  // It must keep up at every larger size: a dip at 1 MiB moves the crossover past 256 KiB.
  rows[4].batch = 0.80 * rows[4].contiguous;
  EXPECT_EQ(ms::batchCatchesUp(rows), std::nullopt);
  // A batch that keeps up everywhere catches up from the smallest size.
  for (ms::SweepRow& row : rows)
    row.batch = row.sm;
  EXPECT_EQ(ms::batchCatchesUp(rows), 4096u);
  EXPECT_EQ(ms::batchCatchesUp({}), std::nullopt);
}

/// The verdict of @p checks: its printed lines, and PASS or FAIL.
std::string verdictOf(const ms::RunChecks& checks, ms::Verdict& verdict) {
  std::ostringstream out;
  ms::JsonObject json;
  verdict = checks.report(out, json);
  return out.str() + json.dump();
}

ms::PatternCheck goodWords() {
  ms::PatternCheck check;
  check.words = 1024;
  return check;
}

TEST(MemcpyBatchVerdict, PassesOnlyWhenEveryCheckPassed) {
  ms::RunChecks good;
  good.expectWords(goodWords(), "the lesson's batch: every block in its slot");
  good.expect(true, "the lesson's batch: the note from the stack");
  good.expect(true, "host to device: cuMemcpyBatchAsync");
  ms::Verdict verdict = ms::Verdict::Fail;
  EXPECT_EQ(verdictOf(good, verdict), "Checks: 3 of 3 passed\n{\"checks\": 3, \"failedChecks\": 0}");
  EXPECT_EQ(verdict, ms::Verdict::Pass);

  // One wrong way among many fails the run, and is named.
  ms::RunChecks oneWrong = good;
  oneWrong.expect(false, "device to host: SM scatter, 264 CTAs", "17 wrong words");
  oneWrong.expect(true, "memset cuMemsetD8");
  EXPECT_EQ(verdictOf(oneWrong, verdict),
            "Checks: 4 of 5 passed\n  FAILED: device to host: SM scatter, 264 CTAs: 17 wrong "
            "words\n{\"checks\": 5, \"failedChecks\": 1}");
  EXPECT_EQ(verdict, ms::Verdict::Fail);
}

TEST(MemcpyBatchVerdict, TheLessonsBatchCounts) {
  // The lesson's batch copied nothing (only sentinels came back): the run fails, whatever the
  // measurements after it found.
  ms::PatternCheck sentinels;
  sentinels.words = 1024;
  sentinels.mismatches = 1024;
  sentinels.expected = 0x3f800001u;
  sentinels.actual = ms::kSentinelWord;
  ms::RunChecks checks;
  checks.expectWords(sentinels, "the lesson's batch: every block in its slot");
  for (int way = 0; way < 20; ++way)
    checks.expect(true, "a way that worked");
  ms::Verdict verdict = ms::Verdict::Pass;
  const std::string lines = verdictOf(checks, verdict);
  EXPECT_EQ(verdict, ms::Verdict::Fail);
  EXPECT_NE(lines.find("FAILED: the lesson's batch: every block in its slot: 1024 of 1024 words "
                       "differ"),
            std::string::npos)
      << lines;

  ms::RunChecks noNote;
  noNote.expectWords(goodWords(), "the lesson's batch: every block in its slot");
  noNote.expect(false, "the lesson's batch: the note from the stack");
  verdictOf(noNote, verdict);
  EXPECT_EQ(verdict, ms::Verdict::Fail);
}

TEST(MemcpyBatchVerdict, TheSynchronousTwinsCount) {
  // The shapes' twins are checks like their Async forms: one wrong twin fails the run, named.
  ms::RunChecks checks;
  checks.expectWords(goodWords(), "the lesson's batch: every block in its slot");
  checks.expect(true, "shapes: 2D sub-rectangle, one cuMemcpy2DAsync");
  checks.expect(true, "shapes: 2D sub-rectangle, cuMemcpy2D (sync)");
  checks.expect(false, "shapes: 2D, 4004-byte rows, cuMemcpy2DUnaligned", "1536 wrong words");
  checks.expect(true, "shapes: 3D sub-box, cuMemcpy3D (sync)");
  ms::Verdict verdict = ms::Verdict::Pass;
  EXPECT_EQ(verdictOf(checks, verdict),
            "Checks: 4 of 5 passed\n  FAILED: shapes: 2D, 4004-byte rows, cuMemcpy2DUnaligned: "
            "1536 wrong words\n{\"checks\": 5, \"failedChecks\": 1}");
  EXPECT_EQ(verdict, ms::Verdict::Fail);
}

TEST(MemcpyBatchVerdict, NothingCheckedIsNoPass) {
  const ms::RunChecks none;
  ms::Verdict verdict = ms::Verdict::Pass;
  EXPECT_EQ(verdictOf(none, verdict), "Checks: 0 of 0 passed\n{\"checks\": 0, \"failedChecks\": 0}");
  EXPECT_EQ(verdict, ms::Verdict::Fail);
}

}  // namespace
