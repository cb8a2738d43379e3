/**
 * @file word_pattern.hpp
 * @brief The data a copy is checked with: a pseudo-random pattern of 32-bit words derived from a
 *        seed, a sentinel that marks a destination nothing was written to, and a word-by-word
 *        check that names the first bad word.
 *
 * A source filled with the pattern of a seed of its own proves, word by word, that a destination
 * got its data from that source. Nothing here touches the CUDA driver (unit tested in
 * ctest/unit/common/word_pattern_test.cpp).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace memsamples {

/// What a destination holds before a measurement: a NaN, never a pattern word.
inline constexpr std::uint32_t kSentinelWord = 0xFFFFFFFFu;

/**
 * Word @p index of the pattern of @p seed: pseudo-random bits (a hash of seed and index) shaped
 * as a finite float in +-[1, 2), so the words survive any float load/store and never equal
 * kSentinelWord. Two different seeds differ in almost every word.
 */
std::uint32_t patternWord(std::uint32_t seed, std::uint64_t index) noexcept;

/// Writes words 0 .. @p count - 1 of the pattern of @p seed to @p words.
void fillPattern(std::uint32_t* words, std::size_t count, std::uint32_t seed) noexcept;

/// Result of comparing a buffer with a pattern, word by word.
struct PatternCheck {
  std::size_t words = 0;       ///< Words compared.
  std::size_t mismatches = 0;  ///< Words that differ from the pattern.
  std::size_t firstBad = 0;    ///< Index of the first mismatch (valid when mismatches > 0).
  std::uint32_t expected = 0;  ///< The pattern word at firstBad.
  std::uint32_t actual = 0;    ///< What the buffer held there.
  /// True when every word matched.
  bool passed() const noexcept { return mismatches == 0; }
};

/// Compares @p words[0 .. @p count) with the pattern of @p seed. Exact: these are bits, not sums.
PatternCheck checkPattern(const std::uint32_t* words, std::size_t count,
                          std::uint32_t seed) noexcept;

/**
 * "all 4194304 words match", or "3 of 4194304 words differ, the first at word 17: expected
 * 0x3f812345, got 0xffffffff (the sentinel: nothing was written there)".
 */
std::string describePatternCheck(const PatternCheck& check);

}  // namespace memsamples
