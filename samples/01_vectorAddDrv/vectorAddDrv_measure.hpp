/**
 * @file vectorAddDrv_measure.hpp
 * @brief What 01_vectorAddDrv measures: how big its vectors can be, and the kernel's
 *        bandwidth next to a device-to-device copy of the same buffers and the theoretical
 *        peak of the memory, all from the same run.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <iosfwd>
#include <optional>

#include "memsamples.hpp"
#include "support/vector_add.hpp"

/**
 * The bytes per vector for A, B and C, and the line that says so ("Vectors: ..." on @p out).
 *
 * Without a `--size` (@p requested): 256 MiB (64 Mi floats), less when the three vectors would
 * take more than 80 % of the device's free memory (cuMemGetInfo, in the current context), or
 * when their three page-locked host copies would not fit in the host memory this process may
 * still take (the tighter of MemAvailable and a container's memory limit). A requested size
 * is checked against both instead, and refused when it does not fit.
 * @throws memsamples::UsageError, CudaError.
 */
std::uint64_t sizeVectors(const std::optional<std::uint64_t>& requested, std::ostream& out);

/**
 * Times a cuMemcpyDtoDAsync of A into C (read + write: 2 x size bytes) and the kernel (reads
 * A and B, writes C: 3 x size bytes) with CUDA events, median of `--iterations` after
 * `--warmup`, in three interleaved rounds of which each side keeps its fastest, prints GB/s
 * and the ratios kernel / copy, kernel / peak, copy / peak, and adds them, the device and the
 * sizes to the JSON result.
 *
 * The kernel runs last, so C holds A + B again: it is copied to @p hostC and checked. The
 * verdict counts both checks: PASS when @p firstRun (the check of the lesson's own launch) and
 * this one found every element right. Otherwise the first wrong element of the first check
 * that failed is described on the report's text, and the JSON gets "mismatches".
 * @throws CudaError.
 */
memsamples::Verdict measureVectorAdd(const memsamples::VectorAddLaunch& launch,
                                     const memsamples::VectorAddCheck& firstRun,
                                     CUdevice device, const memsamples::CommonOptions& options,
                                     const float* hostA, const float* hostB, float* hostC,
                                     memsamples::Report& report);
