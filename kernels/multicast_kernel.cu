/**
 * @file multicast_kernel.cu
 * @brief Kernels of 08_multicastReduce: a broadcast and an all-reduce through a multicast
 *        address (multimem.st, multimem.ld_reduce), the same all-reduce with plain peer loads,
 *        and the local add of the copy-engine path.
 *
 * A multicast address stands for the same offset in every GPU's copy of a buffer. Three PTX
 * instructions use one (PTX ISA 8.1 and newer, sm_90 and newer):
 * - `multimem.st [mc], v`: the store reaches every copy;
 * - `multimem.ld_reduce.add [mc]`: one load returns the sum of every copy's value, computed
 *   in the NVLink switch (NVLS) rather than by the SMs;
 * - `multimem.red.add [mc], v`: adds v to every copy (used here for the barrier's counters).
 * A multicast address must be a `.global` one of a multicast mapping; any other address is
 * undefined behaviour. The kernels use the widest vector form of .f32, `.v4.f32` (16 bytes per
 * instruction), so the buffers are handled as float4 and every share is a whole number of float4.
 *
 * **Memory ordering.** The unicast mapping of a GPU's copy and the multicast mapping are two
 * virtual addresses of the same memory: PTX treats accesses through them as accesses through
 * different *proxies*, and orders one thread's accesses through the two only across a
 * `fence.proxy.alias` (or a kernel boundary). Between kernels running at the same time on
 * different GPUs, teamBarrier() below announces "this block is here" with a release reduction
 * through the multicast address (every GPU's counter goes up by one), fences the alias, and
 * waits with acquire loads of its own unicast copy of the counter until every GPU's block has
 * announced itself. The PTX memory model does not itself state that a release through one proxy
 * on one GPU synchronizes with an acquire through the other proxy on another GPU: the barrier
 * follows the pattern NVIDIA documents for multicast objects (CUDA Programming Guide, "Use
 * Multicast Mappings"), and the sample's README says why that is believed safe.
 *
 * The kernels are loaded at run time from multicast_kernel.fatbin (cuModuleLoadData), so every
 * entry point is `extern "C"`. The fatbin is built for sm_90 and newer only (see the sample's
 * CMakeLists.txt); should it ever be compiled for an older GPU, the multimem kernels trap there
 * instead of failing to compile, and the sample waives such GPUs before it loads the module.
 */
#include <cstdint>

namespace {

/// The largest team Peer_allreduce_kernel takes; the host refuses a larger one.
constexpr int kMaxTeam = 8;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

/// How long a barrier waits for the other GPUs before it gives up (nanoseconds): a GPU whose
/// kernel never arrives must fail the launch (trap), not hang both GPUs.
constexpr unsigned long long kBarrierTimeoutNs = 10ull * 1000 * 1000 * 1000;

/// The GPU's global timer, in nanoseconds.
__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

/// The sum over every GPU's copy of the 16 bytes at multicast address @p mc.
__device__ __forceinline__ float4 multimemLoadReduceAdd(const float4* mc) {
  float4 v;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(mc)
               : "memory");
  return v;
}

/// Stores @p v at multicast address @p mc: every GPU's copy receives it.
__device__ __forceinline__ void multimemStore(float4* mc, float4 v) {
  asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};"
               :
               : "l"(mc), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}

/**
 * A barrier of one block with the block of the same index on every other GPU of the team.
 *
 * Each barrier adds 1 to the block's counter in every copy (one multimem.red from each GPU), so
 * after the k-th barrier every copy of the counter holds teamSize x k: @p target. The counters
 * only grow, and the host numbers the barriers, so nothing is reset between launches.
 * 1. `__syncthreads()`: every thread of the block has done its accesses before thread 0 speaks
 *    for the block (the barrier makes them part of what thread 0's release publishes).
 * 2. `multimem.red.release.sys`: a release at system scope, then +1 on every GPU's counter.
 * 3. `fence.proxy.alias`: the reduction went through the multicast address, the waiting below
 *    reads the same memory through the unicast one: this fence orders this thread's accesses
 *    through the two proxies.
 * 4. `ld.acquire.sys` of the local copy until it reaches @p target: every GPU has released, and
 *    what they wrote before is taken to be visible here, as NVIDIA's documented multicast barrier
 *    takes it (see the file comment).
 * 5. A second `fence.proxy.alias`: the acquire loads went through the unicast address, the
 *    block's next accesses go through the multicast one; this fence orders them.
 * 6. `__syncthreads()`: the other threads wait for thread 0, and inherit its acquire and its
 *    fence (the fence lies on the path from the other GPUs' writes to their accesses, which is
 *    where the PTX model asks for one), so they need no proxy fence of their own.
 */
