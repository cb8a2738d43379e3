// Reading a placement report: summaries, fractions, what move_pages reported, and what a strict
// binding accepts.
#include <gtest/gtest.h>
#include <numaif.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <string>
#include <vector>

#include "numa_binding.hpp"

namespace mn = memsamples::numa;

namespace {

memsamples::PagePlacement report(std::map<int, std::size_t> perNode, std::size_t notPresent = 0,
                                 std::size_t unreadable = 0) {
  memsamples::PagePlacement placement;
  placement.pagesPerNode = std::move(perNode);
  placement.notPresent = notPresent;
  placement.unreadable = unreadable;
  placement.firstUnreadableError = unreadable ? EFAULT : 0;
  placement.pages = notPresent + unreadable;
  for (const auto& entry : placement.pagesPerNode)
    placement.pages += entry.second;
  placement.pageBytes = 4096;
  placement.method = "move_pages";
  return placement;
}

}  // namespace

TEST(Placement, AllOnOneNode) {
  const memsamples::PagePlacement placement = report({{0, 4}});
  EXPECT_TRUE(placement.known());
  EXPECT_TRUE(placement.allOn(0));
  EXPECT_FALSE(placement.allOn(1));
  EXPECT_DOUBLE_EQ(placement.fractionOn(0), 1.0);
  EXPECT_DOUBLE_EQ(placement.fractionOn(1), 0.0);
  EXPECT_EQ(placement.summary(), "node 0: 4 of 4 pages (100.0 %) [4.00 KiB pages, move_pages]");
  EXPECT_EQ(mn::strictPlacementProblem(placement, 0), "");
}

TEST(Placement, SplitAcrossNodes) {
  const memsamples::PagePlacement placement = report({{0, 3}, {1, 1}});
  EXPECT_FALSE(placement.allOn(0));
  EXPECT_DOUBLE_EQ(placement.fractionOn(0), 0.75);
  EXPECT_EQ(mn::strictPlacementProblem(placement, 0),
            "not every page is on node 0: node 0: 3 of 4 pages (75.0 %); node 1: 1 of 4 pages "
            "(25.0 %) [4.00 KiB pages, move_pages]");
}

TEST(Placement, NotPresentAndUnreadablePages) {
  const memsamples::PagePlacement untouched = report({}, 4);
  EXPECT_EQ(untouched.summary(), "4 not present [4.00 KiB pages, move_pages]");
  EXPECT_EQ(mn::strictPlacementProblem(untouched, 0),
            "4 of 4 pages are not present (not touched yet)");

  const memsamples::PagePlacement mixed = report({{0, 2}}, 1, 1);
  EXPECT_EQ(mixed.summary(),
            "node 0: 2 of 4 pages (50.0 %); 1 not present; 1 unreadable (Bad address (EFAULT)) "
            "[4.00 KiB pages, move_pages]");
  EXPECT_EQ(mn::strictPlacementProblem(report({{0, 3}}, 0, 1), 0),
            "1 of 4 pages could not be located");
}

TEST(Placement, UnknownPlacement) {
  memsamples::PagePlacement unknown;
  unknown.error = "move_pages failed: x; get_mempolicy failed: y";
  EXPECT_FALSE(unknown.known());
  EXPECT_FALSE(unknown.allOn(0));
  EXPECT_DOUBLE_EQ(unknown.fractionOn(0), 0.0);
  EXPECT_EQ(unknown.summary(), "unknown: move_pages failed: x; get_mempolicy failed: y");
  EXPECT_EQ(mn::strictPlacementProblem(unknown, 0),
            "the placement could not be checked: move_pages failed: x; get_mempolicy failed: y");
}

TEST(Placement, EmptyRange) {
  const memsamples::PagePlacement empty = memsamples::pagesPerNode(nullptr, 0);
  EXPECT_TRUE(empty.known());
  EXPECT_EQ(empty.pages, 0u);
  EXPECT_FALSE(empty.allOn(0));
  EXPECT_EQ(mn::strictPlacementProblem(empty, 0), "");
}

TEST(Placement, StrictBindingProblemAfterFirstTouch) {
  const memsamples::PagePlacement onNode0 = report({{0, 4}});
  const memsamples::PagePlacement split = report({{0, 3}, {1, 1}});
  memsamples::PagePlacement unknown;
  unknown.error = "move_pages failed: x";
  EXPECT_EQ(mn::strictBindingProblem(onNode0, 0, mn::BindState::Bound), "");
  EXPECT_EQ(mn::strictBindingProblem(onNode0, 0, mn::BindState::BlockedBySeccomp), "");
  // The kernel's MPOL_BIND guarantee stands in for a placement that cannot be read...
  EXPECT_EQ(mn::strictBindingProblem(unknown, 0, mn::BindState::Bound), "");
  // ...but a range that was never bound must prove itself.
  EXPECT_EQ(mn::strictBindingProblem(unknown, 0, mn::BindState::BlockedBySeccomp),
            "strict binding to node 0 not honoured (blocked by seccomp (unbound)): the placement "
            "could not be checked: move_pages failed: x");
  EXPECT_EQ(
      mn::strictBindingProblem(split, 0, mn::BindState::Bound),
      "strict binding to node 0 not honoured (bound): " + mn::strictPlacementProblem(split, 0));
}

