/**
 * @file p2pMemMap.cpp
 * @brief One GPU's memory mapped into another, two ways side by side: VMM memory
 *        opened to the peer with cuMemSetAccess, and cuMemAlloc memory reached through
 *        cuCtxEnablePeerAccess; a kernel on one device working in the other's memory;
 *        copy engines vs SMs over the link. `--loopback` runs all of it on one GPU.
 *
 * A GPU touches another GPU's memory once that memory is mapped into its page tables,
 * by an explicit call per kind of memory. Read 01_vectorAddDrv and 02_vectorAddMMAP
 * first. A **pair** `A:B` is ordered: the memory lives on the **owner** A and is used
 * by the **accessor** B. An **endpoint** is one side of a transfer: a device's primary
 * context, its kernels and a stream (two on one device with `--loopback`).
 *
 * Bad input is refused first, with no GPU (p2p::checkOptions()): `--pairs`, `--pairs`
 * with `--loopback`, a `--size` over 1T (no GPU holds three such buffers) or not whole
 * floats.
 *
 * 1. **cuInit**.
 * 2. **The machine** (Common's queryDeviceTopology(), as in 02): cuDeviceGetCount; per
 *    device cuDeviceGet and the VMM attribute (cuDeviceGetAttribute); per ordered pair
 *    cuDeviceCanAccessPeer(accessor, owner).
 * 3. **The pairs**, printed with the machine (p2pMemMap_measure.cpp): a device the
 *    options name that the machine lacks is a usage error (exit 1), before any output
 *    and any waiver; a GPU the options do not name is left out, with the reason, where
 *    its compute mode or a busy device refuses a context or it lacks the memory for the
 *    buffers; fewer than two GPUs, or no pair with access, is WAIVED; `--loopback` tests
 *    the one pair N:N.
 * 4. **The endpoints**: each retains its device's primary context, loads both kernels
 *    into it and creates a stream; the buffers are sized to every endpoint's free
 *    memory; the inputs are pinned host memory, portable to every context; one row per
 *    pair names the endpoints of its owner and its accessor.
 * 5. **The reference**, once per accessor: the kernel on three **cuMemAlloc** buffers
 *    of its own memory (the classic path with owner == accessor, no peer access).
 * 6. **VMM path**, every pair (the core): **cuMemGetAllocationGranularity** of each
 *    mapping device, **cuMemAddressReserve**, **cuMemCreate** on
 *    the owner, **cuMemMap**, **cuMemRelease**, one **cuMemSetAccess** for owner and
 *    accessor: the whole peer set-up; **cuMemGetAccess** reads it back;
 *    the accessor's kernel (**cuLaunchKernel**) adds in the owner's memory, timed and
 *    checked; **cuMemUnmap**, **cuMemAddressFree**.
 * 7. **Classic path**, every pair (right below the core): **cuMemAlloc** in the owner's
 *    context; with the accessor's context current, **cuCtxEnablePeerAccess**(owner's
 *    context), which opens every allocation of that context; the same kernel and check;
 *    **cuCtxDisablePeerAccess**, **cuMemFree**. A pair the driver refuses is reported.
 * 8. **Copy engine vs SMs**, pair by pair: peer access enabled, measured, disabled
 *    again (**cuMemcpyPeerAsync** and Copy_kernel, one way and both at once, counted as
 *    nvbandwidth does; p2pMemMap_measure.cpp). A pair the driver refuses is reported.
 * 9. **The verdict**; the owners release the endpoints and the pinned inputs.
 */
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memsamples.hpp"
#include "p2pMemMap_measure.hpp"
#include "p2p_logic.hpp"
#include "peer_context.hpp"
#include "support/peer_topology.hpp"  // queryDeviceTopology
#include "support/vmm_owners.hpp"     // AddressRange, Mapping, OwnedAllocationHandle

namespace ms = memsamples;        // Common: check, owners, options, timing
namespace p2p = memsamples::p2p;  // this folder: pairs, endpoints, measurements

namespace {

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  std::string pairs;
  bool loopback = false;
};

