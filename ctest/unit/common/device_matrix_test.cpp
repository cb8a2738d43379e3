// Common's DeviceMatrix (support/device_matrix.hpp): cells, ratios, the text grid and the JSON
// form, as 05_p2pMemMap prints them (moved here with the code from ctest/unit/p2pMemMap).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/device_matrix.hpp"
#include "test_support.hpp"

using memsamples::test::messageOf;

TEST(DeviceMatrix, StartsEmptyAndKeepsWhatIsSet) {
  memsamples::DeviceMatrix matrix(3);
  EXPECT_EQ(matrix.size(), 3);
  EXPECT_TRUE(matrix.empty());
  EXPECT_EQ(matrix.at(1, 2), std::nullopt);
  matrix.set(1, 2, 42.5);
  EXPECT_FALSE(matrix.empty());
  EXPECT_EQ(matrix.at(1, 2), 42.5);
  EXPECT_EQ(matrix.at(2, 1), std::nullopt);  // (row, column) is ordered
  matrix.set(1, 2, 7.0);
  EXPECT_EQ(matrix.at(1, 2), 7.0);
}

TEST(DeviceMatrix, RefusesCellsOutside) {
  memsamples::DeviceMatrix matrix(2);
  EXPECT_EQ(messageOf<std::out_of_range>([&] { matrix.set(2, 0, 1.0); }),
            "DeviceMatrix: cell (2, 0) is outside a 2 x 2 matrix");
  EXPECT_EQ(messageOf<std::out_of_range>([&] { (void)matrix.at(0, -1); }),
            "DeviceMatrix: cell (0, -1) is outside a 2 x 2 matrix");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { memsamples::DeviceMatrix bad(-1); }),
            "DeviceMatrix: negative size -1");
}

TEST(RatioMatrix, DividesWhereBothCellsAreSet) {
  memsamples::DeviceMatrix sm(2), engine(2);
  sm.set(0, 1, 300.0);
  engine.set(0, 1, 400.0);
  sm.set(1, 0, 100.0);  // no copy-engine value: no ratio
  engine.set(1, 1, 0.0);
  sm.set(1, 1, 5.0);  // zero denominator: no ratio
  const memsamples::DeviceMatrix ratio = memsamples::ratioMatrix(sm, engine);
  EXPECT_EQ(ratio.at(0, 1), 0.75);
  EXPECT_EQ(ratio.at(1, 0), std::nullopt);
  EXPECT_EQ(ratio.at(1, 1), std::nullopt);
  EXPECT_EQ(ratio.at(0, 0), std::nullopt);
}

TEST(RatioMatrix, SizesMustMatch) {
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [] { memsamples::ratioMatrix(memsamples::DeviceMatrix(2), memsamples::DeviceMatrix(3)); }),
            "ratioMatrix: a 2-device matrix over a 3-device one");
}

// ------------------------------------------------------------------------------------ text

TEST(FormatGrid, AlignsCellsUnderNumberedHeaders) {
  const std::string text = memsamples::formatGrid("from", "to", {{"-", "390.2"}, {"12.0", "-"}});
  EXPECT_EQ(text,
            "           to 0   to 1\n"
            "  from 0      -  390.2\n"
            "  from 1   12.0      -\n");
}

TEST(FormatGrid, WidensColumnsForLongCellsAndLabels) {
  const std::string text = memsamples::formatGrid("owner", "accessor", {{"-", "rank 0 A"}, {"no", "-"}});
  EXPECT_EQ(text,
            "           accessor 0  accessor 1\n"
            "  owner 0           -    rank 0 A\n"
            "  owner 1          no           -\n");
}

TEST(FormatGrid, RowLabelsOfDifferentWidthsLineUp) {
  std::vector<std::vector<std::string>> cells(11, std::vector<std::string>(11, "x"));
  const std::string text = memsamples::formatGrid("r", "c", cells);
  EXPECT_NE(text.find("\n  r 9   "), std::string::npos);
  EXPECT_NE(text.find("\n  r 10  "), std::string::npos);
  EXPECT_EQ(text.find("\n  r 9 "), text.find("\n  r 9  "));  // padded to the width of "r 10"
}

TEST(FormatGrid, RefusesANonSquareGrid) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] {
              memsamples::formatGrid("a", "b", {{"1", "2"}, {"3"}});
            }),
            "formatGrid: row 1 has 1 cells, expected 2");
}

TEST(MatrixJson, RowsOfNumbersWithNullForEmptyCells) {
  memsamples::DeviceMatrix matrix(2);
  matrix.set(0, 1, 1.5);
  matrix.set(1, 1, 4);
  EXPECT_EQ(memsamples::matrixJson(matrix).dump(), "[[null, 1.5], [null, 4]]");
  EXPECT_EQ(memsamples::matrixJson(memsamples::DeviceMatrix(0)).dump(), "[]");
}

// ---------------------------------------------------------------------------- access matrix

