// An N x N matrix of optional numbers and its text and JSON forms (see device_matrix.hpp).
#include "support/device_matrix.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace memsamples {

DeviceMatrix::DeviceMatrix(int devices) : devices_(devices) {
  if (devices < 0)
    throw std::invalid_argument("DeviceMatrix: negative size " + std::to_string(devices));
  cells_.resize(static_cast<std::size_t>(devices) * static_cast<std::size_t>(devices));
}

std::size_t DeviceMatrix::index(int row, int column) const {
  if (row < 0 || column < 0 || row >= devices_ || column >= devices_) {
    const std::string size = std::to_string(devices_);
    throw std::out_of_range("DeviceMatrix: cell (" + std::to_string(row) + ", " +
                            std::to_string(column) + ") is outside a " + size + " x " + size +
                            " matrix");
  }
  return static_cast<std::size_t>(row * devices_ + column);
}

bool DeviceMatrix::empty() const noexcept {
  return std::none_of(cells_.begin(), cells_.end(),
                      [](const std::optional<double>& cell) { return cell.has_value(); });
}

DeviceMatrix ratioMatrix(const DeviceMatrix& numerator, const DeviceMatrix& denominator) {
  if (numerator.size() != denominator.size()) {
    throw std::invalid_argument("ratioMatrix: a " + std::to_string(numerator.size()) +
                                "-device matrix over a " + std::to_string(denominator.size()) +
                                "-device one");
  }
  DeviceMatrix ratio(numerator.size());
  for (int row = 0; row < numerator.size(); ++row) {
    for (int column = 0; column < numerator.size(); ++column) {
      const std::optional<double> top = numerator.at(row, column);
      const std::optional<double> bottom = denominator.at(row, column);
      if (top && bottom && *bottom != 0.0)
        ratio.set(row, column, *top / *bottom);
    }
  }
  return ratio;
}

std::string formatGrid(std::string_view rowLabel, std::string_view columnLabel,
                       const std::vector<std::vector<std::string>>& cells) {
  const std::size_t count = cells.size();
  std::vector<std::string> headers;  // "<columnLabel> <n>": the last one is the widest
  std::size_t width = 1;
  for (std::size_t row = 0; row < count; ++row) {
    if (cells[row].size() != count) {
      throw std::invalid_argument("formatGrid: row " + std::to_string(row) + " has " +
                                  std::to_string(cells[row].size()) + " cells, expected " +
                                  std::to_string(count));
    }
    headers.push_back(std::string(columnLabel) + " " + std::to_string(row));
    for (const std::string& cell : cells[row])
      width = std::max({width, cell.size(), headers.back().size()});
  }
  // The first column holds "<rowLabel> <n>", as wide as the last one.
  const std::size_t first =
      count == 0 ? 0 : rowLabel.size() + headers.back().size() - columnLabel.size();
  std::string out;
  const auto addRow = [&](const std::string& label, const std::vector<std::string>& row) {
    out += "  " + label + std::string(first - label.size(), ' ');
    for (const std::string& cell : row)
      out += "  " + std::string(width - std::min(width, cell.size()), ' ') + cell;
    out += '\n';
  };
  addRow("", headers);
  for (std::size_t row = 0; row < count; ++row)
    addRow(std::string(rowLabel) + " " + std::to_string(row), cells[row]);
  return out;
}

std::vector<std::vector<std::string>> matrixCells(const DeviceMatrix& matrix, int precision) {
  const auto count = static_cast<std::size_t>(matrix.size());
  std::vector<std::vector<std::string>> cells(count, std::vector<std::string>(count, "-"));
  for (std::size_t row = 0; row < count; ++row) {
    for (std::size_t column = 0; column < count; ++column) {
      if (const std::optional<double> value = matrix.at(int(row), int(column))) {
        char text[64];
        std::snprintf(text, sizeof text, "%.*f", precision, *value);
        cells[row][column] = text;
      }
    }
  }
  return cells;
}

JsonArray matrixJson(const DeviceMatrix& matrix) {
  JsonArray rows;
  for (int row = 0; row < matrix.size(); ++row) {
    JsonArray cells;
    for (int column = 0; column < matrix.size(); ++column) {
      const std::optional<double> value = matrix.at(row, column);
      cells.addRaw(value ? jsonNumber(*value) : "null");
    }
    rows.addRaw(cells.dump());
  }
  return rows;
}

std::string formatAccessMatrix(const DeviceTopology& topology, const LinkMatrix& links) {
  topology.checkShape();
  const auto count = static_cast<std::size_t>(topology.deviceCount());
  const auto wrongRow = [count](const std::vector<LinkAttributes>& row) {
    return row.size() != count;
  };
  if (links.size() != count || std::any_of(links.begin(), links.end(), wrongRow)) {
    throw std::invalid_argument("formatAccessMatrix: the link matrix is not " +
                                std::to_string(count) + " x " + std::to_string(count));
  }
  std::vector<std::vector<std::string>> cells(count, std::vector<std::string>(count, "-"));
  for (std::size_t owner = 0; owner < count; ++owner) {
    for (std::size_t accessor = 0; accessor < count; ++accessor) {
      const LinkAttributes& link = links[owner][accessor];
      const bool access = topology.canAccessPeer[accessor][owner];
      std::string& cell = cells[owner][accessor];
      if (owner != accessor && !link.failure.empty())
        cell = "?";
      else if (owner != accessor)
        cell = (access ? "rank " + std::to_string(link.performanceRank) +
                             (link.nativeAtomics ? " A" : "")
                       : "no") +
               (link.asked && access != link.accessSupported ? " !s" : "");
    }
  }
  return formatGrid("owner", "accessor", cells);
}

std::string describePeerLinks(const DeviceTopology& topology, const LinkMatrix& links,
                              JsonArray& json) {
  std::string text =
      "Peer access (cuDeviceCanAccessPeer(accessor, owner); rank = "
      "CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,\nA = native atomics, !s = ACCESS_SUPPORTED "
      "disagrees, ? = cuDeviceGetP2PAttribute failed):\n" +
      formatAccessMatrix(topology, links);
  for (std::size_t owner = 0; owner < links.size(); ++owner) {
    for (std::size_t accessor = 0; accessor < links.size(); ++accessor) {
      if (owner == accessor)
        continue;  // a device is not its own peer: nothing was asked
      const LinkAttributes& link = links[owner][accessor];
      JsonObject item;
      item.set("owner", int(owner)).set("accessor", int(accessor));
      item.set("canAccessPeer", static_cast<bool>(topology.canAccessPeer[accessor][owner]));
      if (!link.asked) {
        // Nothing to add: the attributes of a pair without access were not asked.
      } else if (link.failure.empty()) {
        item.set("performanceRank", link.performanceRank);
        item.set("accessSupported", link.accessSupported).set("nativeAtomics", link.nativeAtomics);
      } else {
        text += "  ? owner " + std::to_string(owner) + ", accessor " + std::to_string(accessor) +
                ": " + link.failure + "\n";
        item.set("attributeQueryFailed", link.failure);
      }
      json.addRaw(item.dump());
    }
  }
  return text;
}

}  // namespace memsamples
