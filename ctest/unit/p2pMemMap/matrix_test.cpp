// The matrices 05_p2pMemMap prints and writes to JSON: cells, ratios, text layout, the
// peer-access matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "p2p_logic.hpp"
#include "test_support.hpp"

namespace p2p = memsamples::p2p;
using memsamples::test::messageOf;

namespace {

// access rows are accessors (canAccessPeer[b][a]: b can access a's memory).
p2p::DeviceTopology machine(const std::vector<std::string>& access) {
  p2p::DeviceTopology result;
  for (std::size_t b = 0; b < access.size(); ++b) {
    result.vmmSupported.push_back(true);
    std::vector<bool> row;
    for (std::size_t a = 0; a < access[b].size(); ++a)
      row.push_back(a == b || access[b][a] == '1');
    result.canAccessPeer.push_back(row);
  }
  return result;
}

}  // namespace

// ---------------------------------------------------------------------------------- DeviceMatrix

TEST(FormatMatrix, PrintsNumbersWithThePrecisionAndDashesForEmptyCells) {
  memsamples::DeviceMatrix matrix(2);
  matrix.set(0, 0, 2150.349);
  matrix.set(0, 1, 390.25);
  EXPECT_EQ(p2p::formatMatrix(matrix, "from", "to", 1),
            "            to 0    to 1\n"
            "  from 0  2150.3   390.2\n"
            "  from 1       -       -\n");
  EXPECT_EQ(p2p::formatMatrix(matrix, "from", "to", 3),
            "              to 0      to 1\n"
            "  from 0  2150.349   390.250\n"
            "  from 1         -         -\n");
}

TEST(FormatAccessMatrix, RowsAreOwnersColumnsAreAccessors) {
  // Device 1 can access device 0's memory; device 0 cannot access device 1's.
  const p2p::DeviceTopology topology = machine({"10", "11"});
  p2p::LinkMatrix links(2, std::vector<p2p::LinkAttributes>(2));
  links[0][1] = {0, true, true, ""};  // owner 0, accessor 1
  EXPECT_EQ(p2p::formatAccessMatrix(topology, links),
            "           accessor 0  accessor 1\n"
            "  owner 0           -    rank 0 A\n"
            "  owner 1          no           -\n");
}

TEST(FormatAccessMatrix, FlagsAnAccessSupportedAttributeThatDisagrees) {
  const p2p::DeviceTopology topology = machine({"11", "11"});
  p2p::LinkMatrix links(2, std::vector<p2p::LinkAttributes>(2));
  links[0][1] = {1, true, false, ""};
  links[1][0] = {1, false, false, ""};  // cuDeviceCanAccessPeer: yes; the attribute: no
  EXPECT_EQ(p2p::formatAccessMatrix(topology, links),
            "           accessor 0  accessor 1\n"
            "  owner 0           -      rank 1\n"
            "  owner 1   rank 1 !s           -\n");
}

TEST(FormatAccessMatrix, AFailedAttributeQueryIsAQuestionMark) {
  // Device 1 can access device 0's memory, but the driver did not answer the attribute query:
  // the cell is "?" whatever the other fields hold; the other direction is still printed.
  const p2p::DeviceTopology topology = machine({"11", "11"});
  p2p::LinkMatrix links(2, std::vector<p2p::LinkAttributes>(2));
  links[0][1] = {3, true, true,
                 "cuDeviceGetP2PAttribute(PERFORMANCE_RANK): CUDA_ERROR_NOT_SUPPORTED"};
  links[1][0] = {1, true, false, ""};
  EXPECT_EQ(p2p::formatAccessMatrix(topology, links),
            "           accessor 0  accessor 1\n"
            "  owner 0           -           ?\n"
            "  owner 1      rank 1           -\n");
  // Also where the hardware has no access at all.
  const p2p::DeviceTopology none = machine({"10", "01"});
  links[1][0].failure = "cuDeviceGetP2PAttribute(ACCESS_SUPPORTED): CUDA_ERROR_INVALID_VALUE";
  EXPECT_EQ(p2p::formatAccessMatrix(none, links),
            "           accessor 0  accessor 1\n"
            "  owner 0           -           ?\n"
            "  owner 1           ?           -\n");
}

TEST(FormatAccessMatrix, OneDeviceIsJustTheDiagonal) {
  const p2p::DeviceTopology topology = machine({"1"});
  EXPECT_EQ(
      p2p::formatAccessMatrix(topology, p2p::LinkMatrix(1, std::vector<p2p::LinkAttributes>(1))),
      "           accessor 0\n"
      "  owner 0           -\n");
}

TEST(FormatAccessMatrix, LinksMustMatchTheTopology) {
  const p2p::DeviceTopology topology = machine({"11", "11"});
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { p2p::formatAccessMatrix(topology, p2p::LinkMatrix(1)); }),
            "formatAccessMatrix: the link matrix is not 2 x 2");
}

// A pair the driver refused peer access is named in its cell, whatever else is there.
TEST(FormatMatrix, ARefusedPairSaysSo) {
  memsamples::DeviceMatrix matrix(2);
  matrix.set(0, 0, 2100.0);
  matrix.set(1, 1, 2100.0);
  matrix.set(1, 0, 390.0);
  const std::vector<p2p::PeerRefusal> refused = {
      {{0, 1}, "cuCtxEnablePeerAccess refused: CUDA_ERROR_TOO_MANY_PEERS"}};
  EXPECT_EQ(p2p::formatMatrix(matrix, "from", "to", 1, refused),
            "             to 0     to 1\n"
            "  from 0   2100.0  refused\n"
            "  from 1    390.0   2100.0\n");
  const std::vector<p2p::PeerRefusal> outside = {{{0, 2}, "refused"}};
  EXPECT_THROW(p2p::formatMatrix(matrix, "from", "to", 1, outside), std::out_of_range);
}
