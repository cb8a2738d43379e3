// The CUDA-free half of the shared vector-add workload (support/vector_add.hpp): inputs and the
// exact check. timeVectorAdd() is in memsamples_cuda.cpp. Unit tested in ctest/unit/common.
#include "support/vector_add.hpp"

#include <sstream>

namespace memsamples {

void fillVectorAddInputs(float* a, float* b, std::size_t count, std::uint32_t seed) {
  // xorshift32: fast, reproducible, and never zero when seeded non-zero.
  std::uint32_t state = seed == 0 ? 0x9E3779B9u : seed;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;  // [-1, 1)
  };
  for (std::size_t i = 0; i < count; ++i) {
    a[i] = next();
    b[i] = next();
  }
}

std::string describeMismatch(const VectorAddCheck& check) {
  if (check.mismatches == 0)
    return {};
  std::ostringstream text;
  text << "Mismatch at element " << check.firstBad << ": expected " << check.expected << ", got "
       << check.actual << " (" << check.mismatches << " wrong in total)";
  return text.str();
}

VectorAddCheck checkVectorAdd(const float* a, const float* b, const float* c, std::size_t count) {
  VectorAddCheck result;
  for (std::size_t i = 0; i < count; ++i) {
    const float expected = a[i] + b[i];
    if (c[i] != expected) {
      if (result.mismatches == 0) {
        result.firstBad = i;
        result.expected = expected;
        result.actual = c[i];
      }
      ++result.mismatches;
    }
  }
  return result;
}

}  // namespace memsamples