// [barrier]
__device__ void teamBarrier(unsigned int* counterMc, const unsigned int* counterUc,
                            unsigned int target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("multimem.red.release.sys.global.add.u32 [%0], 1;" : : "l"(counterMc) : "memory");
    asm volatile("fence.proxy.alias;" : : : "memory");
    const unsigned long long start = globalTimerNs();
    unsigned int seen = 0;
    for (;;) {
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(seen) : "l"(counterUc) : "memory");
      if (static_cast<int>(seen - target) >= 0)  // wrap-around safe "seen >= target"
        break;
      if (globalTimerNs() - start > kBarrierTimeoutNs)
        __trap();  // another GPU never arrived: fail the launch rather than hang
    }
    asm volatile("fence.proxy.alias;" : : : "memory");
  }
  __syncthreads();
}
// [barrier]

#endif  // __CUDA_ARCH__ >= 900

}  // namespace

/**
 * Broadcast: one GPU writes, every copy changes. Stores @p vectors float4 of @p src (this GPU's
 * own memory) at the multicast address @p mc. Grid-stride; launch on one GPU of the team.
 */
extern "C" __global__ void Multimem_broadcast_kernel(float4* mc, const float4* __restrict__ src,
                                                     unsigned long long vectors) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < vectors; i += stride)
    multimemStore(mc + i, src[i]);
#else
  __trap();
#endif
}

/**
 * All-reduce of this GPU's share, in place: every copy's float4 at [first, first + count) is
 * replaced by the sum over all copies. Launched on every GPU of the team with the same grid,
 * each with its own share, so that together they cover the buffer.
 *
 * @param mc the buffer's multicast address.
 * @param first, count this GPU's share, in float4.
 * @param countersMc, countersUc the barrier counters (one per block) through the multicast and
 *        through this GPU's unicast address.
 * @param teamSize the number of GPUs.
 * @param earlierRuns how many all-reduces ran before this one on these counters (each has two
 *        barriers), so that the targets are teamSize x (2 earlierRuns + 1) and x (... + 2).
 *
 * The first barrier: each GPU's stream finished its earlier work (what wrote its inputs) before
 * its kernel started, and the barrier waits until every GPU's kernel has started, so no GPU sums
 * a copy that another GPU's stream is still writing. That rests on stream order and on the same
 * hand-off between GPUs as every barrier here (see the file comment). In this sample it is a
 * second guard: the host waits for every upload and every zeroing of the data
 * (cuStreamSynchronize in Team::uploadInputs() and zeroData()) before it launches, and the timed
 * repetitions are chained with events. The second barrier: every GPU has stored its share to
 * every copy, so when this kernel ends here, this GPU's copy is complete.
 * Every block of the grid must be resident at once (block b waits for block b of the other GPUs):
 * the host launches it with cuLaunchCooperativeKernel.
 */
// [all-reduce-kernel]
extern "C" __global__ void Multimem_allreduce_kernel(
    float4* mc, unsigned long long first, unsigned long long count, unsigned int* countersMc,
    const unsigned int* countersUc, unsigned int teamSize, unsigned int earlierRuns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned int* counterMc = countersMc + blockIdx.x;
  const unsigned int* counterUc = countersUc + blockIdx.x;
  teamBarrier(counterMc, counterUc, teamSize * (2 * earlierRuns + 1));
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           first + static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < first + count; i += stride)
    multimemStore(mc + i, multimemLoadReduceAdd(mc + i));
  teamBarrier(counterMc, counterUc, teamSize * (2 * earlierRuns + 2));
#else
  __trap();
#endif
}
// [all-reduce-kernel]

/// Every GPU's unicast address of its copy, as this GPU reaches them (its own and its peers').
struct PeerCopies {
  float4* copy[kMaxTeam];  ///< copy[g]: GPU g's copy, mapped and accessible here.
};

/**
 * The same all-reduce with plain loads and stores over NVLink: for each float4 of this GPU's
 * share, read it from every copy (peer loads), add them in team order, and write the sum to every
 * copy (peer stores). No switch arithmetic: the SMs of each GPU do it. The host orders it against
 * the other GPUs' work with events (no GPU writes another GPU's share).
 */
extern "C" __global__ void Peer_allreduce_kernel(PeerCopies copies, unsigned int teamSize,
                                                 unsigned long long first,
                                                 unsigned long long count) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           first + static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < first + count; i += stride) {
    float4 sum = copies.copy[0][i];
    for (unsigned int g = 1; g < teamSize && g < kMaxTeam; ++g) {
      const float4 v = copies.copy[g][i];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    for (unsigned int g = 0; g < teamSize && g < kMaxTeam; ++g)
      copies.copy[g][i] = sum;
  }
}

/**
 * The local half of the copy-engine path: dst[i] += parts[p x count + i] for every part p, i in
 * [0, count) float4. The parts are the other GPUs' values of this share, copied here with
 * cuMemcpyPeerAsync.
 */
extern "C" __global__ void Add_parts_kernel(float4* dst, const float4* __restrict__ parts,
                                            unsigned int partCount, unsigned long long count) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    float4 sum = dst[i];
    for (unsigned int p = 0; p < partCount; ++p) {
      const float4 v = parts[p * count + i];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    dst[i] = sum;
  }
}
