/**
 * @file json.hpp
 * @brief The small JSON writer behind `--json`: memsamples::Report::json() is a JsonObject, and a
 *        sample's measurements fill it with `report.json().set("key", value)`.
 *
 * Only writing, never reading: members keep the order they were set in, numbers that JSON
 * cannot express (NaN, infinities) become null, and strings are escaped so that any text,
 * an error message included, gives valid JSON. Nothing here touches the CUDA driver.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memsamples {

/// @p text as a JSON string literal, quotes included: `"`, `\` and the control characters are
/// escaped (`\n`, `\t`..., the others as `\u00XX`); bytes of 0x80 and above pass unchanged, so
/// UTF-8 stays UTF-8. It accepts any text and throws nothing but std::bad_alloc.
std::string jsonQuote(std::string_view text);

/// @p value as a JSON number with 10 significant digits, or `null` for NaN and the infinities,
/// which JSON cannot express. It throws nothing but std::bad_alloc.
std::string jsonNumber(double value);

/// A JSON array built element by element; the elements keep their order. Every add() returns
/// the array itself so that calls can be chained, and throws nothing but std::bad_alloc.
class JsonArray {
 public:
  JsonArray& add(double value);            ///< Appends a number (jsonNumber()).
  JsonArray& add(long long value);         ///< Appends an integer.
  JsonArray& add(int value);               ///< Appends an integer.
  JsonArray& add(std::uint64_t value);     ///< Appends an unsigned integer.
  JsonArray& add(bool value);              ///< Appends true or false.
  JsonArray& add(std::string_view value);  ///< Appends a string (jsonQuote()).
  JsonArray& add(const char* value);       ///< Appends a string; @p value must not be null.
  /// Appends @p json unchanged; it must already be one valid JSON value (it is not checked).
  JsonArray& addRaw(std::string json);
  /// The array as compact JSON text, e.g. `[1, "two", null]`.
  std::string dump() const;
  /// True when nothing was added yet.
  bool empty() const noexcept { return items_.empty(); }

 private:
  std::vector<std::string> items_;
};

/// A JSON object built member by member. Members keep the order of their first set(); setting a
/// key again replaces its value in place. Every set() returns the object itself so that calls can
/// be chained, and throws nothing but std::bad_alloc.
class JsonObject {
 public:
  JsonObject& set(std::string_view key, double value);             ///< A number (jsonNumber()).
  JsonObject& set(std::string_view key, long long value);          ///< An integer.
  JsonObject& set(std::string_view key, int value);                ///< An integer.
  JsonObject& set(std::string_view key, std::uint64_t value);      ///< An unsigned integer.
  JsonObject& set(std::string_view key, bool value);               ///< true or false.
  JsonObject& set(std::string_view key, std::string_view value);   ///< A string (jsonQuote()).
  JsonObject& set(std::string_view key, const char* value);        ///< A string; not null.
  JsonObject& set(std::string_view key, const JsonObject& value);  ///< A copy of a nested object.
  JsonObject& set(std::string_view key, const JsonArray& value);   ///< A copy of an array.
  /// The object as compact JSON text, e.g. `{"sample": "vectorAddDrv", "gbps": 4244.1}`.
  std::string dump() const;

 private:
  JsonObject& setRaw(std::string_view key, std::string json);
  std::vector<std::pair<std::string, std::string>> members_;
};

}  // namespace memsamples
