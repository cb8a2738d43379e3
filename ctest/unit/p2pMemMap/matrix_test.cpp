// The matrices 05_p2pMemMap prints: what each cell says, at the precision asked, with each refused
// pair named (the grid's layout and the peer-access matrix are Common's, tested in
// ctest/unit/common/device_matrix_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "p2p_logic.hpp"
#include "printed_text.hpp"
#include "test_support.hpp"

namespace p2p = memsamples::p2p;
using memsamples::test::cellsOf;
using memsamples::test::Grid;
using memsamples::test::messageOf;

// ---------------------------------------------------------------------------------- DeviceMatrix
// Each cell is read back with cellsOf(): formatGrid's own tests pin how the columns line up.

TEST(FormatMatrix, PrintsNumbersWithThePrecisionAndDashesForEmptyCells) {
  memsamples::DeviceMatrix matrix(2);
  matrix.set(0, 0, 2150.349);
  matrix.set(0, 1, 390.25);
  EXPECT_EQ(cellsOf(p2p::formatMatrix(matrix, "from", "to", 1)),
            (Grid{{"to 0", "to 1"},
                  {"from 0", "2150.3", "390.2"},
                  {"from 1", "-", "-"}}));
  EXPECT_EQ(cellsOf(p2p::formatMatrix(matrix, "from", "to", 3)),
            (Grid{{"to 0", "to 1"},
                  {"from 0", "2150.349", "390.250"},
                  {"from 1", "-", "-"}}));
}

// A pair the driver refused peer access is named in its cell (row owner, column accessor),
// whatever else is there.
TEST(FormatMatrix, ARefusedPairSaysSo) {
  memsamples::DeviceMatrix matrix(2);
  matrix.set(0, 0, 2100.0);
  matrix.set(1, 1, 2100.0);
  matrix.set(1, 0, 390.0);
  const std::vector<p2p::PeerRefusal> refused = {
      {{0, 1}, "cuCtxEnablePeerAccess refused: CUDA_ERROR_TOO_MANY_PEERS"}};
  EXPECT_EQ(cellsOf(p2p::formatMatrix(matrix, "from", "to", 1, refused)),
            (Grid{{"to 0", "to 1"},
                  {"from 0", "2100.0", "refused"},
                  {"from 1", "390.0", "2100.0"}}));
  const std::vector<p2p::PeerRefusal> outside = {{{0, 2}, "refused"}};
  EXPECT_THROW(p2p::formatMatrix(matrix, "from", "to", 1, outside), std::out_of_range);
}
