/**
 * @file multicastReduce.cpp
 * @brief One address for every GPU's copy of a buffer: a multicast object, a broadcast with
 *        multimem.st and an all-reduce with multimem.ld_reduce, summed in the NVLink switch.
 *
 * A multicast object joins one allocation on each GPU of a team. Mapped like memory, it gives
 * each GPU a *multicast address*: a store through it (multimem.st) reaches every copy, and a
 * load-reduce through it (multimem.ld_reduce) returns the sum of every copy, computed by the
 * NVSwitch (NVLink SHARP, the NVLS of NCCL). The flow:
 *
 * 1. **Who can take part**: cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED) and
 *    compute capability 9.0 or newer (the multimem instructions) per device; fewer than two such
 *    GPUs is WAIVED, and so is a machine where NVLink multicast is turned off (NCCL_NVLS_ENABLE=0
 *    and the like).
 * 2. A primary context and the free memory of each member.
 * 3. **The object**: cuMulticastGetGranularity (minimum and recommended), the size rounded up;
 *    cuMulticastCreate for numDevices GPUs; cuMulticastAddDevice for *every* member before any
 *    memory is bound. The team is fixed once complete: cuMulticastBindMem and cuMemMap of the
 *    object block until every device has been added, so in a program that adds and binds from one
 *    thread, binding first would wait forever for an add that never comes.
 * 4. **Per device** (multicast_team.cpp): cuMemCreate, cuMulticastBindMem, a unicast mapping of
 *    that memory (reserve, map, set access for every member) and a multicast mapping of the
 *    object (reserve, cuMemMap of the multicast handle, set access for this device).
 * 5. **Broadcast**: one GPU stores a source buffer through its multicast address; every GPU's
 *    unicast copy is checked against the source.
 * 6. **All-reduce**, in place: each GPU takes a share of the buffer, reads its sum across the
 *    team (multimem.ld_reduce) and stores it to every copy (multimem.st), in a kernel launched
 *    cooperatively on every GPU; every copy is checked against the exact sum (the inputs are
 *    small integers, so float sums are exact).
 * 7. **Measured** (multicastReduce_measure.cpp): the same all-reduce with plain peer loads over
 *    NVLink, and with the copy engine + a local add; algorithm and bus bandwidth, ratios, and a
 *    one-way peer copy as the link reference.
 * 8. **Teardown** on every path (TeamMemory's owners): unbind, unmap, release, free the
 *    addresses, each step for all GPUs before the next.
 *
 * **Memory ordering.** The unicast and multicast addresses of the same memory are two *proxies*
 * in PTX's memory model: within a kernel, an access through one is ordered against an access
 * through the other only by `fence.proxy.alias` (a kernel boundary orders everything, which is
 * why the checks below, run after the kernels, need no fence). Between kernels running at once on
 * different GPUs, what one GPU wrote is visible to another after a release at system scope that
 * the other observes with an acquire at system scope. The all-reduce kernel therefore starts and
 * ends with a team barrier (multicast_kernel.cu): a `multimem.red.release.sys` of +1 on a counter
 * in every copy, a `fence.proxy.alias`, then `ld.acquire.sys` of the local copy until every GPU has
 * arrived. The first barrier makes every GPU's inputs visible before anyone sums them; the second
 * makes every share's sum land in every copy before any GPU's kernel ends.
 */
#include <algorithm>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "multicastReduce_measure.hpp"
#include "multicast_owners.hpp"
#include "multicast_plan.hpp"
#include "multicast_team.hpp"

namespace ms = memsamples;
namespace mc = memsamples::multicast;

