// The pattern every transfer of 05_p2pMemMap is checked with: what it guarantees (never the
// sentinel, never a NaN, different per device) and how a check reports a bad copy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "p2p_logic.hpp"

namespace p2p = memsamples::p2p;

namespace {

float asFloat(std::uint32_t word) {
  float value = 0;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

std::vector<std::uint32_t> pattern(std::size_t count, std::uint32_t seed) {
  std::vector<std::uint32_t> words(count);
  memsamples::fillPattern(words.data(), words.size(), seed);
  return words;
}

}  // namespace

TEST(Pattern, TheSeedAndTheIndexBothChangeTheWord) {
  // Each device's buffer is filled with its own seed: a copy from the wrong device, or a word
  // written to the wrong place, must not check out by accident.
  const std::vector<std::uint32_t> three = pattern(1000, 3);
  const std::vector<std::uint32_t> four = pattern(1000, 4);
  std::size_t sameWord = 0;
  std::size_t sameAsNext = 0;
  for (std::size_t i = 0; i < three.size(); ++i) {
    sameWord += three[i] == four[i] ? 1 : 0;
    sameAsNext += i + 1 < three.size() && three[i] == three[i + 1] ? 1 : 0;
  }
  EXPECT_LT(sameWord, 10u);
  EXPECT_LT(sameAsNext, 10u);
}

TEST(Pattern, FillWritesTheWordsOfPatternWord) {
  const std::vector<std::uint32_t> words = pattern(64, 11);
  for (std::size_t i = 0; i < words.size(); ++i)
    EXPECT_EQ(words[i], memsamples::patternWord(11, i)) << "word " << i;
}

TEST(Pattern, WordsAreFiniteFloatsOfMagnitudeOneToTwoAndNeverTheSentinel) {
  for (std::uint32_t seed : {0u, 1u, p2p::sourceSeed(0), p2p::sourceSeed(7), 0xFFFFFFFFu}) {
    for (std::uint64_t i = 0; i < 20000; ++i) {
      const std::uint32_t word = memsamples::patternWord(seed, i);
      ASSERT_NE(word, memsamples::kSentinelWord);
      const float value = asFloat(word);
      ASSERT_TRUE(std::isfinite(value)) << "seed " << seed << " word " << i;
      ASSERT_GE(std::fabs(value), 1.0f);
      ASSERT_LT(std::fabs(value), 2.0f);
    }
  }
  EXPECT_TRUE(std::isnan(asFloat(memsamples::kSentinelWord)));
}

TEST(Pattern, UsesBothSignsAndManyMantissas) {
  std::set<std::uint32_t> distinct;
  int negative = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    const std::uint32_t word = memsamples::patternWord(5, i);
    distinct.insert(word);
    negative += (word >> 31) != 0;
  }
  EXPECT_GT(distinct.size(), 4000u);  // neighbouring words differ: a shifted copy is caught
  EXPECT_GT(negative, 1500);
  EXPECT_LT(negative, 2600);
}

TEST(Pattern, EveryDeviceSendsDifferentData) {
  // A destination holding another device's data (or stale data) must fail the check.
  std::set<std::uint32_t> seeds;
  for (int device = 0; device < 64; ++device)
    seeds.insert(p2p::sourceSeed(device));
  EXPECT_EQ(seeds.size(), 64u);
  const std::vector<std::uint32_t> zero = pattern(4096, p2p::sourceSeed(0));
  const std::vector<std::uint32_t> one = pattern(4096, p2p::sourceSeed(1));
  std::size_t equal = 0;
  for (std::size_t i = 0; i < zero.size(); ++i)
    equal += zero[i] == one[i];
  EXPECT_LT(equal, 4u);
  const memsamples::PatternCheck check = memsamples::checkPattern(one.data(), one.size(), p2p::sourceSeed(0));
  EXPECT_GT(check.mismatches, 4090u);
}

TEST(CheckPattern, AcceptsAnExactCopy) {
  const std::vector<std::uint32_t> words = pattern(1025, 9);  // not a multiple of 4
  const memsamples::PatternCheck check = memsamples::checkPattern(words.data(), words.size(), 9);
  EXPECT_TRUE(check.passed());
  EXPECT_EQ(check.words, 1025u);
  EXPECT_EQ(check.mismatches, 0u);
  EXPECT_EQ(memsamples::describePatternCheck(check), "all 1025 words match");
}

TEST(CheckPattern, CountsMismatchesAndReportsTheFirst) {
  std::vector<std::uint32_t> words = pattern(100, 9);
  const std::uint32_t expected17 = words[17];
  words[17] = 0x12345678u;
  words[80] ^= 1u;  // one flipped bit is a mismatch too: the check compares bits
  const memsamples::PatternCheck check = memsamples::checkPattern(words.data(), words.size(), 9);
  EXPECT_FALSE(check.passed());
  EXPECT_EQ(check.mismatches, 2u);
  EXPECT_EQ(check.firstBad, 17u);
  EXPECT_EQ(check.expected, expected17);
  EXPECT_EQ(check.actual, 0x12345678u);
  char expectedHex[16];
  std::snprintf(expectedHex, sizeof expectedHex, "0x%08x", static_cast<unsigned>(expected17));
  EXPECT_EQ(memsamples::describePatternCheck(check),
            "2 of 100 words differ, the first at word 17: "
            "expected " +
                std::string(expectedHex) + ", got 0x12345678");
}

TEST(CheckPattern, SaysWhenNothingWasWritten) {
  // What a copy that never ran leaves behind: the sentinel the destination was filled with.
  const std::vector<std::uint32_t> words(8, memsamples::kSentinelWord);
  const memsamples::PatternCheck check = memsamples::checkPattern(words.data(), words.size(), 4);
  EXPECT_EQ(check.mismatches, 8u);
  EXPECT_EQ(check.firstBad, 0u);
  char expectedHex[16];
  std::snprintf(expectedHex, sizeof expectedHex, "0x%08x",
                static_cast<unsigned>(memsamples::patternWord(4, 0)));
  EXPECT_EQ(memsamples::describePatternCheck(check),
            "8 of 8 words differ, the first at word 0: expected " + std::string(expectedHex) +
                ", got 0xffffffff (the sentinel: nothing was written there)");
}

TEST(CheckPattern, EmptyBufferPasses) {
  const memsamples::PatternCheck check = memsamples::checkPattern(nullptr, 0, 1);
  EXPECT_TRUE(check.passed());
  EXPECT_EQ(memsamples::describePatternCheck(check), "all 0 words match");
}
