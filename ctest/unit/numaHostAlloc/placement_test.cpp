// Reading a placement report: summaries, fractions, and what a strict binding accepts.
#include <gtest/gtest.h>

#include <cerrno>

#include "numa_binding.hpp"

namespace mn = memsamples::numa;

namespace {

mn::PagePlacement report(std::map<int, std::size_t> perNode, std::size_t notPresent = 0,
                         std::size_t unreadable = 0) {
  mn::PagePlacement placement;
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
  const mn::PagePlacement placement = report({{0, 4}});
  EXPECT_TRUE(placement.known());
  EXPECT_TRUE(placement.allOn(0));
  EXPECT_FALSE(placement.allOn(1));
  EXPECT_DOUBLE_EQ(placement.fractionOn(0), 1.0);
  EXPECT_DOUBLE_EQ(placement.fractionOn(1), 0.0);
  EXPECT_EQ(placement.summary(), "node 0: 4 of 4 pages (100.0 %) [4.00 KiB pages, move_pages]");
  EXPECT_EQ(mn::strictPlacementProblem(placement, 0), "");
}

TEST(Placement, SplitAcrossNodes) {
  const mn::PagePlacement placement = report({{0, 3}, {1, 1}});
  EXPECT_FALSE(placement.allOn(0));
  EXPECT_DOUBLE_EQ(placement.fractionOn(0), 0.75);
  EXPECT_EQ(mn::strictPlacementProblem(placement, 0),
            "not every page is on node 0: node 0: 3 of 4 pages (75.0 %); node 1: 1 of 4 pages "
            "(25.0 %) [4.00 KiB pages, move_pages]");
}

TEST(Placement, NotPresentAndUnreadablePages) {
  const mn::PagePlacement untouched = report({}, 4);
  EXPECT_EQ(untouched.summary(), "4 not present [4.00 KiB pages, move_pages]");
  EXPECT_EQ(mn::strictPlacementProblem(untouched, 0),
            "4 of 4 pages are not present (not touched yet)");

  const mn::PagePlacement mixed = report({{0, 2}}, 1, 1);
  EXPECT_EQ(mixed.summary(),
            "node 0: 2 of 4 pages (50.0 %); 1 not present; 1 unreadable (Bad address (EFAULT)) "
            "[4.00 KiB pages, move_pages]");
  EXPECT_EQ(mn::strictPlacementProblem(report({{0, 3}}, 0, 1), 0),
            "1 of 4 pages could not be located");
}

TEST(Placement, UnknownPlacement) {
  mn::PagePlacement unknown;
  unknown.error = "move_pages failed: x; get_mempolicy failed: y";
  EXPECT_FALSE(unknown.known());
  EXPECT_FALSE(unknown.allOn(0));
  EXPECT_DOUBLE_EQ(unknown.fractionOn(0), 0.0);
  EXPECT_EQ(unknown.summary(), "unknown: move_pages failed: x; get_mempolicy failed: y");
  EXPECT_EQ(mn::strictPlacementProblem(unknown, 0),
            "the placement could not be checked: move_pages failed: x; get_mempolicy failed: y");
}

TEST(Placement, EmptyRange) {
  const mn::PagePlacement empty = mn::pagesPerNode(nullptr, 0);
  EXPECT_TRUE(empty.known());
  EXPECT_EQ(empty.pages, 0u);
  EXPECT_FALSE(empty.allOn(0));
  EXPECT_EQ(mn::strictPlacementProblem(empty, 0), "");
}
