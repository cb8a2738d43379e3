/* A made-up cuda.h for the docs.entryPoints fixture tests: the six memory groups, one entry point
   every lesson calls, one no lesson calls and no reason explains, and one left aside (arrays). */
#define CUDA_VERSION 13000
/**
 * \defgroup CUDA_MEM Memory Management
 */
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult CUDAAPI cuFakeNewCall(void *p);
CUresult CUDAAPI cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray);
/** @} */ /* END CUDA_MEM */
/**
 * \defgroup CUDA_VA Virtual Memory Management
 */
/** @} */ /* END CUDA_VA */
/**
 * \defgroup CUDA_MALLOC_ASYNC Stream Ordered Memory Allocator
 */
/** @} */ /* END CUDA_MALLOC_ASYNC */
/**
 * \defgroup CUDA_MULTICAST Multicast Object Management
 */
/** @} */ /* END CUDA_MULTICAST */
/**
 * \defgroup CUDA_UNIFIED Unified Addressing
 */
/** @} */ /* END CUDA_UNIFIED */
/**
 * \defgroup CUDA_PEER_ACCESS Peer Context Memory Access
 */
/** @} */ /* END CUDA_PEER_ACCESS */
