/**
 * @file vectorAddMMAP_measure.hpp
 * @brief What 02_vectorAddMMAP measures and reports, against references from the same run: the
 *        kernel on the VMM ranges vs on cuMemAlloc buffers, and the host time of building and
 *        freeing a striped range vs cuMemAlloc + cuMemFree; plus the table and JSON fields of
 *        the run.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "device_memory.hpp"
#include "device_roles.hpp"
#include "memsamples.hpp"
#include "striped_vmm.hpp"
#include "support/vector_add.hpp"

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

/// The stripe counts of the ranges reportMappingCost() builds, one at a time, while A, B and C
/// are alive (the sizing of the run counts them: memsamples::vmm::RunShape).
std::vector<int> mappingCostStripeCounts();

/**
 * The host time of building (mapStripedRange) and freeing (unmapStripedRange) a range of
 * @p bytes with each of mappingCostStripeCounts() stripes over @p roles, each laid out at the
 * granularity planStripes() chooses for it, in ms per range (median of 7 after one untimed
 * build), next to cuMemAlloc + cuMemFree of the same rounded size measured the same way.
 * These are synchronous driver calls, so a host clock is the right instrument.
 * @throws CudaError.
 */
void reportMappingCost(const memsamples::vmm::DeviceRoles& roles,
                       const memsamples::vmm::Granularities& granularities, std::uint64_t bytes,
                       std::ostream& out, memsamples::JsonObject& json);

/// One row of the stripe table: the stripe, the device the driver reports for it, its address,
/// the range the driver sees from inside it and, per mapping device, the access cuMemGetAccess
/// reports there ("0:rw 1:rw"). Rows 0-3 and the last one are printed, with "..." once in
/// between, so a range of 64 stripes stays readable.
void printStripe(std::ostream& out, std::size_t stripe, int deviceOrdinal, CUdeviceptr address,
                 CUdeviceptr rangeStart, std::size_t rangeSize, const std::string& access,
                 std::size_t stripeCount);

/// The run's devices, granularities, stripes, sizes, memory needed and free per device, and
/// driver-view problems as JSON fields.
void recordRun(memsamples::JsonObject& json, int ordinal, const std::string& deviceName,
               const memsamples::vmm::DeviceRoles& roles,
               const memsamples::vmm::Granularities& granularities,
               const memsamples::vmm::RunSize& size, const std::vector<std::string>& problems);
