/**
 * @file device_matrix.hpp
 * @brief An N x N matrix of optional numbers (GB/s or ratios, one cell per ordered device pair)
 *        and its text and JSON forms: the grids a multi-GPU sample prints; and the peer-access
 *        matrix of a machine, with what the driver says of each link (00 and 05 print it).
 *
 * Nothing here touches the CUDA driver (unit tested in ctest/unit/common/device_matrix_test.cpp).
 */
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/devices.hpp"  // DeviceTopology
#include "support/json.hpp"

namespace memsamples {

/// An N x N matrix of optional numbers (GB/s or ratios); a cell that was not measured is empty.
class DeviceMatrix {
 public:
  /// An empty @p devices x @p devices matrix. @throws std::invalid_argument when negative.
  explicit DeviceMatrix(int devices = 0);
  /// Number of rows (and columns).
  int size() const noexcept { return devices_; }
  /// Sets cell (@p row, @p column). @throws std::out_of_range outside the matrix.
  void set(int row, int column, double value) { cells_[index(row, column)] = value; }
  /// Cell (@p row, @p column), or nothing when not set. @throws std::out_of_range outside.
  std::optional<double> at(int row, int column) const { return cells_[index(row, column)]; }
  /// True when no cell is set.
  bool empty() const noexcept;

 private:
  std::size_t index(int row, int column) const;
  int devices_ = 0;
  std::vector<std::optional<double>> cells_;
};

/**
 * Cell by cell @p numerator / @p denominator where both are set (and the denominator is not 0):
 * e.g. SM copy GB/s over copy-engine GB/s.
 * @throws std::invalid_argument when the sizes differ.
 */
DeviceMatrix ratioMatrix(const DeviceMatrix& numerator, const DeviceMatrix& denominator);

/**
 * A text table: a header line with @p columnLabel and the column numbers, then one line per row
 * starting with @p rowLabel and the row number. Cells are right-aligned to the widest cell;
 * every line starts with two spaces and ends with a newline.
 * @param rowLabel e.g. "from" (owner).
 * @param columnLabel e.g. "to" (accessor).
 * @param cells cells[row][column], N rows of N strings.
 * @throws std::invalid_argument when @p cells is not square.
 */
std::string formatGrid(std::string_view rowLabel, std::string_view columnLabel,
                       const std::vector<std::vector<std::string>>& cells);

/**
 * Each cell of @p matrix as text: a number with @p precision decimals, "-" for an empty cell;
 * cells[row][column], ready for formatGrid().
 */
std::vector<std::vector<std::string>> matrixCells(const DeviceMatrix& matrix, int precision);

/// The matrix as JSON: an array of rows, each an array of numbers, `null` for an empty cell.
JsonArray matrixJson(const DeviceMatrix& matrix);

/// What the driver says about the link of one ordered pair (CUdevice_P2PAttribute values), as
/// cuDeviceGetP2PAttribute(value, attribute, accessor, owner) answers them (queryPeerLinks() in
/// peer_topology.hpp asks them).
struct LinkAttributes {
  int performanceRank = 0;       ///< CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK (lower is faster).
  bool accessSupported = false;  ///< CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED.
  bool nativeAtomics = false;    ///< CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED.
  /// Why a cuDeviceGetP2PAttribute query failed (e.g. CUDA_ERROR_NOT_SUPPORTED); empty when all
  /// three answered. The attributes are then unknown: they only describe the link, so a refusal
  /// is shown ("?"), not failed.
  std::string failure;
  /// False where nobody asked (00 asks only a pair cuDeviceCanAccessPeer allows): the matrix
  /// then shows "no" without " !s", and the JSON has no attribute values for the pair.
  bool asked = true;
};

/// links[owner][accessor]: the attributes of every ordered pair; the diagonal is unused.
using LinkMatrix = std::vector<std::vector<LinkAttributes>>;

/**
 * The peer-access matrix as text (formatGrid(), rows = owners, columns = accessors). A cell is
 * "-" on the diagonal, "?" when the attribute query failed (LinkAttributes::failure), "no" when
 * the accessor cannot access the owner's memory, else "rank R" followed by " A" when atomics
 * are native; " !s" is added when cuDeviceCanAccessPeer and
 * CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED disagree.
 * @param topology the machine: canAccessPeer[accessor][owner] is cuDeviceCanAccessPeer.
 * @param links the attributes of every ordered pair, links[owner][accessor] (see LinkMatrix).
 * @throws std::invalid_argument when @p links does not match @p topology's size.
 */
std::string formatAccessMatrix(const DeviceTopology& topology, const LinkMatrix& links);

/**
 * The whole peer-access report: a legend, formatAccessMatrix(), and below it one line per pair
 * whose attributes the driver refused ("  ? owner 0, accessor 1: <failure>"). Appends one JSON
 * object per ordered pair of two devices to @p json: `owner`, `accessor`, `canAccessPeer`, and
 * `performanceRank`, `accessSupported` and `nativeAtomics` (where they were asked), or
 * `attributeQueryFailed` with the failure instead of them.
 * @throws what formatAccessMatrix() throws.
 */
std::string describePeerLinks(const DeviceTopology& topology, const LinkMatrix& links,
                              JsonArray& json);

}  // namespace memsamples
