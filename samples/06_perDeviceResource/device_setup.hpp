/**
 * @file device_setup.hpp
 * @brief What the vector add needs on one device, as in 01_vectorAddDrv, and the vector add
 *        itself on memory of any resource: the scaffolding under 06_perDeviceResource's lesson.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memory_resource.hpp"
#include "memsamples.hpp"
#include "resource_plan.hpp"
#include "support/vector_add.hpp"

namespace memsamples::resource {

/**
 * What one device needs for the vector add, as in 01_vectorAddDrv: a context of its own
 * (cuCtxCreate), the kernel (cuModuleLoadData, cuModuleGetFunction), a stream, and pinned host
 * copies of A, B and C for the kinds whose memory the CPU cannot touch. cuCtxCreate makes the
 * context current; it is popped at once and pushed (ScopedContext) wherever it is used. What was
 * made in it is released in it, the context itself last.
 */
struct DeviceSetup {
  /// Makes everything but the staging copies. @throws CudaError; what the fatbin lookup throws.
  explicit DeviceSetup(CUdevice handle);
  /// With the context pushed: waits for and destroys the stream, then releases the staging
  /// copies and the module.
  ~DeviceSetup();
  DeviceSetup(const DeviceSetup&) = delete;
  DeviceSetup& operator=(const DeviceSetup&) = delete;
  /// The pinned copy of vector @p index (0: A, 1: B, 2: C).
  float* stagingVector(int index) const {
    return static_cast<float*>(staging.get()) + index * (vectorBytes / sizeof(float));
  }

  CUdevice device;                ///< The device.
  int ordinal;                    ///< Its ordinal.
  OwnedContext context;           ///< Its own context.
  OwnedModule module;             ///< vectorAdd_kernel.fatbin, loaded in it.
  CUfunction kernel = nullptr;    ///< VecAdd_kernel.
  unsigned int grid = 0;          ///< Resident blocks for kBlockSize threads.
  OwnedPinnedHostMemory staging;  ///< A, B and C, one after the other.
  std::uint64_t vectorBytes = 0;  ///< The size of each.
  OwnedStream stream;  ///< A non-blocking stream of the context; declared after what it uses.
  static constexpr int kBlockSize = 256;  ///< Threads per block of VecAdd_kernel.
};

/// Every device set up, and the vectors' size.
struct Devices {
  std::vector<std::unique_ptr<DeviceSetup>> setups;  ///< Device d's, in ordinal order.
  int chosen = 0;              ///< The device the run is about (`--device`, or the fastest).
  std::string chosenName;      ///< Its name.
  std::uint64_t bytes = 0;     ///< Bytes per vector, the same on every device.
  DeviceFreeMemory smallest;   ///< The device whose free memory sized the vectors.
  int count = 0;               ///< The number of devices (of setups).
  ResourceKindList kinds;      ///< The kinds to make (`--resources`, parsed before cuInit).
};

/**
 * Step 1: parses @p resources (a `--resources` value; empty: every kind) before any driver call,
 * cuInit (Common's checkDriverInit() waives a driver older than the toolkit), picks
 * the device (Common's selectDevice()), waives when it has no memory
 * pools (its initial resource could not allocate), sets up every device (cuDeviceGetCount,
 * cuDeviceGet, in ordinal order: step 5 runs on all of them), sizes the vectors to the smallest
 * free memory (every device allocates vectors of the same size) and to host memory (each device
 * stages 3 pinned vectors), allocates the staging copies, and reports the "Device" line.
 * @throws WaivedError; UsageError for a size that does not fit; CudaError.
 */
Devices setUpDevices(const std::optional<long long>& device,
                     const std::optional<std::uint64_t>& requestedBytes,
                     const std::string& resources, Report& report);

/// A, B and C of the vector add, each one allocation of a resource.
struct Vectors {
  ResourceAllocation a;  ///< Input.
  ResourceAllocation b;  ///< Input.
  ResourceAllocation c;  ///< Output.
};

/**
 * The interface at work: fills A and B where the CPU may write them (the memory itself when the
 * resource is host-accessible, else the pinned staging copies and cuMemcpyHtoDAsync), runs
 * C = A + B on the vectors' kernelAddress() (mapped host memory may have its own), reads C back,
 * compares it exactly, and gives A, B and C back so that a failing deallocate is reported.
 * @throws CudaError; what deallocate throws.
 */
VectorAddCheck addAndVerify(const DeviceSetup& setup, Vectors& vectors, std::uint32_t seed);

/// Step 4's scratch buffers: each thread allocates, fills and frees this many of this size.
inline constexpr int kScratchPerThread = 8;
/// The size of one scratch buffer (64 KiB).
inline constexpr std::size_t kScratchBytes = 64 << 10;

/// Step 4's short-lived allocations of thread @p thread: kScratchPerThread buffers of
/// kScratchBytes from @p resource, each filled (by the CPU where the memory is host-accessible,
/// else cuMemsetD8Async on the stream) and freed at once: a stream-ordered free follows the fill
/// in the stream; the other kinds synchronize the stream first. @throws CudaError; what the
/// resource throws.
void useScratch(MemoryResource& resource, const DeviceSetup& setup, int thread);

}  // namespace memsamples::resource
