/**
 * @file striped_test_support.hpp
 * @brief What the tests of striped_vmm.cpp share: a fixture that gives every test a fresh fake
 *        machine, layouts, and error messages without their line numbers.
 */
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "fake_cuda_driver.hpp"
#include "memsamples.hpp"
#include "run_plan.hpp"
#include "striped_vmm.hpp"

namespace striped_test {

constexpr std::uint64_t MiB = 1ull << 20;

/// Every test starts on an idle one-GPU machine; a test that needs another shape resets again.
class FakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { fake::reset(); }
};

/// A range of @p bytes in @p stripes stripes over @p devices, at the fake's default granularity.
inline memsamples::vmm::StripeLayout layoutOf(int stripes, std::vector<int> devices = {0},
                                              std::uint64_t bytes = 64 * MiB) {
  return memsamples::vmm::planStripes(bytes, fake::kDefaultGranularity, stripes, devices);
}

/// @p message with the line after "striped_vmm.cpp:" or "run_plan.cpp:" replaced by "N", so that
/// a whole message can be compared exactly without tying the test to a line of the sample.
inline std::string withoutLine(const std::string& message) {
  static const std::regex line("(striped_vmm|run_plan|peer_topology)\\.cpp:[0-9]+");
  return std::regex_replace(message, line, "$1.cpp:N");
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The CudaError that @p call throws; a test failure (and an empty error) when it throws none.
template <typename Call>
memsamples::CudaError cudaErrorOf(Call&& call) {
  try {
    call();
  } catch (const memsamples::CudaError& error) {
    return error;
  }
  ADD_FAILURE() << "no CudaError was thrown";
  return memsamples::CudaError(CUDA_SUCCESS, "(no exception)");
}

/// Nothing left on the fake machine: no reservation, mapping, handle or physical memory.
inline ::testing::AssertionResult machineIsClean() {
  const fake::Leftovers left = fake::leftovers();
  if (left.none())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "left behind: " << left.describe();
}

}  // namespace striped_test
