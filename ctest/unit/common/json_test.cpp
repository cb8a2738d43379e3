// The JSON writer: escaping, numbers, nesting and key replacement.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "memsamples.hpp"
#include "support/json.hpp"

namespace ms = memsamples;

TEST(Json, QuoteEscapesEverythingJsonRequires) {
  EXPECT_EQ(ms::jsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(ms::jsonQuote("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(ms::jsonQuote("back\\slash"), "\"back\\\\slash\"");
  EXPECT_EQ(ms::jsonQuote("l1\nl2\r\t"), "\"l1\\nl2\\r\\t\"");
  EXPECT_EQ(ms::jsonQuote("\b\f"), "\"\\b\\f\"");
  EXPECT_EQ(ms::jsonQuote(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(ms::jsonQuote(std::string("nul\0in", 6)), "\"nul\\u0000in\"");
  EXPECT_EQ(ms::jsonQuote("H200 \xc2\xb5s"), "\"H200 \xc2\xb5s\"");  // UTF-8 passes through
  EXPECT_EQ(ms::jsonQuote("/"), "\"/\"");
}

TEST(Json, NumbersAndNonFinite) {
  EXPECT_EQ(ms::jsonNumber(1.5), "1.5");
  EXPECT_EQ(ms::jsonNumber(4261.25), "4261.25");
  EXPECT_EQ(ms::jsonNumber(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(ms::jsonNumber(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(ms::jsonNumber(-std::numeric_limits<double>::infinity()), "null");
  EXPECT_DOUBLE_EQ(std::stod(ms::jsonNumber(0.1234567891)), 0.1234567891);
}

TEST(Json, ObjectKeepsOrderAndReplacesKeys) {
  ms::JsonObject object;
  object.set("b", 1).set("a", "x").set("b", 2);
  EXPECT_EQ(object.dump(), "{\"b\": 2, \"a\": \"x\"}");
}

TEST(Json, NestingAndAllTypes) {
  ms::JsonArray array;
  array.add(1).add(2.5).add("s").add(true).add(static_cast<std::uint64_t>(18446744073709551615ull));
  ms::JsonObject inner;
  inner.set("k\"ey", false);
  ms::JsonObject outer;
  outer.set("array", array).set("inner", inner).set("empty", ms::JsonArray()).set("n", -3LL);
  EXPECT_EQ(outer.dump(),
            "{\"array\": [1, 2.5, \"s\", true, 18446744073709551615], \"inner\": {\"k\\\"ey\": "
            "false}, \"empty\": [], \"n\": -3}");
}
