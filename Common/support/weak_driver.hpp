/**
 * @file weak_driver.hpp
 * @brief Weak references to the libcuda entry points the samples call, so that a driver older
 *        than the toolkit is waived by the sample (wholly, or where it needs an entry point the
 *        driver lacks) instead of refused by the loader.
 *
 * cuda.h binds a program to the newest version of each entry point (cuCtxCreate is
 * cuCtxCreate_v4 with CUDA 13, cuEventElapsedTime is cuEventElapsedTime_v2) and the samples call
 * new ones (cuMemPrefetchBatchAsync). An older libcuda.so.1 lacks them, and when symbols are bound
 * at load time (`-z now`, Ubuntu's default, or LD_BIND_NOW) a strong reference to a missing one
 * stops the process before main, with no verdict. A weak reference instead becomes a null
 * address, which is harmless as long as it is never called: checkDriverInit() compares
 * cuDriverGetVersion with CUDA_VERSION before any of them is, and waives a driver of an older
 * major version. One of the toolkit's major version but an older minor one runs the samples
 * (NVIDIA's minor version compatibility) with the entry points it has. Every entry point the
 * samples call is in CUDA 13.0, so a 13.0 build finds them all in any CUDA 13 driver; a build
 * with a newer 13.x toolkit may call one an older 13.x driver lacks. 03 and 09 ask for their
 * batch entry points first with requireEntryPoint() (memsamples.hpp), which waives where the weak
 * reference is null; the other samples do not ask. With a driver as new as the toolkit every
 * weak reference binds exactly as a strong one would (an LD_PRELOAD shim that redefines one still
 * comes first).
 *
 * **How it is applied: by the build, to every file, not by an `#include`.** The linker makes an
 * imported symbol weak only when *every* object file that refers to it declared it weak, so one
 * translation unit that calls cuMemAlloc with cuda.h's plain declaration makes the import strong
 * again. Every lesson, helper and measure file calls driver entry points, and so do the owners
 * inlined from memsamples.hpp (OwnedDeviceMemory names cuMemFree). Rather than asking each of
 * those files to include this one (and a learner to read 94 declarations on the first include),
 * cmake/MemorySamples.cmake compiles every file of every target that links memsamples::core or
 * memsamples::common with `-include <Common>/support/weak_driver.hpp` (the interface target
 * memsamples_weak_driver): this header comes first in each of them, before any other include.
 * Code built outside those targets (a program of your own using memsamples.hpp) may include it
 * itself, first, for the same effect.
 *
 * cuInit, cuDriverGetVersion, cuGetErrorName and cuGetErrorString stay strong: every driver has
 * them, and one strong reference keeps libcuda.so.1 a needed library when linking with
 * `--as-needed` (the linker ignores weak references when it decides that).
 *
 * Every entry point a sample or Common calls must be listed here, by the name the code uses (the
 * macro expands cuda.h's renaming, so the versioned symbol is the one made weak). The oldDriver.*
 * tests (a fake libcuda.so.1 of CUDA 12.4, LD_BIND_NOW=1) check each sample binary and fail
 * naming any strong import that is not.
 */
#pragma once

#include <cuda.h>

/// Declares @p entryPoint weak. A function-like macro expands its argument first:
/// MEMSAMPLES_WEAK(cuCtxCreate) declares cuCtxCreate_v4, the symbol the code really imports.
#define MEMSAMPLES_WEAK(entryPoint) \
  extern "C" __attribute__((weak)) decltype(entryPoint) entryPoint;

// Devices and contexts.
MEMSAMPLES_WEAK(cuDeviceGet)
MEMSAMPLES_WEAK(cuDeviceGetCount)
MEMSAMPLES_WEAK(cuDeviceGetName)
MEMSAMPLES_WEAK(cuDeviceGetAttribute)
MEMSAMPLES_WEAK(cuDeviceGetPCIBusId)
MEMSAMPLES_WEAK(cuDeviceTotalMem)
MEMSAMPLES_WEAK(cuDeviceCanAccessPeer)
MEMSAMPLES_WEAK(cuDeviceGetP2PAttribute)
MEMSAMPLES_WEAK(cuDeviceGetHostAtomicCapabilities)  // 00_memoryQueryDrv: CUDA 13.0
MEMSAMPLES_WEAK(cuDeviceGetP2PAtomicCapabilities)   // 00_memoryQueryDrv: CUDA 13.0
MEMSAMPLES_WEAK(cuDeviceGetDefaultMemPool)
MEMSAMPLES_WEAK(cuDevicePrimaryCtxRetain)
MEMSAMPLES_WEAK(cuDevicePrimaryCtxRelease)
MEMSAMPLES_WEAK(cuCtxCreate)
MEMSAMPLES_WEAK(cuCtxDestroy)
MEMSAMPLES_WEAK(cuCtxGetCurrent)
MEMSAMPLES_WEAK(cuCtxSetCurrent)
MEMSAMPLES_WEAK(cuCtxPushCurrent)
MEMSAMPLES_WEAK(cuCtxPopCurrent)
MEMSAMPLES_WEAK(cuCtxGetDevice)
MEMSAMPLES_WEAK(cuCtxGetDevice_v2)
MEMSAMPLES_WEAK(cuCtxSynchronize)
MEMSAMPLES_WEAK(cuCtxEnablePeerAccess)
MEMSAMPLES_WEAK(cuCtxDisablePeerAccess)