namespace {

constexpr int kBlockSize = 512;

// [team]
/// 1. Who can take part: every device's multicast support and compute capability.
mc::TeamChoice findTeam(const mc::Options& options) {
  int count = 0;
  ms::check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::vector<mc::DeviceCapability> devices(static_cast<std::size_t>(count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    ms::check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
    mc::DeviceCapability& capability = devices[static_cast<std::size_t>(ordinal)];
    int multicast = 0;  // switch multicast and reductions: NVLink through an NVSwitch
    ms::check(cuDeviceGetAttribute(&multicast, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, device),
              "cuDeviceGetAttribute");
    capability.multicastSupported = multicast != 0;
    capability.computeMajor =
        ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    capability.computeMinor =
        ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    capability.score = {ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                        ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)};
    capability.cooperativeLaunch =
        ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) != 0;
    capability.peerAccess.assign(static_cast<std::size_t>(count), false);
    for (int other = 0; other < count; ++other) {
      CUdevice peer = 0;
      ms::check(cuDeviceGet(&peer, other), "cuDeviceGet");
      int canAccess = 0;  // every member maps every other member's copy
      if (other != ordinal)
        ms::check(cuDeviceCanAccessPeer(&canAccess, device, peer), "cuDeviceCanAccessPeer");
      capability.peerAccess[static_cast<std::size_t>(other)] = canAccess != 0;
    }
  }
  return mc::chooseTeam(devices, options.devices, options.common.device);
}
// [team]

