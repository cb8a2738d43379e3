// Helpers shared by the unit tests of Common and of the samples.
#pragma once

#include <string>

namespace memsamples::test {

/// The what() of the @p Error that @p call throws, or "(no exception)" when it throws nothing:
/// lets a test compare an error's whole message with EXPECT_EQ. Other exception types propagate,
/// so a wrong type fails the test too.
template <typename Error, typename Call>
std::string messageOf(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no exception)";
}

}  // namespace memsamples::test
