/**
 * @file text_format.hpp
 * @brief Small text helpers of the measure files: printf-style lines, hexadecimal addresses and
 *        lists joined with ", ".
 *
 * Nothing here touches the CUDA driver (unit tested in ctest/unit/common/text_format_test.cpp).
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memsamples {

/// printf-style text for a report's lines, at most 511 characters (longer text is cut).
[[gnu::format(printf, 1, 2)]] std::string format(const char* pattern, ...);

/// "0x7f4742000000".
std::string hex(std::uint64_t value);

/// @p items as text (@p text of each), separated by ", ".
template <typename T, typename Text>
std::string joined(const std::vector<T>& items, Text text) {
  std::string out;
  for (const T& item : items)
    out += (out.empty() ? "" : ", ") + text(item);
  return out;
}

}  // namespace memsamples