// Modules and launches.
MEMSAMPLES_WEAK(cuModuleLoadData)
MEMSAMPLES_WEAK(cuModuleUnload)
MEMSAMPLES_WEAK(cuModuleGetFunction)
MEMSAMPLES_WEAK(cuLaunchKernel)
MEMSAMPLES_WEAK(cuLaunchCooperativeKernel)
MEMSAMPLES_WEAK(cuOccupancyMaxActiveBlocksPerMultiprocessor)

// Streams and events.
MEMSAMPLES_WEAK(cuStreamCreate)
MEMSAMPLES_WEAK(cuStreamDestroy)
MEMSAMPLES_WEAK(cuStreamSynchronize)
MEMSAMPLES_WEAK(cuStreamWaitEvent)
MEMSAMPLES_WEAK(cuLaunchHostFunc)
MEMSAMPLES_WEAK(cuEventCreate)
MEMSAMPLES_WEAK(cuEventDestroy)
MEMSAMPLES_WEAK(cuEventRecord)
MEMSAMPLES_WEAK(cuEventSynchronize)
MEMSAMPLES_WEAK(cuEventElapsedTime)

// Device and host memory, copies.
MEMSAMPLES_WEAK(cuMemGetInfo)
MEMSAMPLES_WEAK(cuMemAlloc)
MEMSAMPLES_WEAK(cuMemFree)
MEMSAMPLES_WEAK(cuMemHostAlloc)
MEMSAMPLES_WEAK(cuMemFreeHost)
MEMSAMPLES_WEAK(cuMemHostGetDevicePointer)
MEMSAMPLES_WEAK(cuMemHostRegister)
MEMSAMPLES_WEAK(cuMemHostUnregister)
MEMSAMPLES_WEAK(cuMemcpyAsync)
MEMSAMPLES_WEAK(cuMemcpy)      // 01_vectorAddDrv's synchronous twins
MEMSAMPLES_WEAK(cuMemcpyHtoD)  // 01_vectorAddDrv
MEMSAMPLES_WEAK(cuMemcpyDtoD)  // 01_vectorAddDrv
MEMSAMPLES_WEAK(cuMemcpyHtoDAsync)
MEMSAMPLES_WEAK(cuMemcpyDtoH)
MEMSAMPLES_WEAK(cuMemcpyDtoHAsync)
MEMSAMPLES_WEAK(cuMemcpyDtoDAsync)
MEMSAMPLES_WEAK(cuMemcpyPeerAsync)
MEMSAMPLES_WEAK(cuMemcpyPeer)         // 05_p2pMemMap's synchronous and 3D peer copies
MEMSAMPLES_WEAK(cuMemcpy3DPeer)       // 05_p2pMemMap
MEMSAMPLES_WEAK(cuMemcpy3DPeerAsync)  // 05_p2pMemMap
MEMSAMPLES_WEAK(cuMemsetD8Async)
MEMSAMPLES_WEAK(cuMemsetD32Async)
// 09_memcpyBatch: batches, pitched memory, 2D/3D copies, every memset form.
MEMSAMPLES_WEAK(cuMemcpyBatchAsync)
MEMSAMPLES_WEAK(cuMemcpy3DBatchAsync)
MEMSAMPLES_WEAK(cuMemAllocPitch)
MEMSAMPLES_WEAK(cuMemcpy2DAsync)
MEMSAMPLES_WEAK(cuMemcpy3DAsync)
MEMSAMPLES_WEAK(cuMemcpy2D)           // 09_memcpyBatch's synchronous twins
MEMSAMPLES_WEAK(cuMemcpy2DUnaligned)  // 09_memcpyBatch
MEMSAMPLES_WEAK(cuMemcpy3D)           // 09_memcpyBatch
MEMSAMPLES_WEAK(cuMemsetD8)
MEMSAMPLES_WEAK(cuMemsetD16)
MEMSAMPLES_WEAK(cuMemsetD32)
MEMSAMPLES_WEAK(cuMemsetD16Async)
MEMSAMPLES_WEAK(cuMemsetD2D8)
MEMSAMPLES_WEAK(cuMemsetD2D16)
MEMSAMPLES_WEAK(cuMemsetD2D32)
MEMSAMPLES_WEAK(cuMemsetD2D8Async)
MEMSAMPLES_WEAK(cuMemsetD2D16Async)
MEMSAMPLES_WEAK(cuMemsetD2D32Async)
MEMSAMPLES_WEAK(cuPointerGetAttributes)
MEMSAMPLES_WEAK(cuMemGetAddressRange)

