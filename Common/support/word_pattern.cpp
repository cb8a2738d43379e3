// The check pattern of 32-bit words (see word_pattern.hpp).
#include "support/word_pattern.hpp"

#include <cstdio>

namespace memsamples {
namespace {

// splitmix64: a good 64-bit mix, cheap enough to compute per word on the host.
std::uint64_t mix(std::uint64_t value) noexcept {
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

std::string hexWord(std::uint32_t word) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(word));
  return text;
}

}  // namespace

std::uint32_t patternWord(std::uint32_t seed, std::uint64_t index) noexcept {
  const std::uint64_t bits = mix((static_cast<std::uint64_t>(seed) << 40) ^ index);
  // Keep the sign and the 23 mantissa bits, force the exponent of 1.0: a finite float in
  // +-[1, 2). Its exponent field is never all ones, so it is never a NaN nor the sentinel.
  return (static_cast<std::uint32_t>(bits) & 0x807FFFFFu) | 0x3F800000u;
}

void fillPattern(std::uint32_t* words, std::size_t count, std::uint32_t seed) noexcept {
  for (std::size_t i = 0; i < count; ++i)
    words[i] = patternWord(seed, i);
}

PatternCheck checkPattern(const std::uint32_t* words, std::size_t count,
                          std::uint32_t seed) noexcept {
  PatternCheck check;
  check.words = count;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t expected = patternWord(seed, i);
    if (words[i] != expected && check.mismatches++ == 0) {
      check.firstBad = i;
      check.expected = expected;
      check.actual = words[i];
    }
  }
  return check;
}

std::string describePatternCheck(const PatternCheck& check) {
  if (check.passed())
    return "all " + std::to_string(check.words) + " words match";
  return std::to_string(check.mismatches) + " of " + std::to_string(check.words) +
         " words differ, the first at word " + std::to_string(check.firstBad) + ": expected " +
         hexWord(check.expected) + ", got " + hexWord(check.actual) +
         (check.actual == kSentinelWord ? " (the sentinel: nothing was written there)" : "");
}

}  // namespace memsamples
