/**
 * @file numa_resource.hpp
 * @brief The NUMA-bound host memory resource: 04's NumaBoundHostRange (anonymous pages bound to
 *        the host NUMA node nearest the GPU before their first touch), registered for the device
 *        with cuMemHostRegister.
 *
 * This header names no libnuma type, so the sample compiles the same way with or without libnuma:
 * CMake builds numa_resource.cpp (the real resource) when libnuma and 04's binding library are
 * available, and numa_resource_unavailable.cpp (which only says why not) otherwise.
 */
#pragma once

#include <cuda.h>

#include <functional>
#include <memory>
#include <string>

#include "memory_resource.hpp"

namespace memsamples::resource {

/// What makeNumaHostResource() built, or why it could not.
struct NumaResourceResult {
  std::unique_ptr<MemoryResource> resource;  ///< Null when the resource is not available.
  std::string description;        ///< The node and where it came from, e.g. "node 0 (sysfs)".
  std::string unavailableReason;  ///< Why resource is null.
};

/**
 * Makes the NUMA-bound host resource of @p device.
 *
 * The node is 04's findNearestHostNode() of CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID and the device's
 * sysfs `numa_node`; the binding is soft (MPOL_PREFERRED | MPOL_F_STATIC_NODES): when it cannot
 * be done the memory is used unbound and one warning per distinct cause goes to @p warn. Each
 * allocation is mmap + mbind + madvise, then cuMemHostRegister(DEVICEMAP) in @p context, which
 * pins the pages (and so places them under the binding); the registration's device address
 * (cuMemHostGetDevicePointer) is read then and is what kernelAddress() returns.
 * deallocate synchronizes the stream, unregisters and unmaps, in @p context.
 *
 * @param context the context that registers the memory; its device is the GPU whose nearest node
 *        the memory is bound to. Must outlive the resource.
 * @param warn receives warnings, from whichever thread allocates, one call at a time; it must
 *        outlive the resource. May be empty.
 * @throws CudaError from the context, attribute and bus-id queries.
 */
NumaResourceResult makeNumaHostResource(CUcontext context,
                                        std::function<void(const std::string&)> warn);

}  // namespace memsamples::resource
