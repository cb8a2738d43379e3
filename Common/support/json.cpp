// The JSON writer of support/json.hpp. CUDA-free, unit tested in ctest/unit/common/json_test.cpp.
#include "support/json.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

namespace memsamples {

std::string jsonQuote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
          out += escaped;
        } else {
          out += c;  // bytes >= 0x80 are UTF-8 and pass through unchanged
        }
    }
  }
  out += '"';
  return out;
}

std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

JsonArray& JsonArray::add(double value) {
  return addRaw(jsonNumber(value));
}
JsonArray& JsonArray::add(long long value) {
  return addRaw(std::to_string(value));
}
JsonArray& JsonArray::add(int value) {
  return addRaw(std::to_string(value));
}
JsonArray& JsonArray::add(std::uint64_t value) {
  return addRaw(std::to_string(value));
}
JsonArray& JsonArray::add(bool value) {
  return addRaw(value ? "true" : "false");
}
JsonArray& JsonArray::add(std::string_view value) {
  return addRaw(jsonQuote(value));
}
JsonArray& JsonArray::add(const char* value) {
  return addRaw(jsonQuote(value));
}
JsonArray& JsonArray::addRaw(std::string json) {
  items_.push_back(std::move(json));
  return *this;
}

std::string JsonArray::dump() const {
  std::string out = "[";
  for (std::size_t i = 0; i < items_.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += items_[i];
  }
  return out + "]";
}

JsonObject& JsonObject::set(std::string_view key, double value) {
  return setRaw(key, jsonNumber(value));
}
JsonObject& JsonObject::set(std::string_view key, long long value) {
  return setRaw(key, std::to_string(value));
}
JsonObject& JsonObject::set(std::string_view key, int value) {
  return setRaw(key, std::to_string(value));
}
JsonObject& JsonObject::set(std::string_view key, std::uint64_t value) {
  return setRaw(key, std::to_string(value));
}
JsonObject& JsonObject::set(std::string_view key, bool value) {
  return setRaw(key, value ? "true" : "false");
}
JsonObject& JsonObject::set(std::string_view key, std::string_view value) {
  return setRaw(key, jsonQuote(value));
}
JsonObject& JsonObject::set(std::string_view key, const char* value) {
  return setRaw(key, jsonQuote(value));
}
JsonObject& JsonObject::set(std::string_view key, const JsonObject& value) {
  return setRaw(key, value.dump());
}
JsonObject& JsonObject::set(std::string_view key, const JsonArray& value) {
  return setRaw(key, value.dump());
}

JsonObject& JsonObject::setRaw(std::string_view key, std::string json) {
  for (auto& member : members_) {
    if (member.first == key) {
      member.second = std::move(json);
      return *this;
    }
  }
  members_.emplace_back(std::string(key), std::move(json));
  return *this;
}

std::string JsonObject::dump() const {
  std::string out = "{";
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += jsonQuote(members_[i].first) + ": " + members_[i].second;
  }
  return out + "}";
}

}  // namespace memsamples
