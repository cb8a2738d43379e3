// Common's DeviceMatrix (support/device_matrix.hpp): cells, ratios, the text grid and the JSON
// form, as 05_p2pMemMap prints them, and the peer-access matrix of 00 and 05 (moved here with the
// code from ctest/unit/p2pMemMap).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "printed_text.hpp"
#include "support/device_matrix.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
using memsamples::test::cellsOf;
using memsamples::test::Grid;
using memsamples::test::messageOf;

namespace {

// access rows are accessors (canAccessPeer[b][a]: b can access a's memory).
ms::DeviceTopology machine(const std::vector<std::string>& access) {
  ms::DeviceTopology result;
  for (std::size_t b = 0; b < access.size(); ++b) {
    result.vmmSupported.push_back(true);
    std::vector<bool> row;
    for (std::size_t a = 0; a < access[b].size(); ++a)
      row.push_back(a == b || access[b][a] == '1');
    result.canAccessPeer.push_back(row);
  }
  return result;
}

// The access matrix inside describePeerLinks()'s text: its header and "owner N" rows, as cells.
Grid matrixIn(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::string matrix;
  while (std::getline(lines, line)) {
    if (line.rfind("  owner ", 0) == 0 || line.find("   accessor 0") != std::string::npos)
      matrix += line + "\n";
  }
  return cellsOf(matrix);
}

}  // namespace

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

TEST(FormatAccessMatrix, RowsAreOwnersColumnsAreAccessors) {
  // Device 1 can access device 0's memory; device 0 cannot access device 1's.
  const ms::DeviceTopology topology = machine({"10", "11"});
  ms::LinkMatrix links(2, std::vector<ms::LinkAttributes>(2));
  links[0][1] = {0, true, true, ""};  // owner 0, accessor 1
  EXPECT_EQ(cellsOf(ms::formatAccessMatrix(topology, links)),
            (Grid{{"accessor 0", "accessor 1"},
                  {"owner 0", "-", "rank 0 A"},
                  {"owner 1", "no", "-"}}));
}

TEST(FormatAccessMatrix, FlagsAnAccessSupportedAttributeThatDisagrees) {
  const ms::DeviceTopology topology = machine({"11", "11"});
  ms::LinkMatrix links(2, std::vector<ms::LinkAttributes>(2));
  links[0][1] = {1, true, false, ""};
  links[1][0] = {1, false, false, ""};  // cuDeviceCanAccessPeer: yes; the attribute: no
  EXPECT_EQ(cellsOf(ms::formatAccessMatrix(topology, links)),
            (Grid{{"accessor 0", "accessor 1"},
                  {"owner 0", "-", "rank 1"},
                  {"owner 1", "rank 1 !s", "-"}}));
}

TEST(FormatAccessMatrix, AFailedAttributeQueryIsAQuestionMark) {
  // Device 1 can access device 0's memory, but the driver did not answer the attribute query:
  // the cell is "?" whatever the other fields hold; the other direction is still printed.
  const ms::DeviceTopology topology = machine({"11", "11"});
  ms::LinkMatrix links(2, std::vector<ms::LinkAttributes>(2));
  links[0][1] = {3, true, true,
                 "cuDeviceGetP2PAttribute(PERFORMANCE_RANK): CUDA_ERROR_NOT_SUPPORTED"};
  links[1][0] = {1, true, false, ""};
  EXPECT_EQ(cellsOf(ms::formatAccessMatrix(topology, links)),
            (Grid{{"accessor 0", "accessor 1"},
                  {"owner 0", "-", "?"},
                  {"owner 1", "rank 1", "-"}}));
  // Also where the hardware has no access at all.
  const ms::DeviceTopology none = machine({"10", "01"});
  links[1][0].failure = "cuDeviceGetP2PAttribute(ACCESS_SUPPORTED): CUDA_ERROR_INVALID_VALUE";
  EXPECT_EQ(cellsOf(ms::formatAccessMatrix(none, links)),
            (Grid{{"accessor 0", "accessor 1"},
                  {"owner 0", "-", "?"},
                  {"owner 1", "?", "-"}}));
}

TEST(FormatAccessMatrix, OneDeviceIsJustTheDiagonal) {
  const ms::DeviceTopology topology = machine({"1"});
  EXPECT_EQ(cellsOf(ms::formatAccessMatrix(
                topology, ms::LinkMatrix(1, std::vector<ms::LinkAttributes>(1)))),
            (Grid{{"accessor 0"}, {"owner 0", "-"}}));
}