namespace {

/// A plan for 3 pages on node 0 under @p policy, as planBinding() would make it.
mn::BindPlan threePagePlan(const mn::BindPolicy& policy) {
  mn::BindPlan plan;
  plan.policy = policy;
  plan.node = 0;
  plan.bytes = 3 * 4096;
  plan.layout = memsamples::hostRangeLayout(plan.bytes, memsamples::PageSizes{4096, 0});
  plan.pageBytes = 4096;
  return plan;
}

/// What move_pages would have answered for three pages: none before the first touch, then
/// @p touched and @p pinned (a node per page).
mn::PlacementLog threePageLog(std::vector<int> touched, std::vector<int> pinned) {
  mn::PlacementLog log;
  log.pages.resize(3);
  log.beforeTouch.status = {-ENOENT, -ENOENT, -ENOENT};
  log.touched.status = std::move(touched);
  log.pinned.status = std::move(pinned);
  return log;
}

}  // namespace

TEST(PlacementReport, PrintsTheRangeAndItsThreeLooks) {
  mn::BindOutcome bound;
  bound.state = mn::BindState::Bound;
  bound.mode = mn::kMpolStaticNodes | MPOL_PREFERRED;
  bound.dontForkAdvised = true;
  const mn::PlacementLog log = threePageLog({0, 0, 0}, {0, 0, 0});
  std::ostringstream out;
  const mn::PlacementReport report =
      mn::reportPlacement(threePagePlan(mn::BindPolicy{}), bound, log, out);
  EXPECT_TRUE(report.ok);
  // Four lines, one per look, in the order they were taken; each names what it saw, not how
  // wide its columns are.
  std::istringstream printed(out.str());
  std::vector<std::string> lines;
  for (std::string line; std::getline(printed, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_NE(lines[0].find("range: 12.0 KiB (mapped 12.0 KiB) for node 0"), std::string::npos);
  EXPECT_NE(lines[0].find("MPOL_PREFERRED | MPOL_F_STATIC_NODES"), std::string::npos);
  EXPECT_NE(lines[0].find("MADV_DONTFORK"), std::string::npos);
  EXPECT_NE(lines[1].find("before first touch: 3 not present"), std::string::npos);
  EXPECT_NE(lines[2].find("after first touch: node 0: 3 of 3 pages (100.0 %)"), std::string::npos);
  EXPECT_NE(lines[3].find("after cuMemHostRegister: node 0: 3 of 3 pages (100.0 %)"),
            std::string::npos);
  EXPECT_NE(report.json.dump().find("\"fractionOnTarget\": 1"), std::string::npos)
      << report.json.dump();
}

TEST(PlacementReport, StrictBindingsMustKeepTheirPromise) {
  mn::BindOutcome blocked;
  blocked.state = mn::BindState::BlockedBySeccomp;
  blocked.unboundReason = "a filter";
  mn::PlacementLog log = threePageLog({0, 1, 0}, {0, 0, 0});
  std::ostringstream out;
  // Unbound and off the node after the first touch: an error, before the pinned line.
  EXPECT_THROW(mn::reportPlacement(threePagePlan(mn::BindPolicy{true, true}), blocked, log, out),
               mn::NumaBindError);
  EXPECT_NE(out.str().find("  unbound: a filter\n"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("after cuMemHostRegister"), std::string::npos) << out.str();
  // Right after the touch, moved by pinning: the report says so and the run fails.
  log = threePageLog({0, 0, 0}, {0, 1, 0});
  std::ostringstream pinnedOut;
  const mn::PlacementReport pinned =
      mn::reportPlacement(threePagePlan(mn::BindPolicy{true, true}), blocked, log, pinnedOut);
  EXPECT_FALSE(pinned.ok);
  EXPECT_NE(pinnedOut.str().find("  strict binding broken by pinning: not every page is on node "
                                 "0: "),
            std::string::npos)
      << pinnedOut.str();
  // The same placement under a soft policy is only reported.
  EXPECT_TRUE(mn::reportPlacement(threePagePlan(mn::BindPolicy{}), blocked, log, pinnedOut).ok);
}

TEST(PlacementReport, AFailedMovePagesLeavesTheLookBeforeTheTouchUnread) {
  // Where move_pages is refused, the fallback (get_mempolicy) can only ask after the pages were
  // touched and pinned: the report must not pass that answer off as the look before the touch.
  mn::BindOutcome bound;
  bound.state = mn::BindState::Bound;
  mn::PlacementLog log = threePageLog({}, {});
  for (mn::PageNodes* look : {&log.beforeTouch, &log.touched, &log.pinned}) {
    look->status.clear();
    look->error = EPERM;
  }
  std::ostringstream out;
  mn::reportPlacement(threePagePlan(mn::BindPolicy{}), bound, log, out);
  EXPECT_NE(out.str().find("  before first touch: not readable: move_pages failed ("),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(" (move_pages failed: asked after cuMemHostRegister)\n"),
            std::string::npos)
      << out.str();
}