// The two paths, below the lesson that runs them: one pair's VMM path (the core) and,
// right after it, its classic path, each from creation to release; and the kernel both
// of them launch on the accessor.
p2p::PathResult runVmmPath(p2p::Run& run, const p2p::PairPaths& row);
p2p::PathResult runClassicPath(p2p::Run& run, const p2p::Endpoint& owner,
                               const p2p::Endpoint& accessor);
p2p::PathResult addOnAccessor(p2p::Run& run, const p2p::Endpoint& owner,
                              const p2p::Endpoint& accessor, CUdeviceptr a,
                              CUdeviceptr b, CUdeviceptr c);

// What cuCtxEnablePeerAccess's answer means to the classic path (runClassicPath):
// - Enabled: this path turned access on, and turns it off after its kernel;
// - Adopted (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED): other code enabled it (a primary
//   context is the whole process's): used, and left on;
// - Refused (CUDA_ERROR_TOO_MANY_PEERS, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED): the driver
//   refuses the pair: reported, not failed.
// Any other answer is an error: it throws, naming the call at @p file:@p line.
enum class PeerAnswer { Enabled, Adopted, Refused };
PeerAnswer sortPeerAnswer(CUresult enable, const char* file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  if (enable == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    return PeerAnswer::Adopted;
  if (enable == CUDA_ERROR_TOO_MANY_PEERS || enable == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
    return PeerAnswer::Refused;
  ms::check(enable, "cuCtxEnablePeerAccess", file, line);
  return PeerAnswer::Enabled;
}

/// The lesson: steps 1 to 9, in the order they run.
ms::Verdict runP2pMemMap(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();

  // Bad input first, with no GPU needed to refuse it: --pairs, --pairs with
  // --loopback, a --size larger than any GPU holds or not whole floats.
  const p2p::Request request =
      p2p::checkOptions(options.pairs, options.loopback, options.common.device,
                        options.sizeBytes);

  // 1. The driver (how many devices it sees is step 2's first question).
  ms::checkDriverInit(cuInit(0));

  // [machine]
  // 2. What each device is, and who can reach whose memory: Common's
  // queryDeviceTopology() asks cuDeviceGet and the VMM attribute (cuDeviceGetAttribute)
  // of every device, and cuDeviceCanAccessPeer(a, o) of every ordered pair, which
  // answers "may device a map device o's memory?": rows of canAccessPeer are accessors
  // (the matrices this sample prints are the other way round: rows are owners).
  // 02 and 06 plan with the same call.
  const p2p::DeviceTopology topology = ms::queryDeviceTopology();
  // [machine]

  // 3. The pairs, printed with the machine: every ordered pair with peer access,
  // --pairs, or those of --device; with --loopback, N:N. A device the options name must
  // exist, checked before any output, so that a typo is an error on every machine, never
  // a waiver. A GPU the options do not name is left out, saying why, where it would
  // refuse a context or lacks the memory for the buffers: it must not waive or shrink
  // the run. Waived here, before any allocation, without two devices that connect.
  const p2p::PairPlan plan = p2p::choosePairs(request, topology, report);

  // 4. One endpoint per side of a transfer, each holding its device's primary context
  // (the one the runtime API uses too). prepareRun() loads both kernels into each one,
  // creates its stream, sizes the buffers, fills the pinned inputs A and B and lays out
  // run.paths: one row per pair, naming the endpoints of its owner and its accessor.
  p2p::Endpoints endpoints(plan);
  p2p::Run run{options.common, plan, topology, endpoints};
  p2p::prepareRun(run, request.size, out);

  // 5. The reference, once per accessor: the kernel on the accessor's own memory. It is
  // the classic path with owner == accessor, so no peer access is involved.
  std::map<int, p2p::PathResult> references;

  for (p2p::PairPaths& row : run.paths) {
    const int device = row.pair.accessor;
    if (references.count(device) == 0)
      references[device] = runClassicPath(run, *row.accessor, *row.accessor);
    row.local = references[device];
  }

  // 6. The VMM path of every pair (the core, below), where both devices support VMM.
  // All of them run first: no classic peer access is in effect while they do.
  for (p2p::PairPaths& row : run.paths) {
    const std::optional<std::string> noVmm = p2p::vmmPathUnavailable(topology, row.pair);
    if (noVmm)
      row.viaVmm.note = *noVmm;
    else
      row.viaVmm = runVmmPath(run, row);
  }

  // 7. The classic path of every pair (below the core): cuMemAlloc memory reached
  // through classic peer access, enabled for this pair's kernel and disabled after it.
  for (p2p::PairPaths& row : run.paths)
    row.classic = runClassicPath(run, *row.owner, *row.accessor);

  // The three paths side by side, each check's failure kept for the verdict.
  p2p::reportPaths(run, out, json);

  // 8. Copy engine vs SMs, pair by pair: peer access enabled, measured, disabled.
  // Without NVSwitch a GPU maps at most 8 peers at once (CUDA_ERROR_TOO_MANY_PEERS):
  // one pair at a time stays far below, and a pair the driver refuses is reported, not
  // failed.
  p2p::measureCopies(run, out, json);

  // 9. The verdict. The owners release the rest, newest first: the streams are waited
  // for, the pinned inputs freed, the streams and modules destroyed in their contexts
  // and the primary contexts released.
  return p2p::reportVerdict(run, out, json);
}

/// The VMM path of one pair: memory created on the owner, mapped, and opened to the
/// owner and the accessor by cuMemSetAccess; the accessor's kernel works in it. No call
/// names a context: VMM access rights belong to devices.
p2p::PathResult runVmmPath(p2p::Run& run, const p2p::PairPaths& row) {
  const p2p::DevicePair& pair = row.pair;
  const p2p::Endpoint& owner = *row.owner;
  const p2p::Endpoint& accessor = *row.accessor;

  // Who maps the memory: the owner and the accessor (on one device, one entry is both).
  std::vector<int> mappers = {pair.owner};
  if (pair.accessor != pair.owner)
    mappers.push_back(pair.accessor);

  //! [core]
  // Device memory on the owner ("PINNED" here means resident on the device, not
  // page-locked host memory). Sizes and alignment are multiples of the largest
  // minimum granularity of the mapping devices (powers of two: a multiple of each).
  // `access` lists each mapping device with read-write rights, for cuMemSetAccess
  // below: that one call is the whole peer set-up.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  std::size_t granularity = 1;
  std::vector<CUmemAccessDesc> access;
  for (const int device : mappers) {
    prop.location.id = device;
    std::size_t minimum = 0;
    const auto option = CU_MEM_ALLOC_GRANULARITY_MINIMUM;
    ms::check(cuMemGetAllocationGranularity(&minimum, &prop, option),
              "cuMemGetAllocationGranularity");
    granularity = std::max(granularity, minimum);

    CUmemAccessDesc& grant = access.emplace_back();
    grant.location = prop.location;  // this device
    grant.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  const std::size_t size = (run.bytes + granularity - 1) / granularity * granularity;
  prop.location.id = pair.owner;  // where cuMemCreate puts the memory

  // A, B and C: addresses, memory, the memory mapped there, the handle released (the
  // mapping keeps the memory), access granted. Until cuMemSetAccess nobody may touch a
  // range, not even the owner. Common's owners (RAII guards, empty until a call fills
  // them) undo what was built if a call fails: the mappings, declared after the
  // addresses, are undone first. x.release() hands a handle out of its guard.
  ms::AddressRange a(size);
  ms::AddressRange b(size);
  ms::AddressRange c(size);
  std::vector<ms::Mapping> mappings;
  mappings.reserve(3);
  for (ms::AddressRange* range : {&a, &b, &c}) {
    ms::check(cuMemAddressReserve(range->out(), size, granularity,
                                  /*addr=*/0, /*flags=*/0),
              "cuMemAddressReserve");
    // The handle's owner releases it should the map fail; the good path releases it.
    ms::OwnedAllocationHandle memory;
    ms::check(cuMemCreate(memory.out(), size, &prop, /*flags=*/0), "cuMemCreate");
    ms::check(cuMemMap(range->get(), size, /*offset=*/0, memory.get(), /*flags=*/0),
              "cuMemMap");
    mappings.emplace_back(size, range->get());
    ms::check(cuMemRelease(memory.release()), "cuMemRelease");
    ms::check(cuMemSetAccess(range->get(), size, access.data(), access.size()),
              "cuMemSetAccess");
  }

  // Declared after the ranges, so destroyed first: on an error path it waits for both
  // streams before anything is unmapped.
  const p2p::SynchronizeOnExit drain{{&accessor, &owner}};

  // What each mapping device really got, asked of the driver: reportPaths() fails the
  // run on anything but read-write.
  std::vector<p2p::RangeAccess> rights;
  for (ms::AddressRange* range : {&a, &b, &c}) {
    p2p::RangeAccess& seen = rights.emplace_back();
    seen.range = range == &a ? "A" : range == &b ? "B" : "C";
    for (const CUmemAccessDesc& grant : access) {
      unsigned long long flags = 0;
      ms::check(cuMemGetAccess(&flags, &grant.location, range->get()), "cuMemGetAccess");
      seen.views.push_back({grant.location.id, flags, ""});
    }
  }

  // The accessor's kernel: C = A + B, all three in the owner's memory.
  p2p::PathResult result =
      addOnAccessor(run, owner, accessor, a.get(), b.get(), c.get());
  result.access = std::move(rights);

  // Unmapping frees the memory (the mapping held its last reference), then the
  // addresses go. No kernel runs any more: addOnAccessor waited for it.
  // Newest first: C's mapping and addresses, then B's, then A's. Each owner lets go
  // only after its call succeeded, so a failed unmap is still undone on the way out.
  for (ms::AddressRange* range : {&c, &b, &a}) {
    ms::check(cuMemUnmap(mappings.back().get(), size), "cuMemUnmap");
    mappings.back().release();
    mappings.pop_back();
    ms::check(cuMemAddressFree(range->get(), size), "cuMemAddressFree");
    range->release();
  }
  //! [core]
  return result;
}

/// The classic path of one pair: cuMemAlloc memory of the owner's context, reached
/// through classic peer access. With owner == accessor it is step 5's reference.
p2p::PathResult runClassicPath(p2p::Run& run, const p2p::Endpoint& owner,
                               const p2p::Endpoint& accessor) {
  //! [classic-path]
  // cuMemAlloc allocates in the current context: the owner's, for this scope. Each
  // owner frees its buffer on an error path, in that context.
  const ms::ScopedContext onOwner(owner.ctx);
  ms::ContextMemory a(owner.ctx);
  ms::ContextMemory b(owner.ctx);
  ms::ContextMemory c(owner.ctx);
  ms::check(cuMemAlloc(a.out(), run.bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(b.out(), run.bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(c.out(), run.bytes), "cuMemAlloc");

  // Declared after the buffers, so destroyed first: on an error path it waits for both
  // streams before anything is freed.
  const p2p::SynchronizeOnExit drain{{&accessor, &owner}};

  // Peer access goes to the CURRENT context, for every allocation of the context named:
  // the accessor's context gains all of the owner's. One context needs none for its own
  // memory (and the driver refuses a context as its own peer).
  p2p::PathResult result;
  {
    const ms::ScopedContext onAccessor(accessor.ctx);
    const bool acrossContexts = owner.ctx != accessor.ctx;
    CUresult enable = CUDA_SUCCESS;
    if (acrossContexts)
      enable = cuCtxEnablePeerAccess(owner.ctx, 0);

    // Enabled here, adopted (already on), or refused: sortPeerAnswer(), above.
    const PeerAnswer answer = sortPeerAnswer(enable);

    // Access this path enabled is its own to disable. `ours` (Common's InContext owner,
    // kept in the accessor's context) records the owner's context and disables the
    // access on an error path.
    p2p::EnabledPeerAccess ours(accessor.ctx);
    if (acrossContexts && answer == PeerAnswer::Enabled)
      *ours.out() = owner.ctx;

    if (answer == PeerAnswer::Refused)
      result.note = "cuCtxEnablePeerAccess refused: " + ms::describeResult(enable);
    else
      result = addOnAccessor(run, owner, accessor, a.get(), b.get(), c.get());
    result.peerAccessEnabled = acrossContexts;
    result.peerAccessAdopted = answer == PeerAnswer::Adopted;

    // Undo what this path enabled, and only that. The kernel has finished.
    if (ours.get() != nullptr)
      ms::check(cuCtxDisablePeerAccess(ours.release()), "cuCtxDisablePeerAccess");
  }

  // The buffers go last, freed in the owner's context, current again.
  ms::check(cuMemFree(c.release()), "cuMemFree");
  ms::check(cuMemFree(b.release()), "cuMemFree");
  ms::check(cuMemFree(a.release()), "cuMemFree");
  //! [classic-path]
  return result;
}

// [kernel-on-peer-memory]
/// The owner writes A and B; the accessor's kernel reads them and writes C, all three in
/// the owner's memory, through pointers that only a mapping in the accessor's page
/// tables makes valid. The measurement times the launch and checks one more launch
/// (p2pMemMap_measure.cpp), and waits for both streams.
p2p::PathResult addOnAccessor(p2p::Run& run, const p2p::Endpoint& owner,
                              const p2p::Endpoint& accessor, CUdeviceptr a,
                              CUdeviceptr b, CUdeviceptr c) {
  const ms::ScopedContext onOwner(owner.ctx);
  const CUstream ownerStream = owner.stream.get();
  ms::check(cuMemcpyHtoDAsync(a, run.hostA.get(), run.bytes, ownerStream),
            "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b, run.hostB.get(), run.bytes, ownerStream),
            "cuMemcpyHtoDAsync");
  // The kernel runs on the accessor's stream, which knows nothing of the owner's.
  ms::check(cuStreamSynchronize(ownerStream), "cuStreamSynchronize");

  // Exactly the kernel's parameter types, as in 01. The measurement calls the launch
  // warmup + iterations + 1 times (timeThenRerun(), p2pMemMap_measure.cpp), with the
  // accessor's context current: its function, its stream.
  unsigned long long count = run.count;
  void* args[] = {&a, &b, &c, &count};
  const auto launch = [&] {
    const unsigned int block = p2p::kThreadsPerBlock;
    ms::check(cuLaunchKernel(accessor.vectorAdd, run.vectorAddGrid, 1, 1, block, 1, 1, 0,
                             accessor.stream.get(), args, nullptr),
              "cuLaunchKernel");
  };
  return p2p::timeAndCheckSum(run, owner, accessor, c, launch);
}
// [kernel-on-peer-memory]

}  // namespace

/// Parses the options and hands the lesson to runSample(), which owns output and exit
/// codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "p2pMemMap",
      "Maps one GPU's memory into another with VMM (cuMemSetAccess) and with peer "
      "access (cuCtxEnablePeerAccess), runs a kernel on one device in the other's "
      "memory, and measures copy engine vs SM copies as nvbandwidth does, verifying "
      "every transfer. Needs 2 GPUs with peer access (else WAIVED), or --loopback for "
      "one GPU.");
  commandLine.addCommonOptions(options.common);

  commandLine.addSize("size",
                      "bytes per buffer, a multiple of 4 (default 512M, less if memory "
                      "is short)",
                      options.sizeBytes);
  commandLine.addString("pairs",
                        "ordered pairs to test as OWNER:ACCESSOR, e.g. 0:1,1:0 "
                        "(default: every pair with peer access; with --device: those "
                        "involving that device; a GPU that is busy or short of memory is "
                        "left out, saying why, unless named)",
                        options.pairs, "LIST");
  commandLine.addFlag("loopback",
                      "one GPU: owner == accessor == --device (or the fastest); every "
                      "check one GPU can run, local-memory figures",
                      options.loopback);

  const auto body = [&](ms::Report& report) { return runP2pMemMap(options, report); };
  return ms::runSample(commandLine, options.common, argc, argv, body);
}