TEST(FormatAccessMatrix, LinksMustMatchTheTopology) {
  const ms::DeviceTopology topology = machine({"11", "11"});
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { ms::formatAccessMatrix(topology, ms::LinkMatrix(1)); }),
            "formatAccessMatrix: the link matrix is not 2 x 2");
}

TEST(DescribePeerLinks, PrintsTheLegendTheMatrixAndEachRefusalAndFillsTheJson) {
  const ms::DeviceTopology topology = machine({"11", "11"});
  ms::LinkMatrix links(2, std::vector<ms::LinkAttributes>(2));
  links[0][1] = {0, true, true, ""};
  links[1][0] = {0, false, false,
                 "cuDeviceGetP2PAttribute(PERFORMANCE_RANK): CUDA_ERROR_NOT_SUPPORTED"};
  ms::JsonArray json;
  const std::string text = ms::describePeerLinks(topology, links, json);
  // The legend first, then the matrix, then each refusal on a line of its own, naming the pair,
  // the attribute and the driver's answer.
  EXPECT_EQ(text.rfind("Peer access (cuDeviceCanAccessPeer(accessor, owner); rank = ", 0), 0u);
  EXPECT_NE(text.find("A = native atomics, !s = ACCESS_SUPPORTED disagrees, ? = "
                      "cuDeviceGetP2PAttribute failed):\n"),
            std::string::npos);
  EXPECT_EQ(matrixIn(text), (Grid{{"accessor 0", "accessor 1"},
                                  {"owner 0", "-", "rank 0 A"},
                                  {"owner 1", "?", "-"}}));
  const std::string refusal =
      "  ? owner 1, accessor 0: cuDeviceGetP2PAttribute(PERFORMANCE_RANK): "
      "CUDA_ERROR_NOT_SUPPORTED\n";
  ASSERT_GE(text.size(), refusal.size());
  EXPECT_EQ(text.substr(text.size() - refusal.size()), refusal);
  EXPECT_EQ(json.dump(),
            "[{\"owner\": 0, \"accessor\": 1, \"canAccessPeer\": true, \"performanceRank\": 0, "
            "\"accessSupported\": true, \"nativeAtomics\": true}, "
            "{\"owner\": 1, \"accessor\": 0, \"canAccessPeer\": true, "
            "\"attributeQueryFailed\": \"cuDeviceGetP2PAttribute(PERFORMANCE_RANK): "
            "CUDA_ERROR_NOT_SUPPORTED\"}]");
}

TEST(DescribePeerLinks, OneDeviceHasNoPairs) {
  ms::JsonArray json;
  const std::string text =
      ms::describePeerLinks(machine({"1"}), ms::LinkMatrix(1, {ms::LinkAttributes{}}), json);
  EXPECT_EQ(matrixIn(text), (Grid{{"accessor 0"}, {"owner 0", "-"}}));
  EXPECT_EQ(text.find("  ? "), std::string::npos);  // no refusal line
  EXPECT_TRUE(json.empty());
}

TEST(DescribePeerLinks, APairNobodyAskedAboutHasNoValues) {
  // 00 asks the attributes only where cuDeviceCanAccessPeer allows access: device 0 cannot
  // reach device 1's memory, so nothing was asked of pair owner 1, accessor 0.
  const ms::DeviceTopology topology = machine({"10", "11"});
  ms::LinkMatrix links(2, std::vector<ms::LinkAttributes>(2));
  links[0][1] = {1, true, false, ""};
  links[1][0].asked = false;
  ms::JsonArray json;
  const std::string text = ms::describePeerLinks(topology, links, json);
  EXPECT_EQ(matrixIn(text), (Grid{{"accessor 0", "accessor 1"},
                                  {"owner 0", "-", "rank 1"},
                                  {"owner 1", "no", "-"}}));
  EXPECT_EQ(json.dump(),
            "[{\"owner\": 0, \"accessor\": 1, \"canAccessPeer\": true, \"performanceRank\": 1, "
            "\"accessSupported\": true, \"nativeAtomics\": false}, "
            "{\"owner\": 1, \"accessor\": 0, \"canAccessPeer\": false}]");
}
