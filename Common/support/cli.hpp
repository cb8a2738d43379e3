/**
 * @file cli.hpp
 * @brief The value parsers behind memsamples::CommandLine, for code that reads a value of its own
 *        (a sample's list option, a unit test).
 *
 * CommandLine, in memsamples.hpp, registers the options and calls these for each value; the
 * table of registered options itself is private to support/cli.cpp. Every parser either returns
 * a value inside the range it was given or throws memsamples::UsageError with one line that
 * names the option, so a mistake never becomes a silent default. Nothing here touches the driver.
 */
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace memsamples {

/**
 * Parses a byte size such as `4096`, `64K`, `256M`, `1G` or `1GiB`.
 *
 * The suffixes K, M, G and T are binary (K = 1024); case does not matter, and a trailing `B` or
 * `iB` is allowed.
 * @param text the value as typed.
 * @param what names the option in messages, e.g. "--size".
 * @param min the smallest byte count accepted; 0 is refused whenever @p min is above 0.
 * @param max the largest byte count accepted.
 * @return the size in bytes, in [@p min, @p max].
 * @throws UsageError for anything else, for a value outside [@p min, @p max] and for one that
 *         does not fit in 64 bits.
 */
std::uint64_t parseSize(std::string_view text, std::string_view what, std::uint64_t min = 1,
                        std::uint64_t max = UINT64_MAX);

/// Parses a decimal integer (an optional `-`, then digits, nothing else).
/// @return the value, in [@p min, @p max].
/// @throws UsageError naming @p what for anything else or a value outside [@p min, @p max].
long long parseInteger(std::string_view text, std::string_view what, long long min, long long max);

/// Splits @p text at every comma and keeps the empty items ("a,,b" gives "a", "", "b"; "" gives
/// one empty item), so that each list parser reports an empty entry in its own words. The items
/// point into @p text, which must outlive them. Throws nothing but std::bad_alloc.
std::vector<std::string_view> splitCommaList(std::string_view text);

/// Parses a comma-separated list of integers, e.g. `0,1,3`.
/// @return the values in the order given, each in [@p min, @p max].
/// @throws UsageError naming @p what for an item that is not such an integer and for a value
///         listed twice.
std::vector<int> parseIntegerList(std::string_view text, std::string_view what, int min, int max);

}  // namespace memsamples
