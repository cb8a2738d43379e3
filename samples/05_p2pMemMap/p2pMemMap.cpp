/**
 * @file p2pMemMap.cpp
 * @brief One GPU's memory mapped into another, two ways side by side: VMM memory opened to the
 *        peer with cuMemSetAccess, and cuMemAlloc memory reached through cuCtxEnablePeerAccess;
 *        a kernel on one device working in the other's memory; copy engines vs SMs over the
 *        link. `--loopback` runs all of it on one GPU.
 *
 * A GPU touches another GPU's memory once that memory is mapped into its page tables, by an
 * explicit call per kind of memory. Read 01_vectorAddDrv and 02_vectorAddMMAP first. A **pair**
 * `A:B` is ordered: the memory lives on the **owner** A and is used by the **accessor** B. An
 * **endpoint** is a device's primary context, its kernels and a stream (two on one device with
 * `--loopback`).
 *
 * 1. **cuInit**, **cuDeviceGetCount**: a `--device` or `--pairs` naming a missing device is a
 *    usage error (exit 1), before any output and before any waiver.
 * 2. **cuDeviceGet**, the VMM attribute (**cuDeviceGetAttribute**), and per ordered pair
 *    **cuDeviceCanAccessPeer**(accessor, owner).
 * 3. The pairs (p2p_logic.hpp); fewer than two GPUs, or no pair with access: WAIVED.
 * 4. Per endpoint **cuModuleLoadData**, **cuModuleGetFunction**, **cuStreamCreate** in the
 *    device's primary context; **cuMemGetInfo**; pinned inputs (**cuMemHostAlloc**, PORTABLE).
 * 5. The reference: the kernel on three **cuMemAlloc** buffers of the accessor's own memory.
 * 6. **VMM path**, every pair: **cuMemAddressReserve**, **cuMemCreate** on the owner,
 *    **cuMemMap**, **cuMemRelease**, one **cuMemSetAccess** for {owner, accessor}: the whole
 *    peer setup; **cuMemGetAccess** reads it back. The owner writes the inputs
 *    (**cuMemcpyHtoDAsync**), the accessor's kernel (**cuLaunchKernel**) adds in the owner's
 *    memory, timed and checked.
 * 7. **Classic path**, every pair: cuMemAlloc in the owner's context, then, with the accessor's
 *    context current, **cuCtxEnablePeerAccess**(owner's context), which opens every allocation
 *    of that context. Same kernel, same check; the access stays for step 8.
 * 8. Owner to accessor by copy engine (**cuMemcpyPeerAsync**) and by SMs (Copy_kernel), one way
 *    and both at once, timed and counted as nvbandwidth does (p2pMemMap_measure.cpp).
 * 9. **cuCtxSynchronize**, **cuCtxDisablePeerAccess**; the owners release the rest.
 */
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "p2pMemMap_measure.hpp"
#include "p2p_logic.hpp"
#include "peer_context.hpp"

namespace ms = memsamples;
namespace p2p = memsamples::p2p;

namespace {

constexpr std::uint64_t kDefaultBytes = 512ull << 20;  // per buffer: nvbandwidth's default
constexpr unsigned int kBlockSize = 256;               // threads per block, both kernels

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  std::string pairs;
  bool loopback = false;
};

