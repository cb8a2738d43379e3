/**
 * @file text_format.cpp
 * @brief Small text helpers of the measure files; see text_format.hpp.
 */
#include "support/text_format.hpp"

#include <cstdarg>
#include <cstdio>
#include <sstream>

namespace memsamples {

std::string format(const char* pattern, ...) {
  char line[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(line, sizeof line, pattern, args);
  va_end(args);
  return line;
}

std::string hex(std::uint64_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << value;
  return text.str();
}

}  // namespace memsamples
