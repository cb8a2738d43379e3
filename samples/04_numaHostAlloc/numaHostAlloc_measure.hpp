/**
 * @file numaHostAlloc_measure.hpp
 * @brief What 04_numaHostAlloc measures and reports: for each host source (mbind +
 *        cuMemHostRegister, cuMemCreate(HOST_NUMA), cuMemHostAlloc) the copies to and from the
 *        device and a zero-copy kernel, against cuMemHostAlloc from the same run; the copies from
 *        a range bound to each NUMA node; the topology lines; and the JSON fields of the run.
 *
 * Bandwidths are in GB/s with 1 GB = 1e9 bytes, from CUDA events, the median of `--iterations`
 * after `--warmup`.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "numa_binding.hpp"
#include "support/vector_add.hpp"

/// Three vectors A, B and C in one host range, as the CPU and as the GPU see them.
struct HostVectors {
  char* host = nullptr;    ///< CPU address of A; B and C follow at `stride`.
  CUdeviceptr device = 0;  ///< GPU address of A (what a kernel dereferences).
  std::size_t stride = 0;  ///< Bytes from one vector to the next (page aligned).
  /// CPU address of vector @p index (0 = A, 1 = B, 2 = C).
  float* cpu(int index) const { return reinterpret_cast<float*>(host + index * stride); }
  /// GPU address of vector @p index.
  CUdeviceptr gpu(int index) const { return device + static_cast<CUdeviceptr>(index) * stride; }
};

/// The same work for every host source: what is copied and launched, and how it is timed.
struct Workload {
  CUfunction kernel = nullptr;  ///< `VecAdd_kernel`.
  unsigned int grid = 0;        ///< Blocks per launch (as many as stay resident).
  unsigned int block = 0;       ///< Threads per block.
  CUstream stream = nullptr;    ///< Where the copies and launches go.
  CUdeviceptr scratch = 0;      ///< Device memory the copies go to and come from (one vector).
  std::size_t bytes = 0;        ///< Bytes per vector.
  std::size_t count = 0;        ///< Floats per vector.
  int warmup = 0;               ///< Untimed repetitions first.
  int iterations = 0;           ///< Timed repetitions; the median is reported.
};

/// A Workload for @p bytes per vector, with a grid of resident blocks of @p block threads.
/// @throws memsamples::CudaError.
Workload makeWorkload(CUfunction kernel, CUdevice device, unsigned int block, CUstream stream,
                      CUdeviceptr scratch, std::size_t bytes,
                      const memsamples::CommonOptions& options);

/// Host-to-device and device-to-host copy times and bandwidths.
struct CopyResult {
  memsamples::TimingStats toDevice;  ///< cuMemcpyHtoDAsync of one vector.
  memsamples::TimingStats toHost;    ///< cuMemcpyDtoHAsync of one vector.
  double toDeviceGBps = 0;           ///< One vector / median host-to-device time.
  double toHostGBps = 0;             ///< One vector / median device-to-host time.
};

/// Everything measured on one host source.
struct SourceResult {
  std::string name;                ///< How the source was made, e.g. "cuMemHostAlloc (reference)".
  CopyResult copies;               ///< A to the device and back into C.
  bool copiesVerified = false;     ///< C equals A byte for byte after the copies.
  memsamples::TimingStats kernel;  ///< The zero-copy VecAdd launch.
  double kernelGBps = 0;           ///< 3 x one vector (reads A and B, writes C) / median time.
  memsamples::VectorAddCheck add;  ///< C checked against A + B after the launches.
  /// True when both checks passed.
  bool passed() const { return copiesVerified && add.mismatches == 0; }
};

/**
 * Measures one host source: fills A and B on the CPU, times A -> device and device -> C
 * (then C must equal A), then times VecAdd_kernel computing C = A + B in host memory through
 * @p vectors' device address (zero-copy: every byte crosses the bus) and checks every element.
 * @throws memsamples::CudaError.
 */
SourceResult measureSource(std::string name, const HostVectors& vectors, const Workload& work);

/**
 * The table of every source in GB/s with the ratio to the last one (the cuMemHostAlloc
 * reference) in brackets, and the line "Ratio bound / cuMemHostAlloc" for the first one (the
 * mbind path).
 */
void printComparison(const std::vector<SourceResult>& results, const Workload& work,
                     std::ostream& out);

/// Which nodes the nearest-vs-remote table compares, and how their ranges are bound.
struct NodeComparison {
  memsamples::numa::BindPolicy policy;  ///< The run's policy (`--no-bind` skips the table).
  int target = -1;                      ///< The node the run binds to.
  int nearest = -1;                     ///< The node nearest the GPU (-1 when unknown).
  bool targetFromOption = false;        ///< `--node` chose the target.
  bool numaAvailable = false;           ///< memsamples::numa::numaPolicyCallsAvailable().
  std::size_t stride = 0;               ///< One vector's bytes in a host range.
  memsamples::numa::NodeQueries nodes;  ///< The machine's nodes, GPU memory nodes marked.
};

/**
 * With two or more host nodes with memory (at most 8; GPU memory nodes are not host memory and
 * are left out): for each node, a NumaBoundHostRange of two
 * vectors bound there, first touched, registered (cuMemHostRegister), and its copies timed; a
 * table with the node distance from the target (numa_distance) and the share of pages on the
 * node, then each other node's ratio to the target. Otherwise one line saying why not.
 * @return the rows as JSON objects. @throws memsamples::CudaError, NumaBindError.
 */
memsamples::JsonArray compareNodes(const NodeComparison& nodes, const Workload& work,
                                   const memsamples::numa::WarningSink& warn, std::ostream& out);

/// Prints "PCI bus id ...: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = ..., sysfs ... = ...", the notes,
/// the nearest node and its source, the `--node` target, what libnuma reports, and the GPU
/// memory nodes of @p nodes where there are any.
void printTopology(const char* busId, const memsamples::numa::HostNumaNode& nearest, int target,
                   bool targetFromOption, const memsamples::numa::NodeQueries& nodes,
                   bool numaAvailable, std::ostream& out);

/// The device, the topology and the policy as JSON fields.
void recordTopology(memsamples::JsonObject& json, int ordinal, const std::string& deviceName,
                    const char* busId, const memsamples::numa::HostNumaNode& nearest, int target,
                    const memsamples::numa::BindPolicy& policy);

/// The mbind path's binding, its advice and where its pages were after pinning, as JSON.
memsamples::JsonObject bindingJson(const memsamples::numa::BindOutcome& binding,
                                   const memsamples::numa::PagePlacement& pinned, int target);

/// Prints a line for every failed check; true when every source passed.
bool reportDataChecks(const std::vector<SourceResult>& results, std::ostream& out);

/// The results as JSON fields: the binding, the sizes, one object per source (GB/s and ratios
/// to the reference), the node rows and the warnings.
void recordResults(memsamples::JsonObject& json, const memsamples::JsonObject& binding,
                   bool hostNumaVmmSupported, const Workload& work,
                   const std::vector<SourceResult>& results, const memsamples::JsonArray& nodeRows,
                   const memsamples::JsonArray& warnings);
