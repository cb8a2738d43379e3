/**
 * @file vectorAddDrv_measure.hpp
 * @brief What 01_vectorAddDrv measures: the kernel's bandwidth next to a device-to-device copy
 *        of the same buffers and the theoretical peak of the memory, all from the same run.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <iosfwd>

#include "memsamples.hpp"
#include "support/vector_add.hpp"

/**
 * Times a cuMemcpyDtoDAsync of A into C (read + write: 2 x size bytes) and the kernel (reads A
 * and B, writes C: 3 x size bytes) with CUDA events, median of `--iterations` after `--warmup`,
 * in three interleaved rounds of which each side keeps its fastest,
 * prints GB/s and the ratios kernel / copy, kernel / peak, copy / peak, and adds them, the
 * device and the sizes to @p json.
 * The kernel runs last, so C holds A + B again: it is copied to @p hostC and checked.
 * @return the check of C after the timed launches.
 * @throws CudaError.
 */
memsamples::VectorAddCheck measureVectorAdd(const memsamples::VectorAddLaunch& run, CUdevice device,
                                            const memsamples::CommonOptions& options,
                                            const float* hostA, const float* hostB, float* hostC,
                                            std::ostream& out, memsamples::JsonObject& json);
