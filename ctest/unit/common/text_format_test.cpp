// Unit tests of Common/support/text_format: printf-style lines, hex addresses, joined lists.
#include "support/text_format.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ms = memsamples;

TEST(Hex, LowerCaseWithPrefix) {
  EXPECT_EQ(ms::hex(0), "0x0");
  EXPECT_EQ(ms::hex(0xABCull), "0xabc");
}

TEST(Format, PrintfStyleAndCutAt511Characters) {
  EXPECT_EQ(ms::format("%-6s|%7.1f|%d", "ab", 46.25, 3), "ab    |   46.2|3");
  EXPECT_EQ(ms::format("%s", std::string(600, 'x').c_str()).size(), 511u);
}

TEST(Joined, CommaSeparatedInOrder) {
  const auto text = [](int v) { return std::to_string(v); };
  EXPECT_EQ(ms::joined(std::vector<int>{}, text), "");
  EXPECT_EQ(ms::joined(std::vector<int>{7}, text), "7");
  EXPECT_EQ(ms::joined(std::vector<int>{0, 18, 2}, text), "0, 18, 2");
}
