/**
 * @file vectorAddMMAP_measure.hpp
 * @brief What 02_vectorAddMMAP checks and measures after its core (step 8), on three new
 *        ranges built as the core builds A, B and C: what the driver reports from inside every
 *        stripe, and the ranges against cuMemAlloc in the same run: the kernel's bandwidth, and
 *        the host time of building and freeing a range.
 */
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "memsamples.hpp"
#include "run_plan.hpp"
#include "striped_vmm.hpp"
#include "support/vector_add.hpp"

/// From inside every stripe of @p range, cuPointerGetAttributes must report the whole
/// range and the stripe's own device, and cuMemGetAccess read-write for @p mappingDevices.
/// Prints a row per stripe (0-3 and the last) and a summary, records the problems in the JSON.
/// @return one line per problem; empty when the driver sees what was built. @throws CudaError.
std::vector<std::string> checkDriverView(const memsamples::vmm::StripedVmmRange& range,
                                         const std::vector<int>& mappingDevices,
                                         memsamples::Report& report);

/**
 * Against cuMemAlloc in the same run: the kernel of @p launch on its ranges and on three
 * cuMemAlloc buffers (interleaved rounds of CUDA-event medians, each side keeping its best), in
 * GB/s with the ratio and the theoretical peak; and the host time of building and freeing a
 * range of each of kCostStripeCounts stripes (median of 7) next to cuMemAlloc + cuMemFree. Both
 * results are checked again; the first wrong element of @p firstRun, else of those checks, is
 * printed. @return the first run's check when it found a wrong element, else the timed runs'
 * (the VMM result's when it is wrong, else the cuMemAlloc reference's). @throws CudaError.
 */
memsamples::VectorAddCheck measureAgainstCuMemAlloc(const memsamples::VectorAddLaunch& launch,
                                                    const memsamples::VectorAddCheck& firstRun,
                                                    const float* hostA, const float* hostB,
                                                    float* hostC,
                                                    const memsamples::vmm::RunDevices& devices,
                                                    const memsamples::CommonOptions& options,
                                                    memsamples::Report& report);

/// What step 8 found: the driver view's problems and the kernel's results, checked.
struct Step8Findings {
  std::vector<std::string> problems;    ///< From checkDriverView(); empty when all is as built.
  memsamples::VectorAddCheck verified;  ///< From measureAgainstCuMemAlloc().
};

/**
 * Step 8, once the lesson's core has freed its ranges: builds A, B and C again as the core does
 * (same size, stripes and devices), copies @p hostA and @p hostB in on a stream of its own, runs
 * checkDriverView() on A and measureAgainstCuMemAlloc() on the three (@p run's function, grid
 * and block on them), then frees them with checked calls. Owners free whatever an error leaves.
 * @throws CudaError.
 */
Step8Findings checkAndMeasure(const memsamples::VectorAddLaunch& run,
                              const memsamples::VectorAddCheck& firstRun, const float* hostA,
                              const float* hostB, float* hostC,
                              const memsamples::vmm::RunDevices& devices,
                              const memsamples::CommonOptions& options,
                              memsamples::Report& report);
