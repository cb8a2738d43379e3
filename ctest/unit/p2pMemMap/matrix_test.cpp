// The matrices 05_p2pMemMap prints and writes to JSON: cells, ratios, text layout (the
// peer-access matrix is Common's, tested in ctest/unit/common/device_matrix_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "p2p_logic.hpp"
#include "test_support.hpp"

namespace p2p = memsamples::p2p;
using memsamples::test::messageOf;

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
