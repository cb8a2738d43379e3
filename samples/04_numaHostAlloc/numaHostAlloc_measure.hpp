/**
 * @file numaHostAlloc_measure.hpp
 * @brief What 04_numaHostAlloc probes, measures and reports, one call each: the topology (the
 *        host node nearest the GPU), the workload (kernel, device vector, stream, sizes), each host
 *        source (copies both ways and a zero-copy VecAdd, checked), and the end of the run (the
 *        table against cuMemHostAlloc, nearest vs remote nodes, the data checks, the JSON fields).
 *
 * Bandwidths are in GB/s with 1 GB = 1e9 bytes, from CUDA events, the median of `--iterations`
 * after `--warmup`.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <iosfwd>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "numa_binding.hpp"
#include "support/vector_add.hpp"

/// The device and the host NUMA nodes, as the run binds and reports them.
struct Topology {
  int ordinal = 0;                            ///< The device's ordinal.
  memsamples::NodeQueries nodes;              ///< The host nodes; GPU memory nodes marked.
  memsamples::numa::HostNumaNode nearest;     ///< The node nearest the GPU, and from where.
  int target = -1;                            ///< The node to bind to: `--node`, or the nearest.
  bool targetFromOption = false;              ///< `--node` chose the target.
  memsamples::numa::BindPolicy policy;        ///< `--no-bind`, `--strict`.
  bool numaAvailable = false;                 ///< numaPolicyCallsAvailable().
  bool hostNumaVmm = false;                   ///< HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED.
  memsamples::numa::HostNumaVmmNode vmmNode;  ///< The node for cuMemCreate(HOST_NUMA).
};

/// Prints the device, its PCI bus id, both answers for its nearest host node (the driver's
/// CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID and the kernel's sysfs numa_node), the notes and libnuma's
/// view, records them as JSON fields, and returns them: @p node (>= 0) overrides the target.
/// Every device's CU_DEVICE_ATTRIBUTE_NUMA_ID is excluded from the host nodes where it is GPU
/// memory (CU_DEVICE_NUMA_CONFIG_NUMA_NODE). Needs no context. @throws memsamples::CudaError.
Topology probeTopology(CUdevice device, long long node, const memsamples::numa::BindPolicy& policy,
                       memsamples::Report& report);

/// The same work for every host source, and what it runs on (owned; needs the context).
struct Workload {
  memsamples::OwnedModule module;         ///< `vectorAdd_kernel.fatbin`.
  CUfunction kernel = nullptr;            ///< `VecAdd_kernel`.
  memsamples::OwnedDeviceMemory scratch;  ///< One vector: where the copies go and come from.
  memsamples::OwnedStream stream;         ///< Where the copies and launches go; destroyed first.
  std::size_t bytes = 0;                  ///< Bytes per vector.
  std::size_t count = 0;                  ///< Floats per vector.
  std::size_t stride = 0;                 ///< Bytes from one vector to the next in a host range.
  std::size_t hostBytes = 0;              ///< A host source: A, B and C.
  unsigned int grid = 0;                  ///< Blocks per launch (as many as stay resident).
  unsigned int block = 0;                 ///< Threads per block.
  int warmup = 0;                         ///< Untimed repetitions first.
  int iterations = 0;                     ///< Timed repetitions; the median is reported.
};

/// Loads the kernel, sizes one vector to @p hostVectorBytes and the device's free memory
/// (`--size` @p requested checked against both), prints the sizes, allocates the device vector
/// and creates the stream. @throws memsamples::CudaError, memsamples::UsageError.
Workload prepareWorkload(CUdevice device, const std::optional<std::uint64_t>& requested,
                         std::uint64_t hostVectorBytes, const memsamples::CommonOptions& options,
                         std::ostream& out);

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

/// Host-to-device and device-to-host copy times and bandwidths.
struct CopyResult {
  memsamples::TimingStats toDevice;  ///< cuMemcpyHtoDAsync of one vector.
  memsamples::TimingStats toHost;    ///< cuMemcpyDtoHAsync of one vector.
  double toDeviceGBps = 0;           ///< One vector / median host-to-device time.
  double toHostGBps = 0;             ///< One vector / median device-to-host time.
};

/// Everything measured on one host source.
struct SourceResult {
  std::string name;                     ///< How the source was made.
  CopyResult copies;                    ///< A to the device and back into C.
  bool copiesVerified = false;          ///< C equals A byte for byte after the copies.
  memsamples::TimingStats kernel;       ///< The zero-copy VecAdd launch.
  double kernelGBps = 0;                ///< 3 x one vector / median time.
  memsamples::VectorAddCheck add;       ///< C checked against A + B after the launches.
  memsamples::PagePlacement placement;  ///< Where the source's pages are, afterwards.
  /// True when both checks passed.
  bool passed() const { return copiesVerified && add.mismatches == 0; }
};

/// Fills A and B, times A -> device -> C (then C must equal A), times VecAdd_kernel computing
/// C = A + B in host memory through @p vectors' device address (zero-copy: every byte crosses
/// the bus), checks every element, and asks where the pages are. When @p placementLabel is not
/// empty, prints that placement on `out` as "  <label>: <summary>". @throws memsamples::CudaError.
SourceResult measureSource(std::string name, const HostVectors& vectors, const Workload& work,
                           std::ostream& out, const std::string& placementLabel);

/**
 * The end of the run: the table of every source against the last (cuMemHostAlloc); with two or
 * more host nodes with memory (at most 8), a NumaBoundHostRange bound to each in turn,
 * registered, its copies timed, and each node's ratio to the target; a line per failed data
 * check; the JSON fields. @return true when every source's data was right.
 * @throws memsamples::CudaError, memsamples::numa::NumaBindError.
 */
bool finishRun(const std::vector<SourceResult>& results, const Topology& topology,
               const Workload& work, const memsamples::JsonObject& binding,
               const memsamples::numa::WarningSink& warn, const memsamples::JsonArray& warnings,
               memsamples::Report& report);
