/**
 * @file vector_add.hpp
 * @brief The vector-add workload that several samples share: its host-side inputs, its exact
 *        check, and the timing of repeated launches.
 *
 * 01_vectorAddDrv, 02_vectorAddMMAP, 03_managedAdvisePrefetch and the others move data through
 * the same kernel, `VecAdd_kernel` in vectorAdd_kernel.fatbin, so that their results compare
 * across allocation techniques. Each sample writes its own launch; these are the inputs it
 * fills, the check it runs on the result and the timing its measure file repeats.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "memsamples.hpp"

namespace memsamples {

/// A VecAdd_kernel launch as a sample set it up (C = A + B on device buffers), for its
/// measurements to repeat. The sample writes the launch itself; this only carries its settings.
struct VectorAddLaunch {
  CUfunction kernel = nullptr;  ///< `VecAdd_kernel`.
  unsigned int grid = 0;        ///< Blocks per launch.
  unsigned int block = 0;       ///< Threads per block.
  CUstream stream = nullptr;    ///< Where the launches and copies go.
  CUdeviceptr a = 0;            ///< Input A: count floats on the device.
  CUdeviceptr b = 0;            ///< Input B.
  CUdeviceptr c = 0;            ///< Output C = A + B.
  std::size_t count = 0;        ///< Elements per vector.
};

/**
 * Times @p launch with timeOnStream(): @p warmup untimed launches of VecAdd_kernel over its a, b,
 * c and count, then @p iterations timed ones, on its stream. Needs a current context in which
 * the kernel and the buffers are valid.
 * @return the statistics of the timed launches.
 * @throws CudaError when a launch or an event call fails.
 */
TimingStats timeVectorAdd(const VectorAddLaunch& launch, int warmup, int iterations);

/// Fills @p a and @p b (@p count floats each) with reproducible pseudo-random values in [-1, 1)
/// derived from @p seed: the same seed gives the same values on every machine. Throws nothing.
void fillVectorAddInputs(float* a, float* b, std::size_t count, std::uint32_t seed);

/// The result of comparing C with A + B element by element.
struct VectorAddCheck {
  std::size_t mismatches = 0;  ///< Elements where C != A + B.
  std::size_t firstBad = 0;    ///< Index of the first mismatch (valid when mismatches > 0).
  float expected = 0;          ///< A + B at firstBad.
  float actual = 0;            ///< C at firstBad.
};

/**
 * Counts the elements where @p c differs from @p a + @p b (@p count floats each, on the host).
 * The comparison is exact: a float addition is correctly rounded on the GPU and the CPU alike (no
 * FMA is involved), so any difference is a real error, not rounding.
 * @return the count and the first mismatch. Throws nothing.
 */
VectorAddCheck checkVectorAdd(const float* a, const float* b, const float* c, std::size_t count);

/// The sentence a sample prints for a failed check: "Mismatch at element 5: expected 1.25,
/// got 0 (3 wrong in total)". @return that text, or "" when every element matched.
std::string describeMismatch(const VectorAddCheck& check);

}  // namespace memsamples
