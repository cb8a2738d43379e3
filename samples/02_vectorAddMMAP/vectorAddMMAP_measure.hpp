/**
 * @file vectorAddMMAP_measure.hpp
 * @brief What 02_vectorAddMMAP measures, against references from the same run: the kernel on
 *        the VMM ranges vs on cuMemAlloc buffers, and the host time of building and freeing a
 *        striped range vs cuMemAlloc + cuMemFree.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <iosfwd>

#include "device_roles.hpp"
#include "memsamples.hpp"

/**
 * Runs the kernel on the VMM ranges and on three cuMemAlloc buffers of the same size (the inputs
 * copied over), in interleaved rounds of CUDA-event timings (median of `--iterations` after
 * `--warmup`; each side keeps its best round, since clocks drift during a run), and prints both
 * in GB/s (3 x size bytes per launch) with the ratio VMM / cuMemAlloc and the theoretical peak.
 * @p remoteStripes stripes on other GPUs make the peer link, not the mapping, bound the ratio;
 * the output says so. Both results are copied to @p hostC and checked.
 * @return the first failed check, else the check of the VMM result.
 * @throws CudaError.
 */
memsamples::VectorAddCheck compareWithCuMemAlloc(const memsamples::VectorAddLaunch& run,
                                                 CUdevice device, int remoteStripes,
                                                 const memsamples::CommonOptions& options,
                                                 const float* hostA, const float* hostB,
                                                 float* hostC, std::ostream& out,
                                                 memsamples::JsonObject& json);

/**
 * The host time of building (mapStripedRange) and freeing (unmapStripedRange) a range of
 * @p bytes with 1, 2, 8 and 64 stripes over @p roles, median of 5 each, in ms per GiB, next to
 * cuMemAlloc + cuMemFree of the same size measured the same way. These are synchronous driver
 * calls, so a host clock is the right instrument. @throws CudaError.
 */
void reportMappingCost(const memsamples::vmm::DeviceRoles& roles, std::uint64_t granularity,
                       std::uint64_t bytes, std::ostream& out, memsamples::JsonObject& json);