// Managed memory.
MEMSAMPLES_WEAK(cuMemAllocManaged)
MEMSAMPLES_WEAK(cuMemAdvise)
MEMSAMPLES_WEAK(cuMemPrefetchAsync)
MEMSAMPLES_WEAK(cuMemPrefetchBatchAsync)
MEMSAMPLES_WEAK(cuMemDiscardBatchAsync)
MEMSAMPLES_WEAK(cuMemDiscardAndPrefetchBatchAsync)  // 03_managedAdvisePrefetch: CUDA 13.0
MEMSAMPLES_WEAK(cuMemRangeGetAttribute)
MEMSAMPLES_WEAK(cuMemRangeGetAttributes)

// Virtual memory management.
MEMSAMPLES_WEAK(cuMemGetAllocationGranularity)
MEMSAMPLES_WEAK(cuMemAddressReserve)
MEMSAMPLES_WEAK(cuMemAddressFree)
MEMSAMPLES_WEAK(cuMemCreate)
MEMSAMPLES_WEAK(cuMemRelease)
MEMSAMPLES_WEAK(cuMemMap)
MEMSAMPLES_WEAK(cuMemUnmap)
MEMSAMPLES_WEAK(cuMemSetAccess)
MEMSAMPLES_WEAK(cuMemGetAccess)

// Sharing between processes (07_memMapIPC).
MEMSAMPLES_WEAK(cuMemExportToShareableHandle)
MEMSAMPLES_WEAK(cuMemImportFromShareableHandle)
MEMSAMPLES_WEAK(cuIpcGetMemHandle)
MEMSAMPLES_WEAK(cuIpcOpenMemHandle)
MEMSAMPLES_WEAK(cuIpcCloseMemHandle)
MEMSAMPLES_WEAK(cuIpcGetEventHandle)
MEMSAMPLES_WEAK(cuIpcOpenEventHandle)
MEMSAMPLES_WEAK(cuMemPoolCreate)
MEMSAMPLES_WEAK(cuMemPoolDestroy)
MEMSAMPLES_WEAK(cuMemPoolSetAccess)
MEMSAMPLES_WEAK(cuMemPoolGetAccess)
MEMSAMPLES_WEAK(cuMemPoolExportToShareableHandle)
MEMSAMPLES_WEAK(cuMemPoolImportFromShareableHandle)
MEMSAMPLES_WEAK(cuMemPoolExportPointer)
MEMSAMPLES_WEAK(cuMemPoolImportPointer)

// Multicast objects (08_multicastReduce).
MEMSAMPLES_WEAK(cuMulticastGetGranularity)
MEMSAMPLES_WEAK(cuMulticastCreate)
MEMSAMPLES_WEAK(cuMulticastAddDevice)
MEMSAMPLES_WEAK(cuMulticastBindMem)
MEMSAMPLES_WEAK(cuMulticastBindAddr)
MEMSAMPLES_WEAK(cuMulticastUnbind)

// Stream-ordered allocation and pools.
MEMSAMPLES_WEAK(cuMemAllocFromPoolAsync)
MEMSAMPLES_WEAK(cuMemFreeAsync)
MEMSAMPLES_WEAK(cuMemPoolGetAttribute)
MEMSAMPLES_WEAK(cuMemPoolSetAttribute)
MEMSAMPLES_WEAK(cuMemPoolTrimTo)
MEMSAMPLES_WEAK(cuMemAllocAsync)
MEMSAMPLES_WEAK(cuMemGetDefaultMemPool)
MEMSAMPLES_WEAK(cuMemGetMemPool)
MEMSAMPLES_WEAK(cuMemSetMemPool)
MEMSAMPLES_WEAK(cuDeviceRegisterAsyncNotification)    // 10_streamOrderedPool: over budget
MEMSAMPLES_WEAK(cuDeviceUnregisterAsyncNotification)  // 10_streamOrderedPool

// Pointer and handle questions (11_pointerQuery).
MEMSAMPLES_WEAK(cuMemAllocHost)
MEMSAMPLES_WEAK(cuMemHostGetFlags)
MEMSAMPLES_WEAK(cuPointerGetAttribute)
MEMSAMPLES_WEAK(cuPointerSetAttribute)
MEMSAMPLES_WEAK(cuMemRetainAllocationHandle)
MEMSAMPLES_WEAK(cuMemGetAllocationPropertiesFromHandle)
MEMSAMPLES_WEAK(cuMemGetHandleForAddressRange)
MEMSAMPLES_WEAK(cuDeviceGetByPCIBusId)

#undef MEMSAMPLES_WEAK
