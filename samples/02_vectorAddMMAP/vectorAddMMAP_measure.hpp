/**
 * @file vectorAddMMAP_measure.hpp
 * @brief What 02_vectorAddMMAP checks and measures beside the lesson: what the driver reports
 *        from inside every stripe (step 5), and the VMM ranges against cuMemAlloc in the same run
 *        (step 7): the kernel's bandwidth, and the host time of building and freeing a range.
 */
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "memsamples.hpp"
#include "run_plan.hpp"
#include "striped_vmm.hpp"
#include "support/vector_add.hpp"

/// Step 5: from inside every stripe of @p range, cuPointerGetAttributes must report the whole
/// range and the stripe's own device, and cuMemGetAccess read-write for @p mappingDevices.
/// Prints a row per stripe (0-3 and the last) and a summary, records the problems in the JSON.
/// @return one line per problem; empty when the driver sees what was built. @throws CudaError.
std::vector<std::string> checkDriverView(const memsamples::vmm::StripedVmmRange& range,
                                         const std::vector<int>& mappingDevices,
                                         memsamples::Report& report);

/**
 * Step 7, against cuMemAlloc in the same run: the kernel of @p launch on its ranges and on three
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
