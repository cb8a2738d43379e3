/**
 * @file fake_call_plan.hpp
 * @brief What every fake driver of the link-seam tests keeps besides its fake machine: the calls
 *        made, in order, and the failures a test planned ("the 3rd cuMemMap returns
 *        CUDA_ERROR_OUT_OF_MEMORY").
 */
#pragma once

#include <cuda.h>

#include <map>
#include <string>
#include <vector>

namespace memsamples::test {

/// The call log and the planned failures of one fake driver. Every fake cu* function begins with
/// enter("cuName") and, when that returns an error, returns it at once, changing nothing.
class FakeCallPlan {
 public:
  /// Records a call of @p function; the failure planned for this call of it, or CUDA_SUCCESS.
  CUresult enter(const char* function) {
    log_.emplace_back(function);
    const int nth = ++counts_[function];
    const auto planned = failures_.find(function);
    if (planned == failures_.end())
      return CUDA_SUCCESS;
    const auto failure = planned->second.find(nth);
    return failure == planned->second.end() ? CUDA_SUCCESS : failure->second;
  }
  /// Makes the @p nth call (1-based) of @p function return @p result.
  void fail(const std::string& function, int nth, CUresult result) {
    failures_[function][nth] = result;
  }
  /// Every call recorded, in order, failed ones included.
  const std::vector<std::string>& log() const noexcept { return log_; }
  /// How many times @p function was called.
  int count(const std::string& function) const {
    const auto found = counts_.find(function);
    return found == counts_.end() ? 0 : found->second;
  }

 private:
  std::map<std::string, std::map<int, CUresult>> failures_;  // function -> nth call -> result
  std::map<std::string, int> counts_;
  std::vector<std::string> log_;
};

}  // namespace memsamples::test