ms::Verdict run(const mc::Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  mc::validateSize(options.sizeBytes);  // a usage error before any waiver
  ms::checkDriverInit(cuInit(0));
  const mc::TeamChoice choice = findTeam(options);
  if (!choice.waiver.empty())
    throw ms::WaivedError(choice.waiver);
  // Before any multicast call: the object lives in the NVSwitch fabric that every GPU of the host
  // shares, so where its owner has turned NVLink multicast off for NCCL, NVSHMEM or PyTorch, it is
  // off for us too; and the all-reduce cannot run where launches block the host.
  for (const std::string& why : {mc::multicastTurnedOff(ms::processEnvironment),
                                 mc::launchesBlock(ms::processEnvironment)}) {
    if (!why.empty())
      throw ms::WaivedError(why);
  }
  const std::size_t n = choice.members.size();

  // 2. Every member's primary context, and the smallest free memory among them.
  std::vector<ms::PrimaryContext> contexts;  // declared first: released last
  mc::TeamRun team;
  std::size_t rootIndex = 0, freeBytes = SIZE_MAX;  // rootIndex: the root's place in members
  for (const int ordinal : choice.members) {
    CUdevice device = 0;
    ms::check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
    contexts.emplace_back(device);
    team.members.push_back({ordinal, device, contexts.back().get(), 0, 0});
    if (ordinal == choice.root)
      rootIndex = team.members.size() - 1;
    const ms::ScopedContext current(contexts.back().get());
    std::size_t freeHere = 0, total = 0;
    ms::check(cuMemGetInfo(&freeHere, &total), "cuMemGetInfo");
    freeBytes = std::min(freeBytes, freeHere);
    out << "Device " << ordinal << ": " << ms::deviceName(device)
        << (ordinal == choice.root ? " (broadcasts)" : "") << '\n';
  }
  // The root's context is current from here on (and while the owners below release): calls
  // that need a current context and name no device of their own find one.
  const ms::ScopedContext base(contexts[rootIndex].get());
  // Per GPU: its copy, the copy-engine reference's scratch, and (the root) the broadcast source.
  const std::uint64_t bytes = ms::fitHostMemory(
      options.sizeBytes,
      ms::chooseBufferBytes(options.sizeBytes, mc::kDefaultBytes, freeBytes, 3, mc::kVectorBytes),
      1, mc::kVectorBytes);

  // [object]
  // 3. The multicast object: its granularity, its size, and every member added before any bind.
  CUmulticastObjectProp prop = {};
  prop.numDevices = static_cast<unsigned int>(n);
  prop.size = bytes;
  prop.handleTypes = 0;  // one process: nothing to export (NCCL asks for a POSIX fd or fabric)
  std::size_t minimum = 0, recommended = 0;
  ms::check(cuMulticastGetGranularity(&minimum, &prop, CU_MULTICAST_GRANULARITY_MINIMUM),
            "cuMulticastGetGranularity");
  ms::check(cuMulticastGetGranularity(&recommended, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED),
            "cuMulticastGetGranularity");
  std::size_t allocationMinimum = 1;  // each copy is also a cuMemCreate allocation on its GPU
  for (const mc::Member& member : team.members) {
    CUmemAllocationProp memoryProp = {};
    memoryProp.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    memoryProp.location = {CU_MEM_LOCATION_TYPE_DEVICE, member.ordinal};
    std::size_t granularity = 0;
    ms::check(
        cuMemGetAllocationGranularity(&granularity, &memoryProp, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
    allocationMinimum = std::lcm(allocationMinimum, granularity);
  }
  team.layout = mc::planLayout(bytes, minimum, recommended, allocationMinimum);
  prop.size = team.layout.allocationBytes;  // a multiple of the granularity

  mc::TeamMemory memory;  // its owners unbind, unmap, release and free, in that order
  ms::check(cuMulticastCreate(memory.object.out(), &prop), "cuMulticastCreate");
  for (const mc::Member& member : team.members)  // all of them, before any cuMulticastBindMem
    ms::check(cuMulticastAddDevice(memory.object.get(), member.device), "cuMulticastAddDevice");
  // [object]
  out << "Multicast object: " << n << " GPUs, " << ms::formatBytes(team.layout.allocationBytes)
      << " per GPU (granularity: minimum " << ms::formatBytes(minimum) << ", recommended "
      << ms::formatBytes(recommended) << ", used " << ms::formatBytes(team.layout.granularity)
      << ")\n";

  // 4. Per device: memory, bound to the object, mapped unicast and multicast.
  mc::bindAndMapMembers(team.layout, team.members, memory);

  // Kernels and a stream on every member, each released in its own context. One grid for all:
  // the barrier pairs block b of each GPU with block b of the others, so every block must be
  // resident at once (the all-reduce is launched cooperatively, and the driver refuses a grid
  // that would not be); and the barrier counters, zeroed through each unicast mapping.
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("multicast_kernel.fatbin"));
  ms::OwnedDeviceMemory source;  // the broadcast's source, on the root
  std::vector<ms::ContextModule> modules;
  std::vector<ms::ContextStream> streams;  // declared last: drained before anything is freed
  team.grid = mc::kMaxBlocks;
  team.block = kBlockSize;
  for (std::size_t g = 0; g < n; ++g) {
    const ms::ScopedContext current(team.members[g].context);
    modules.emplace_back(team.members[g].context);
    streams.emplace_back(team.members[g].context);
    ms::check(cuStreamCreate(streams[g].out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    team.streams.push_back(streams[g].get());
    ms::check(cuModuleLoadData(modules[g].out(), fatbin.data()), "cuModuleLoadData");
    mc::Kernels& k = team.kernels.emplace_back();
    ms::check(cuModuleGetFunction(&k.broadcast, modules[g].get(), "Multimem_broadcast_kernel"),
              "cuModuleGetFunction");
    ms::check(cuModuleGetFunction(&k.allReduce, modules[g].get(), "Multimem_allreduce_kernel"),
              "cuModuleGetFunction");
    ms::check(cuModuleGetFunction(&k.peerReduce, modules[g].get(), "Peer_allreduce_kernel"),
              "cuModuleGetFunction");
    ms::check(cuModuleGetFunction(&k.addParts, modules[g].get(), "Add_parts_kernel"),
              "cuModuleGetFunction");
    team.grid =
        std::min(team.grid, ms::residentGridSize(k.allReduce, team.members[g].device, kBlockSize));
    // The barrier counters start at zero in every copy (and only ever grow after that).
    ms::check(cuMemsetD32Async(team.members[g].unicast + team.layout.counterOffset, 0,
                               mc::kMaxBlocks, streams[g].get()),
              "cuMemsetD32Async");
    ms::check(cuStreamSynchronize(streams[g].get()), "cuStreamSynchronize");
  }
  const std::uint64_t vectors = bytes / mc::kVectorBytes;
  team.shares = mc::splitShares(vectors, static_cast<int>(n));
  std::vector<float> host(bytes / sizeof(float));

  // [broadcast]
  // 5. Broadcast: the root stores the source through its multicast address, once.
  const mc::Member& rootMember = team.members[rootIndex];
  {
    const ms::ScopedContext current(rootMember.context);
    ms::check(cuMemAlloc(source.out(), bytes), "cuMemAlloc");
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = mc::broadcastValue(i);
    ms::check(cuMemcpyHtoDAsync(source.get(), host.data(), bytes, streams[rootIndex].get()),
              "cuMemcpyHtoDAsync");
    CUdeviceptr target = rootMember.multicast, from = source.get();
    unsigned long long count = vectors;
    void* args[] = {&target, &from, &count};
    ms::check(cuLaunchKernel(team.kernels[rootIndex].broadcast, team.grid, 1, 1, kBlockSize, 1, 1,
                             0, streams[rootIndex].get(), args, nullptr),
              "cuLaunchKernel");
    ms::check(cuStreamSynchronize(streams[rootIndex].get()), "cuStreamSynchronize");
  }  // the kernel has ended: its multimem stores are visible to the other GPUs' copies
  const mc::Mismatch broadcast = mc::checkCopies(team, host, mc::broadcastValue);
  // [broadcast]

  // [all-reduce]
  // 6. All-reduce: member g sums its share across the team and stores it into every copy.
  unsigned int allReducesSoFar = 0;  // the barrier counters' targets follow it
  const mc::MemberWork multicastAllReduce = [&](std::size_t g) {
    const mc::Member& self = team.members[g];
    CUdeviceptr data = self.multicast;
    unsigned long long first = team.shares[g].first, count = team.shares[g].count;
    CUdeviceptr countersMc = self.multicast + team.layout.counterOffset;  // +1 reaches every copy
    CUdeviceptr countersUc = self.unicast + team.layout.counterOffset;    // read locally
    unsigned int teamSize = static_cast<unsigned int>(n), earlierRuns = allReducesSoFar;
    void* args[] = {&data, &first, &count, &countersMc, &countersUc, &teamSize, &earlierRuns};
    ms::check(cuLaunchCooperativeKernel(team.kernels[g].allReduce, team.grid, 1, 1, kBlockSize, 1,
                                        1, 0, team.streams[g], args),
              "cuLaunchCooperativeKernel");
    if (g + 1 == n)
      ++allReducesSoFar;  // every member has launched this one
  };
  mc::uploadInputs(team, host);             // member g's copy holds inputValue(g, i)
  mc::runOnTeam(team, multicastAllReduce);  // launches on every GPU, waits for all
  const mc::Mismatch reduced = mc::checkCopies(
      team, host, [&](std::uint64_t i) { return mc::expectedSum(static_cast<int>(n), i); });
  // [all-reduce]

  // 7. Measured: the three paths on the same buffers, and the link.
  ms::TimingStats linkCopy;
  const std::vector<mc::PathResult> paths =
      mc::measureAllReduce(team, multicastAllReduce, reduced, options.common, host, linkCopy);
  // 8. Teardown, as run() returns or unwinds: the streams drain, the modules and the source go,
  // then TeamMemory unbinds every copy, unmaps every mapping, releases the memory and the object,
  // and frees the address ranges, each step for all GPUs before the next.
  return mc::reportRun(team, choice.root, broadcast, paths, linkCopy, out, report.json());
}

}  // namespace

/// Parses the options and runs the lesson under runSample() (exit 0 PASS, 1 FAIL, 2 WAIVED).
int main(int argc, char** argv) {
  mc::Options options;
  ms::CommandLine commandLine(
      "multicastReduce",
      "Binds one buffer per GPU to a multicast object, broadcasts with multimem.st and "
      "all-reduces with multimem.ld_reduce (summed in the NVLink switch), checks every copy, and "
      "compares with peer loads and the copy engine.");
  mc::addOptions(commandLine, options);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return run(options, report); });
}
