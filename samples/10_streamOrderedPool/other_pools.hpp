/**
 * @file other_pools.hpp
 * @brief Step 8 of 10_streamOrderedPool: a managed-memory pool and a host-location pool, tried
 *        where the driver has them. Unit tested against a fake driver (a link seam), which can
 *        refuse the device's access to the host pool.
 */
#pragma once

#include <cuda.h>

#include <string>

#include "memsamples.hpp"
#include "streamOrderedPool_measure.hpp"

/**
 * Step 8 for one kind of pool: creates it from @p props and prints (and writes to the JSON
 * under @p name) what the driver answered. A pool at a location other than a device is not the
 * device's to use: the device is given read and write access first (cuMemPoolSetAccess), and
 * only once that is granted is the pool used from the GPU. A refused grant is reported and the
 * pool destroyed unused, since a device writing memory it may not access is a sticky fault.
 * Where the pool is used, 1 MiB of it is allocated on stream 1, written by the device, read by
 * the CPU (checked in run.checks), freed, and the pool destroyed.
 * @throws memsamples::CudaError after the pool was made and granted.
 */
void tryPool(PoolRun& run, const CUmemPoolProps& props, const std::string& name,
             memsamples::Report& report);

/**
 * Step 8: the managed default pool asked for (cuMemGetDefaultMemPool), a managed-memory pool,
 * and a host-location pool where HOST_MEMORY_POOLS_SUPPORTED says the device has them, each
 * through tryPool(). @throws memsamples::CudaError after a pool was made and granted.
 */
void probeOtherPools(PoolRun& run, memsamples::Report& report);