// [kernel-on-peer-memory]
// The owner writes A and B; the accessor's kernel reads A and B and writes C, all three in the
// owner's memory, through pointers that only a mapping in the accessor's page tables makes valid.
p2p::PathResult addOnAccessor(p2p::Run& run, const p2p::Endpoint& owner,
                              const p2p::Endpoint& accessor, CUdeviceptr a, CUdeviceptr b,
                              CUdeviceptr c) {
  const ms::ScopedContext onOwner(owner.ctx());
  ms::check(cuMemcpyHtoDAsync(a, run.hostA, run.bytes, owner.stream.get()), "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b, run.hostB, run.bytes, owner.stream.get()), "cuMemcpyHtoDAsync");
  // The kernel runs on the accessor's stream, which knows nothing of the owner's.
  ms::check(cuStreamSynchronize(owner.stream.get()), "cuStreamSynchronize");
  unsigned long long n = run.count;  // exactly the kernel's parameter types, as in 01
  void* args[] = {&a, &b, &c, &n};
  // Called by the measurement with the accessor's context current: its function, its stream.
  const auto launch = [&] {
    ms::check(cuLaunchKernel(accessor.vectorAdd, run.vectorAddGrid, 1, 1, kBlockSize, 1, 1, 0,
                             accessor.stream.get(), args, nullptr),
              "cuLaunchKernel");
  };
  return p2p::timeAndCheckSum(run, owner, accessor, c, launch);
}
// [kernel-on-peer-memory]

// [vmm-allocation]
// Step 6: memory created on the owner, mapped at reserved addresses and opened to the owner AND
// the accessor by one cuMemSetAccess. The calls name devices, not contexts: no peer access.
void allocateOnOwner(p2p::VmmRange& range, const p2p::DevicePair& pair, std::size_t bytes) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  std::size_t granularity = 1;
  for (const int device : p2p::vmmMappingDevices(pair)) {  // sizes fit every device's pages
    prop.location.id = device;
    std::size_t minimum = 0;
    ms::check(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              "cuMemGetAllocationGranularity");
    granularity = std::max(granularity, minimum);  // powers of two: a multiple of each
  }
  range.size = (bytes + granularity - 1) / granularity * granularity;
  ms::check(cuMemAddressReserve(&range.base, range.size, granularity, 0, 0), "cuMemAddressReserve");
  prop.location.id = pair.owner;  // the memory lives on the owner
  ms::check(cuMemCreate(&range.handle, range.size, &prop, 0), "cuMemCreate");
  range.holdsHandle = true;
  ms::check(cuMemMap(range.base, range.size, 0, range.handle, 0), "cuMemMap");
  range.mapped = true;
  // The mapping holds the memory now: without the handle, unmapping frees it.
  ms::check(cuMemRelease(range.handle), "cuMemRelease");
  range.holdsHandle = false;
  std::vector<CUmemAccessDesc> access;
  for (const int device : p2p::vmmMappingDevices(pair)) {  // {A, B}; {A} when A == B (loopback)
    CUmemAccessDesc& grant = access.emplace_back();
    grant.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    grant.location.id = device;
    grant.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  ms::check(cuMemSetAccess(range.base, range.size, access.data(), access.size()), "cuMemSetAccess");
}
// [vmm-allocation]

// [vmm-path]
p2p::PathResult runVmmPath(p2p::Run& run, const p2p::DevicePair& pair) {
  if (const std::optional<std::string> reason = p2p::vmmPathUnavailable(run.topology, pair))
    return p2p::skippedPath(*reason);
  const p2p::Endpoint& owner = run.endpoints.owner(pair);
  const p2p::Endpoint& accessor = run.endpoints.accessor(pair);
  p2p::VmmRange a, b, c;  // each undoes what was built of it, on every path
  for (p2p::VmmRange* range : {&a, &b, &c})
    allocateOnOwner(*range, pair, run.bytes);
  const p2p::SynchronizeOnExit drain({&accessor, &owner});  // destroyed first: no kernel runs
  std::vector<p2p::RangeAccess> rights;                     // when the ranges are unmapped
  for (const auto& [name, range] : {std::pair{"A", &a}, std::pair{"B", &b}, std::pair{"C", &c}}) {
    p2p::RangeAccess& seen = rights.emplace_back(p2p::RangeAccess{name, {}});
    for (const int device : p2p::vmmMappingDevices(pair)) {
      const CUmemLocation location{CU_MEM_LOCATION_TYPE_DEVICE, device};
      unsigned long long flags = 0;
      ms::check(cuMemGetAccess(&flags, &location, range->base), "cuMemGetAccess");
      seen.views.push_back({device, flags, ""});  // judged with the results (reportPaths)
    }
  }
  p2p::PathResult result = addOnAccessor(run, owner, accessor, a.base, b.base, c.base);
  result.access = std::move(rights);
  return result;
}
// [vmm-path]

// [classic-path]
// Step 7: cuMemAlloc memory of the owner's context, reached through classic peer access. With
// owner == accessor this is step 5, the reference: one context reaches its own allocations.
p2p::PathResult runClassicPath(p2p::Run& run, const p2p::Endpoint& owner,
                               const p2p::Endpoint& accessor,
                               std::vector<std::unique_ptr<p2p::EnabledPeerAccess>>& enabled) {
  const ms::ScopedContext onOwner(owner.ctx());  // cuMemAlloc allocates in the current context
  ms::ContextMemory a(owner.ctx()), b(owner.ctx()), c(owner.ctx());
  for (ms::ContextMemory* buffer : {&a, &b, &c})
    ms::check(cuMemAlloc(buffer->out(), run.bytes), "cuMemAlloc");
  const p2p::SynchronizeOnExit drain({&accessor, &owner});  // no kernel runs when they are freed
  const bool acrossDevices = p2p::needsPeerAccess({owner.ordinal, accessor.ordinal});
  bool adopted = false;  // already enabled by other code: used, and left for that code to disable
  if (acrossDevices) {   // the CURRENT context gains access to all allocations of the one named
    const ms::ScopedContext onAccessor(accessor.ctx());
    const CUresult enable = cuCtxEnablePeerAccess(owner.ctx(), 0);
    // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: primary contexts are shared by the whole process.
    adopted = !p2p::adoptPeerAccess(enable, accessor, owner, enabled);  // ours: always disabled
  }
  p2p::PathResult result = addOnAccessor(run, owner, accessor, a.get(), b.get(), c.get());
  result.peerAccessEnabled = acrossDevices;
  result.peerAccessAdopted = adopted;
  return result;
}
// [classic-path]

ms::Verdict runP2pMemMap(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();
  // Spelling first (no GPU needed): --pairs, --loopback with --pairs, --size.
  const std::vector<p2p::DevicePair> requested =
      options.pairs.empty() ? std::vector<p2p::DevicePair>{} : p2p::parsePairList(options.pairs);
  p2p::checkLoopbackOptions(options.loopback, requested);
  (void)ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, UINT64_MAX, 1, sizeof(float));

  // 1. The driver; devices the options name must exist, before any waiver or output.
  ms::checkDriverInit(cuInit(0));
  int deviceCount = 0;
  ms::check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");
  p2p::checkRequestedDevices(deviceCount, requested, options.common.device);

  // [peer-matrix]
  // 2. What each device supports, and who can reach whose memory (rows: accessors).
  const auto n = static_cast<std::size_t>(deviceCount);
  std::vector<CUdevice> devices(n);
  for (std::size_t i = 0; i < n; ++i)
    ms::check(cuDeviceGet(&devices[i], static_cast<int>(i)), "cuDeviceGet");
  p2p::DeviceTopology topology{std::vector<bool>(n), std::vector<std::vector<bool>>(n)};
  for (std::size_t accessor = 0; accessor < n; ++accessor) {
    int supported = 0;
    ms::check(
        cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                             devices[accessor]),
        "cuDeviceGetAttribute");
    topology.vmmSupported[accessor] = supported != 0;
    topology.canAccessPeer[accessor].assign(n, true);  // a device reaches its own memory
    for (std::size_t owner = 0; owner < n; ++owner) {
      int canAccess = 1;
      if (owner != accessor)
        ms::check(cuDeviceCanAccessPeer(&canAccess, devices[accessor], devices[owner]),
                  "cuDeviceCanAccessPeer");
      topology.canAccessPeer[accessor][owner] = canAccess != 0;
    }
  }
  // [peer-matrix]
  // With the link attributes of every pair (cuDeviceGetP2PAttribute), for the table.
  p2p::reportDevices(topology, devices, out, json);

  // 3. The pairs; waived here, before any allocation, without two devices that connect.
  p2p::PairPlan plan;
  if (options.loopback) {
    plan = p2p::planLoopback(topology, ms::deviceOrdinal(ms::selectDevice(options.common.device)));
  } else {
    try {
      plan = p2p::planPairs(topology, requested, options.common.device);
    } catch (const ms::WaivedError&) {
      if (deviceCount == 1)
        out << "(With one GPU, --loopback runs every check that one GPU can run.)\n";
      throw;
    }
  }
  p2p::reportPlan(plan, out, json);

  // [endpoints]
  // 4. Per endpoint, in its device's primary context: both kernels and a stream.
  const std::string vectorAddPath = ms::locateFatbin("vectorAdd_kernel.fatbin");
  const std::string copyPath = ms::locateFatbin("copy_kernel.fatbin");
  out << "Kernels: " << vectorAddPath << ", " << copyPath << '\n';
  const std::vector<char> vectorAddFatbin = ms::readBinaryFile(vectorAddPath);
  const std::vector<char> copyFatbin = ms::readBinaryFile(copyPath);
  p2p::Endpoints endpoints(plan);
  std::size_t freeBytes = SIZE_MAX;
  for (const int ordinal : plan.endpoints) {
    p2p::Endpoint& endpoint = endpoints.add(ordinal);  // retains the primary context (Common)
    const ms::ScopedContext current(endpoint.ctx());
    ms::check(cuModuleLoadData(endpoint.vectorAddModule.out(), vectorAddFatbin.data()),
              "cuModuleLoadData");
    ms::check(
        cuModuleGetFunction(&endpoint.vectorAdd, endpoint.vectorAddModule.get(), "VecAdd_kernel"),
        "cuModuleGetFunction");
    ms::check(cuModuleLoadData(endpoint.copyModule.out(), copyFatbin.data()), "cuModuleLoadData");
    ms::check(cuModuleGetFunction(&endpoint.copy, endpoint.copyModule.get(), "Copy_kernel"),
              "cuModuleGetFunction");
    ms::check(cuStreamCreate(endpoint.stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    endpoint.copyGrid = ms::residentGridSize(endpoint.copy, endpoint.device, kBlockSize);
    std::size_t freeHere = 0, total = 0;
    ms::check(cuMemGetInfo(&freeHere, &total), "cuMemGetInfo");
    freeBytes = std::min(freeBytes, freeHere);
  }
  // [endpoints]
  const std::uint64_t deviceBytes = ms::chooseBufferBytes(
      options.sizeBytes, kDefaultBytes, freeBytes, p2p::buffersPerDevice(plan), sizeof(float));
  const std::uint64_t bytes = ms::fitHostMemory(options.sizeBytes, deviceBytes, 3, sizeof(float));
  const std::size_t count = bytes / sizeof(float);
  out << "Buffers: " << ms::formatBytes(bytes) << " (" << count << " floats) each\n";
  // Pinned host memory needs a current context. With unified addressing every context can reach
  // it anyway; PORTABLE makes every context also treat it as pinned, so copies skip staging.
  const ms::ScopedContext base(endpoints.at(0).ctx());
  ms::OwnedPinnedHostMemory hostA, hostB, scratch;
  for (ms::OwnedPinnedHostMemory* buffer : {&hostA, &hostB, &scratch})
    ms::check(cuMemHostAlloc(buffer->out(), bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  const p2p::SynchronizeOnExit drain(endpoints.all());  // no copy uses them when they are freed
  const unsigned int grid = ms::blocksToCover(count, 4 * kBlockSize);  // a float4 per thread
  p2p::Run run{options.common, plan,        topology,    endpoints,     bytes, count,
               grid,           hostA.get(), hostB.get(), scratch.get(), 0,     {}};
  ms::fillVectorAddInputs(static_cast<float*>(hostA.get()), static_cast<float*>(hostB.get()), count,
                          2024);

  // 5. to 7. The reference per accessor, then every pair's VMM path, then its classic path: no
  // peer access is in effect while a VMM path runs.
  std::vector<std::unique_ptr<p2p::EnabledPeerAccess>> enabled;  // undone on every path
  std::vector<p2p::PairPaths> paths;
  std::map<int, p2p::PathResult> references;  // step 5, once per accessor
  for (const p2p::DevicePair& pair : plan.tested) {
    const p2p::Endpoint& accessor = endpoints.accessor(pair);
    if (references.count(pair.accessor) == 0)
      references[pair.accessor] = runClassicPath(run, accessor, accessor, enabled);
    paths.push_back(p2p::PairPaths{pair, {}, {}, references[pair.accessor]});
  }
  for (p2p::PairPaths& row : paths)
    row.viaVmm = runVmmPath(run, row.pair);
  for (p2p::PairPaths& row : paths)
    row.classic =
        runClassicPath(run, endpoints.owner(row.pair), endpoints.accessor(row.pair), enabled);
  p2p::reportPaths(run, paths, out, json);

  // [peer-copies]
  // 8. From the owner's memory into the accessor's, with the accessor's context current.
  p2p::CopyCalls copies;
  copies.copyEngine = [&](const p2p::Endpoint& to, CUdeviceptr destination,
                          const p2p::Endpoint& from, CUdeviceptr source) {
    // Destination first, each pointer with its context; the stream decides who runs the copy.
    ms::check(cuMemcpyPeerAsync(destination, to.ctx(), source, from.ctx(), bytes, to.stream.get()),
              "cuMemcpyPeerAsync");
  };
  copies.sm = [&](const p2p::Endpoint& to, CUdeviceptr destination, CUdeviceptr source) {
    unsigned long long words = run.count;  // Copy_kernel(float* dst, const float* src, n)
    void* args[] = {&destination, &source, &words};
    ms::check(cuLaunchKernel(to.copy, to.copyGrid, 1, 1, kBlockSize, 1, 1, 0, to.stream.get(), args,
                             nullptr),
              "cuLaunchKernel");
  };
  // [peer-copies]
  p2p::measureCopies(run, copies, out, json);

  // [disable-peer-access]
  // 9. Classic peer access undone by hand (the owners do it on an error path), then RAII.
  for (const std::unique_ptr<p2p::EnabledPeerAccess>& access : enabled) {
    const ms::ScopedContext onAccessor(access->accessor().ctx());
    ms::check(cuCtxSynchronize(), "cuCtxSynchronize");  // nothing may still use the mapping
    ms::check(cuCtxDisablePeerAccess(access->owner().ctx()), "cuCtxDisablePeerAccess");
    access->dismiss();
  }
  // [disable-peer-access]
  return p2p::reportVerdict(run, out, json);
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "p2pMemMap",
      "Maps one GPU's memory into another with VMM (cuMemSetAccess) and with peer access "
      "(cuCtxEnablePeerAccess), runs a kernel on one device in the other's memory, and measures "
      "copy engine vs SM copies as nvbandwidth does, verifying every transfer. Needs 2 GPUs with "
      "peer access (else WAIVED), or --loopback for one GPU.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per buffer, a multiple of 4 (default 512M, less if memory is short)",
                      options.sizeBytes);
  commandLine.addString("pairs",
                        "ordered pairs to test as OWNER:ACCESSOR, e.g. 0:1,1:0 (default: every "
                        "pair with peer access; with --device: those involving that device)",
                        options.pairs, "LIST");
  commandLine.addFlag("loopback",
                      "one GPU: owner == accessor == --device (or the fastest); every check one "
                      "GPU can run, local-memory figures",
                      options.loopback);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runP2pMemMap(options, report); });
}
