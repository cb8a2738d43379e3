/**
 * @file p2pMemMap.cpp
 * @brief Map one GPU's memory into another: the VMM way (cuMemSetAccess) and the classic way
 *        (cuMemAlloc + cuCtxEnablePeerAccess), a kernel on one device working in another
 *        device's memory, and the peer bandwidth of copy engines and SMs, every figure backed by
 *        a checked transfer. `--loopback` runs the same machinery on one GPU.
 *
 * Device memory is not demand-paged: a GPU can touch another GPU's memory only once that memory
 * has been mapped into its page tables, and the mapping is made by an explicit call, before any
 * kernel runs. There are two such calls, for two kinds of memory. This sample does both on every
 * pair of devices that the hardware connects, and shows that a kernel then reads and writes the
 * other GPU's memory with ordinary pointers. Read 01_vectorAddDrv first (the kernel and its
 * check) and 02_vectorAddMMAP (the VMM allocator reused here).
 *
 * Words used throughout: a **pair** `A:B` is ordered; the memory lives on the **owner** A and is
 * used by the **accessor** B. In every matrix rows are owners and columns are accessors. An
 * **endpoint** is one side of a transfer: a device's primary context, its kernels and a stream
 * (one per device; two on the one device of a loopback run).
 *
 * 1. **cuInit**; the devices (**cuDeviceGetCount**, **cuDeviceGet**, **cuDeviceGetName**) and
 *    whether each supports VMM (**cuDeviceGetAttribute**
 *    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED).
 * 2. **The peer-access matrix.** **cuDeviceCanAccessPeer(B, A)** says whether B can access A's
 *    memory at all; **cuDeviceGetP2PAttribute** adds the link's performance rank, whether all
 *    atomics are native over it, and ACCESS_SUPPORTED (informative: a query the driver does not
 *    answer shows as "?"). Access is directional: `0:1` and `1:0` are asked separately.
 * 3. **The pairs** (p2p_logic.hpp): every ordered pair, or `--pairs`, or those involving
 *    `--device`; the ones without access are named and skipped. With fewer than two GPUs, or no
 *    pair with access, the sample is **WAIVED** here, before anything is allocated.
 *    **`--loopback`** instead tests the one pair N:N of the chosen device (owner == accessor):
 *    everything below that one GPU can do runs, and every figure is a local-memory figure, not
 *    a peer-link figure.
 * 4. **One context per device**: each endpoint retains its device's primary context
 *    (**cuDevicePrimaryCtxRetain**) and loads the two kernels into it (**cuModuleLoadData**,
 *    **cuModuleGetFunction**), with a stream of its own. Every call below first makes the right
 *    context current (**cuCtxPushCurrent** / **cuCtxPopCurrent**): peer access, modules,
 *    streams, events and cuMemAlloc memory all belong to one context.
 * 5. **The reference**, per accessor: VecAdd_kernel on three cuMemAlloc buffers in the
 *    accessor's own memory, timed; the paths below are read against it.
 * 6. **The VMM path**, per pair A:B (skipped when a device lacks VMM). A, B and C are each one
 *    range built by 02's StripedVmmRange with backing device {A} and mapping devices {A, B}
 *    ({A} in a loopback run): **cuMemAddressReserve**, **cuMemCreate** on A, **cuMemMap**,
 *    **cuMemRelease**, and one **cuMemSetAccess** granting read-write to A and to B. That call
 *    is the whole peer setup: it writes B's page tables for this range. No cuCtxEnablePeerAccess
 *    is involved; none is in effect while this path runs. **cuMemGetAccess** reads back the
 *    right of A and of B on each of A, B and C. Then A writes the inputs
 *    (**cuMemcpyHtoDAsync**); B's VecAdd_kernel reads A and B and writes C, all three in A's
 *    memory (**cuLaunchKernel**), timed with CUDA events; then C is filled with a sentinel
 *    (**cuMemsetD32Async**), B runs the kernel **once more, untimed**, and A reads C back
 *    (**cuMemcpyDtoHAsync**) and compares every element exactly with A + B. A guard declared
 *    after the ranges waits for both streams before the ranges are unmapped, on every path.
 * 7. **The classic path**, per pair A:B: **cuMemAlloc** three buffers in A's context; with B's
 *    context current, **cuCtxEnablePeerAccess**(A's context) lets B use *every* cuMemAlloc
 *    allocation of A's context; the same kernel, timing and check; then
 *    **cuCtxDisablePeerAccess** (after **cuCtxSynchronize**: nothing may still use the
 *    mapping). An RAII owner disables the access on every path, error paths included. In a
 *    loopback run there is no peer to enable: a context reaches its own allocations, and the
 *    driver refuses a context as its own peer. The kernel GB/s of both paths and of the
 *    reference are printed side by side with their ratios.
 * 8. **Copy engine vs SM.** Each endpoint gets a source buffer holding a pattern of its own and
 *    a destination buffer (cuMemAlloc). For each pair A:B, with B granted access to A: the copy
 *    engine (**cuMemcpyPeerAsync**(dst on B, B's context, src on A, A's context, bytes, B's
 *    stream); in a loopback run both contexts are the same one) and the SMs (Copy_kernel on B
 *    reading A's memory) each copy A's source into B's destination, timed (median of
 *    `--iterations`). The diagonal is a copy inside one device (**cuMemcpyDtoDAsync** and the
 *    kernel), the reference every link is read against. **Bidirectional**: for pairs tested
 *    both ways (and the loopback pair), both directions run at once, one stream per endpoint,
 *    started together and ended together with events (**cuEventRecord**,
 *    **cuStreamWaitEvent** across contexts, **cuEventElapsedTime**); the aggregate GB/s is
 *    reported once per unordered pair. After each measurement the destination is filled with a
 *    sentinel, the copy runs **once more, untimed**, and the destination is read back and
 *    compared word by word with the source's pattern: every figure belongs to a transfer that
 *    was checked on its own.
 * 9. **Cleanup** is RAII throughout: streams drained, peer access disabled, VMM ranges unmapped
 *    and freed, cuMemAlloc memory freed in its own context, modules unloaded and streams
 *    destroyed with their context current, then the primary contexts released
 *    (**cuDevicePrimaryCtxRelease**).
 */
#include <algorithm>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "memsamples.hpp"
#include "p2p_logic.hpp"
#include "peer_context.hpp"
#include "striped_vmm.hpp"

namespace ms = memsamples;
namespace p2p = memsamples::p2p;
namespace vmm = memsamples::vmm;

namespace {

constexpr std::uint64_t kDefaultBytes = 256ull << 20;  // per buffer: 64 Mi floats

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  std::string pairs;
  bool loopback = false;
};

// What every step after the setup needs: the plan and its endpoints, sizes, options, host
// buffers, and the running tally.
struct Run {
  const Options& options;
  const p2p::PairPlan& plan;
  const p2p::Endpoints& endpoints;
  std::uint64_t bytes = 0;
  std::size_t count = 0;  // floats (and 32-bit words) per buffer
  ms::OwnedPinnedHostMemory& hostA;
  ms::OwnedPinnedHostMemory& hostB;
  ms::OwnedPinnedHostMemory& scratch;  // read-backs and pattern uploads
  int verifiedTransfers = 0;
  std::vector<std::string> failures;
};

// ------------------------------------------------------------ steps 5 to 7: reference and paths

// What cuMemGetAccess said about one VMM range, for each device it was asked about.
struct RangeAccess {
  std::string range;  // "A", "B" or "C"
  std::vector<p2p::DeviceAccessView> views;
};

struct PathResult {
  bool ran = false;
  std::string note;  // why it did not run
  ms::VectorAddCheck check;
  ms::TimingStats kernel;
  double gbps = 0;
  std::vector<RangeAccess> access;  // VMM path only
  bool peerAccessEnabled = false;   // classic path only: cuCtxEnablePeerAccess was used
};

// C (in the owner's memory) read back by the owner and compared with A + B.
ms::VectorAddCheck readBackSum(Run& run, const p2p::PeerDevice& owner, CUdeviceptr c) {
  {
    const ms::ScopedContext onOwner(owner.context());
    ms::check(cuMemcpyDtoHAsync(run.scratch.get(), c, run.bytes, owner.stream()),
              "cuMemcpyDtoHAsync");
  }
  owner.synchronize();
  ++run.verifiedTransfers;
  return ms::checkVectorAdd(static_cast<const float*>(run.hostA.get()),
                            static_cast<const float*>(run.hostB.get()),
                            static_cast<const float*>(run.scratch.get()), run.count);
}

void clearOnOwner(const Run& run, const p2p::PeerDevice& owner, CUdeviceptr c) {
  {
    const ms::ScopedContext onOwner(owner.context());
    ms::check(cuMemsetD32Async(c, p2p::kSentinelWord, run.count, owner.stream()),
              "cuMemsetD32Async");
  }
  owner.synchronize();  // the accessor's kernel runs on another stream: it must see this first
}

// The part every path shares, once the accessor can reach a, b and c in the owner's memory: the
// owner writes the inputs, the accessor's kernel computes C = A + B there, timed. Then C is
// cleared and ONE more launch, untimed, writes it, and the owner checks every element: the timed
// launches all write the same C, so only a launch checked on its own proves the figure's
// transfer right.
PathResult addOnAccessor(Run& run, const p2p::PeerDevice& owner, const p2p::PeerDevice& accessor,
                         CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  {
    const ms::ScopedContext onOwner(owner.context());
    ms::check(cuMemcpyHtoDAsync(a, run.hostA.get(), run.bytes, owner.stream()),
              "cuMemcpyHtoDAsync");
    ms::check(cuMemcpyHtoDAsync(b, run.hostB.get(), run.bytes, owner.stream()),
              "cuMemcpyHtoDAsync");
  }
  owner.synchronize();  // the accessor's kernels run on another stream: they must see the inputs
  unsigned long long n = run.count;  // the kernel's parameter types, exactly
  void* args[] = {&a, &b, &c, &n};
  const auto launch = [&] {
    ms::check(cuLaunchKernel(accessor.vectorAdd(), accessor.vectorAddGrid(), 1, 1,
                             p2p::kVectorAddBlockSize, 1, 1, 0, accessor.stream(), args, nullptr),
              "cuLaunchKernel");
  };
  PathResult result;
  result.ran = true;
  {
    const ms::ScopedContext onAccessor(accessor.context());  // timeOnStream's events join it
    result.kernel = ms::timeOnStream(accessor.stream(), run.options.common.warmup,
                                     run.options.common.iterations, launch);
  }  // timeOnStream waited for the stream: no timed launch writes C any more
  clearOnOwner(run, owner, c);
  {
    const ms::ScopedContext onAccessor(accessor.context());
    launch();
  }
  accessor.synchronize();
  result.check = readBackSum(run, owner, c);
  result.gbps =
      ms::gigabytesPerSecond(3.0 * static_cast<double>(run.bytes), result.kernel.medianMs);
  return result;
}

// Step 5: the same kernel on the accessor's own memory, the reference for both paths.
PathResult runLocalReference(Run& run, const p2p::PeerDevice& accessor) {
  const p2p::ContextBuffer a(accessor.context(), run.bytes);
  const p2p::ContextBuffer b(accessor.context(), run.bytes);
  const p2p::ContextBuffer c(accessor.context(), run.bytes);
  const p2p::SynchronizeOnExit drain({&accessor});  // after the buffers: runs before they go
  return addOnAccessor(run, accessor, accessor, a.get(), b.get(), c.get());
}

// Step 6: memory created on the owner, mapped for owner and accessor by cuMemSetAccess.
PathResult runVmmPath(Run& run, const vmm::DeviceTopology& topology, const p2p::DevicePair& pair) {
  if (const std::optional<std::string> reason = p2p::vmmPathUnavailable(topology, pair)) {
    PathResult skipped;
    skipped.note = *reason;
    return skipped;
  }
  const p2p::PeerDevice& owner = run.endpoints.owner(pair);
  const p2p::PeerDevice& accessor = run.endpoints.accessor(pair);
  const std::vector<int> backing = {owner.ordinal()};
  const std::vector<int> mapping = p2p::vmmMappingDevices(pair);  // {A, B}, or {A} (loopback)
  const auto build = [&] {
    const ms::ScopedContext onOwner(owner.context());
    // One stripe on the owner: reserve, create on the owner, map, set access.
    return vmm::StripedVmmRange(
        vmm::planStripes(run.bytes, vmm::stripedGranularity(backing, mapping), 1, backing),
        mapping);
  };
  const vmm::StripedVmmRange a = build();
  const vmm::StripedVmmRange b = build();
  const vmm::StripedVmmRange c = build();
  // Declared after the ranges, so destroyed before them: whatever ends this scope, an exception
  // thrown after a launch included, the accessor's kernel has finished (and the owner's copies)
  // before the ranges are unmapped under it.
  const p2p::SynchronizeOnExit drain({&accessor, &owner});

  // What the driver says: the owner and the accessor each have read-write on all three ranges.
  std::vector<RangeAccess> access;
  for (const auto& [name, range] : {std::pair{"A", &a}, std::pair{"B", &b}, std::pair{"C", &c}}) {
    RangeAccess seen{name, p2p::readDeviceAccess(range->get(), mapping)};
    for (const std::string& problem : p2p::accessProblems(range->mappingDevices(), seen.views)) {
      run.failures.push_back("pair " + p2p::formatPair(pair) + ", VMM path, range " + name + ": " +
                             problem);
    }
    access.push_back(std::move(seen));
  }
  PathResult result = addOnAccessor(run, owner, accessor, a.get(), b.get(), c.get());
  result.access = std::move(access);
  return result;  // drain, then c, b, a: cuMemUnmap + cuMemAddressFree (the memory goes too)
}

// Step 7: cuMemAlloc memory of the owner's context, reached through cuCtxEnablePeerAccess.
PathResult runClassicPath(Run& run, const p2p::DevicePair& pair) {
  const p2p::PeerDevice& owner = run.endpoints.owner(pair);
  const p2p::PeerDevice& accessor = run.endpoints.accessor(pair);
  const p2p::ContextBuffer a(owner.context(), run.bytes);
  const p2p::ContextBuffer b(owner.context(), run.bytes);
  const p2p::ContextBuffer c(owner.context(), run.bytes);
  const p2p::SynchronizeOnExit drain({&accessor, &owner});  // before the buffers are freed
  // Declared after the buffers: destroyed (access disabled) before they are freed. A loopback
  // pair needs none: one context reaches its own allocations, and cuCtxEnablePeerAccess
  // refuses the current context as its own peer (CUDA_ERROR_INVALID_CONTEXT).
  std::optional<p2p::PeerAccess> access;
  if (p2p::needsPeerAccess(pair))
    access.emplace(accessor, owner);
  PathResult result = addOnAccessor(run, owner, accessor, a.get(), b.get(), c.get());
  result.peerAccessEnabled = access.has_value();
  if (access)
    access->disable();
  return result;
}

std::string gbpsText(double gbps, int precision = 1) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(precision) << gbps;
  return text.str();
}

std::string pathCell(const PathResult& result) {
  if (!result.ran)
    return "skipped";
  std::ostringstream text;
  text << (result.check.mismatches == 0 ? "verified" : "WRONG") << std::setw(9)
       << gbpsText(result.gbps) << " GB/s";
  return text.str();
}

std::optional<double> ratio(const PathResult& top, const PathResult& bottom) {
  if (!top.ran || !bottom.ran || bottom.gbps == 0.0)
    return std::nullopt;
  return top.gbps / bottom.gbps;
}

std::string ratioText(const std::optional<double>& value) {
  return value ? gbpsText(*value, 3) : "-";
}

ms::JsonObject pathJson(const PathResult& result) {
  ms::JsonObject json;
  json.set("ran", result.ran);
  if (!result.ran) {
    json.set("skipped", result.note);
    return json;
  }
  json.set("mismatches", static_cast<std::uint64_t>(result.check.mismatches))
      .set("kernelMedianMs", result.kernel.medianMs)
      .set("kernelGBps", result.gbps);
  if (!result.access.empty()) {
    ms::JsonArray access;
    for (const RangeAccess& range : result.access) {
      for (const p2p::DeviceAccessView& view : range.views) {
        ms::JsonObject item;
        item.set("range", range.range)
            .set("device", view.device)
            .set("access", view.flags ? p2p::accessFlagsName(*view.flags) : view.failure);
        access.addRaw(item.dump());
      }
    }
    json.set("cuMemGetAccess", access);
  }
  return json;
}

// @p where: "pair 0:1, VMM path", "device 1, local reference"...
void recordMismatch(Run& run, const std::string& where, const PathResult& result) {
  if (result.ran && result.check.mismatches > 0)
    run.failures.push_back(where + ": C != A + B. " + ms::describeMismatch(result.check));
}

void runPathTests(Run& run, const vmm::DeviceTopology& topology, std::ostream& out,
                  ms::JsonObject& json) {
  out << "\nPath tests: the owner writes A and B, the accessor's VecAdd_kernel computes C = A + B "
         "in the owner's memory\n(timed), then C is cleared, one more launch writes it and the "
         "owner checks every element.\nGB/s = 3 x buffer / time. Local: the same kernel on three "
         "buffers in the accessor's own memory.\n"
      << "  pair  " << std::left << std::setw(24) << "VMM (cuMemSetAccess)" << std::setw(24)
      << "classic (peer access)" << std::setw(24) << "local (accessor's)" << std::right
      << std::setw(12) << "VMM/classic" << std::setw(11) << "VMM/local" << std::setw(15)
      << "classic/local" << '\n';
  ms::JsonArray rows;
  std::vector<std::string> notes;
  std::map<const p2p::PeerDevice*, PathResult> references;  // one per accessor endpoint
  bool vmmAccessAllReadWrite = true;
  const std::size_t failuresBefore = run.failures.size();
  for (const p2p::DevicePair& pair : run.plan.tested) {
    const p2p::PeerDevice& accessor = run.endpoints.accessor(pair);
    auto reference = references.find(&accessor);
    if (reference == references.end()) {
      reference = references.emplace(&accessor, runLocalReference(run, accessor)).first;
      recordMismatch(run, "device " + std::to_string(accessor.ordinal()) + ", local reference",
                     reference->second);
    }
    const PathResult& local = reference->second;
    const std::size_t failuresBeforeVmm = run.failures.size();
    const PathResult viaVmm = runVmmPath(run, topology, pair);
    if (run.failures.size() != failuresBeforeVmm)
      vmmAccessAllReadWrite = false;  // runVmmPath only records access problems
    const PathResult classic = runClassicPath(run, pair);
    recordMismatch(run, "pair " + p2p::formatPair(pair) + ", VMM path", viaVmm);
    recordMismatch(run, "pair " + p2p::formatPair(pair) + ", classic path", classic);
    if (!viaVmm.ran)
      notes.push_back("pair " + p2p::formatPair(pair) + ": VMM path skipped: " + viaVmm.note);

    out << "  " << std::setw(4) << p2p::formatPair(pair) << "  " << std::left << std::setw(24)
        << pathCell(viaVmm) << std::setw(24) << pathCell(classic) << std::setw(24)
        << pathCell(local) << std::right << std::setw(12) << ratioText(ratio(viaVmm, classic))
        << std::setw(11) << ratioText(ratio(viaVmm, local)) << std::setw(15)
        << ratioText(ratio(classic, local)) << '\n';

    ms::JsonObject row;
    row.set("owner", pair.owner)
        .set("accessor", pair.accessor)
        .set("vmm", pathJson(viaVmm))
        .set("classic", pathJson(classic))
        .set("classicUsedPeerAccess", classic.peerAccessEnabled)
        .set("localReference", pathJson(local));
    for (const auto& [key, value] : {std::pair{"vmmOverClassic", ratio(viaVmm, classic)},
                                     std::pair{"vmmOverLocal", ratio(viaVmm, local)},
                                     std::pair{"classicOverLocal", ratio(classic, local)}}) {
      if (value)
        row.set(key, *value);
    }
    rows.addRaw(row.dump());
  }
  for (const std::string& note : notes)
    out << "  " << note << '\n';
  out << "  VMM: no cuCtxEnablePeerAccess was in effect; cuMemGetAccess on A, B and C: "
      << (vmmAccessAllReadWrite ? "read-write for the owner and the accessor"
                                : "NOT read-write everywhere (see FAILED below)")
      << (notes.empty() ? "" : " (where the path ran)") << ".\n";
  if (run.plan.loopback) {
    out << "  Classic: no cuCtxEnablePeerAccess in a loopback run: the one context reaches its "
           "own allocations,\n  and the driver refuses a context as its own peer "
           "(CUDA_ERROR_INVALID_CONTEXT).\n";
  } else {
    out << "  Classic: cuCtxEnablePeerAccess from the accessor's context, cuCtxDisablePeerAccess "
           "after each pair.\n";
  }
  if (run.failures.size() != failuresBefore)
    out << "  Some checks failed: see FAILED below.\n";
  json.set("paths", rows);
}

// ---------------------------------------------------------------------- step 8: copy bandwidth

// Per endpoint: a source holding the endpoint's own pattern, and a destination.
struct TransferBuffers {
  TransferBuffers(CUcontext context, std::size_t bytes)
      : source(context, bytes), destination(context, bytes) {}
  p2p::ContextBuffer source;
  p2p::ContextBuffer destination;
};

void clearDestination(const Run& run, const p2p::PeerDevice& holder, CUdeviceptr destination) {
  const ms::ScopedContext onHolder(holder.context());
  ms::check(cuMemsetD32Async(destination, p2p::kSentinelWord, run.count, holder.stream()),
            "cuMemsetD32Async");
}

// Reads @p destination back through its holder and checks that it holds the pattern of @p seed.
void verifyDestination(Run& run, const p2p::PeerDevice& holder, CUdeviceptr destination,
                       std::uint32_t seed, const std::string& what) {
  {
    const ms::ScopedContext onHolder(holder.context());
    ms::check(cuMemcpyDtoHAsync(run.scratch.get(), destination, run.bytes, holder.stream()),
              "cuMemcpyDtoHAsync");
  }
  holder.synchronize();
  const p2p::PatternCheck result =
      p2p::checkPattern(static_cast<const std::uint32_t*>(run.scratch.get()), run.count, seed);
  ++run.verifiedTransfers;
  if (!result.passed())
    run.failures.push_back(what + ": " + p2p::describePatternCheck(result));
}

// Times @p copy (enqueued on @p runner's stream, which also holds the destination); then clears
// the destination, runs the copy ONCE more, untimed, and verifies that copy against the pattern
// of @p seed. All on one stream, so each step follows the one before.
ms::TimingStats timeVerifiedCopy(Run& run, const p2p::PeerDevice& runner, CUdeviceptr destination,
                                 std::uint32_t seed, const std::string& what,
                                 const std::function<void()>& copy) {
  ms::TimingStats stats;
  {
    const ms::ScopedContext onRunner(runner.context());
    stats = ms::timeOnStream(runner.stream(), run.options.common.warmup,
                             run.options.common.iterations, copy);
  }
  clearDestination(run, runner, destination);
  {
    const ms::ScopedContext onRunner(runner.context());
    copy();
  }
  verifyDestination(run, runner, destination, seed, what);
  return stats;
}

struct OneWay {
  p2p::DevicePair pair;
  double copyEngineGBps = 0;
  double smGBps = 0;
};

struct BothWays {
  p2p::DevicePair pair;       // owner <= accessor
  double copyEngineGBps = 0;  // aggregate: 2 x bytes / time until both finish
  double smGBps = 0;
};

struct Bandwidth {
  explicit Bandwidth(int devices) : copyEngine(devices), sm(devices) {}
  p2p::DeviceMatrix copyEngine;    // diagonal: the local reference; off-diagonal: peer pairs
  p2p::DeviceMatrix sm;            // same layout
  std::vector<OneWay> oneWay;      // every tested pair, the loopback pair included
  std::vector<BothWays> bothWays;  // once per unordered pair
};

Bandwidth measureBandwidth(Run& run, int deviceCount) {
  const int warmup = run.options.common.warmup;
  const int iterations = run.options.common.iterations;
  const double bytes = static_cast<double>(run.bytes);
  const p2p::PairPlan& plan = run.plan;
  Bandwidth result(deviceCount);

  std::vector<TransferBuffers> buffers;
  buffers.reserve(run.endpoints.size());
  for (std::size_t index = 0; index < run.endpoints.size(); ++index) {
    const p2p::PeerDevice& endpoint = run.endpoints.at(index);
    const TransferBuffers& own = buffers.emplace_back(endpoint.context(), run.bytes);
    p2p::fillPattern(static_cast<std::uint32_t*>(run.scratch.get()), run.count,
                     p2p::sourceSeed(static_cast<int>(index)));
    {
      const ms::ScopedContext onDevice(endpoint.context());
      ms::check(
          cuMemcpyHtoDAsync(own.source.get(), run.scratch.get(), run.bytes, endpoint.stream()),
          "cuMemcpyHtoDAsync");
    }
    endpoint.synchronize();  // the scratch buffer is refilled for the next endpoint
  }
  // Declared after the buffers: on every path out, no copy still runs when they are freed.
  const p2p::SynchronizeOnExit drain(run.endpoints.all());
  const auto seedOf = [](std::size_t endpoint) {
    return p2p::sourceSeed(static_cast<int>(endpoint));
  };

  // The diagonal: a copy inside one device, the reference for every link.
  for (const int ordinal : plan.devices) {
    const std::size_t index = p2p::ownerEndpoint(plan, {ordinal, ordinal});
    const p2p::PeerDevice& device = run.endpoints.at(index);
    const TransferBuffers& own = buffers[index];
    const std::string name = "device " + std::to_string(ordinal);
    const ms::TimingStats engine = timeVerifiedCopy(
        run, device, own.destination.get(), seedOf(index), "copy engine, " + name, [&] {
          ms::check(cuMemcpyDtoDAsync(own.destination.get(), own.source.get(), run.bytes,
                                      device.stream()),
                    "cuMemcpyDtoDAsync");
        });
    const ms::TimingStats kernel = timeVerifiedCopy(
        run, device, own.destination.get(), seedOf(index), "SM copy, " + name,
        [&] { p2p::launchCopy(device, own.destination.get(), own.source.get(), run.count); });
    result.copyEngine.set(ordinal, ordinal, ms::gigabytesPerSecond(bytes, engine.medianMs));
    result.sm.set(ordinal, ordinal, ms::gigabytesPerSecond(bytes, kernel.medianMs));
  }

  // One direction: the accessor pulls the owner's source into its own destination.
  for (const p2p::DevicePair& pair : plan.tested) {
    const std::size_t ownerIndex = p2p::ownerEndpoint(plan, pair);
    const std::size_t accessorIndex = p2p::accessorEndpoint(plan, pair);
    const p2p::PeerDevice& owner = run.endpoints.at(ownerIndex);
    const p2p::PeerDevice& accessor = run.endpoints.at(accessorIndex);
    const CUdeviceptr source = buffers[ownerIndex].source.get();
    const CUdeviceptr destination = buffers[accessorIndex].destination.get();
    const std::string name = "pair " + p2p::formatPair(pair);
    std::optional<p2p::PeerAccess> access;  // none for a loopback pair (one context)
    if (p2p::needsPeerAccess(pair))
      access.emplace(accessor, owner);
    const ms::TimingStats engine = timeVerifiedCopy(
        run, accessor, destination, seedOf(ownerIndex), "copy engine, " + name, [&] {
          // Destination first, each pointer with its own context (the same one in a loopback
          // run); the accessor's stream.
          ms::check(cuMemcpyPeerAsync(destination, accessor.context(), source, owner.context(),
                                      run.bytes, accessor.stream()),
                    "cuMemcpyPeerAsync");
        });
    const ms::TimingStats kernel =
        timeVerifiedCopy(run, accessor, destination, seedOf(ownerIndex), "SM copy, " + name,
                         [&] { p2p::launchCopy(accessor, destination, source, run.count); });
    if (access)
      access->disable();
    OneWay measured{pair, ms::gigabytesPerSecond(bytes, engine.medianMs),
                    ms::gigabytesPerSecond(bytes, kernel.medianMs)};
    if (pair.owner != pair.accessor) {  // a loopback pair would overwrite the diagonal
      result.copyEngine.set(pair.owner, pair.accessor, measured.copyEngineGBps);
      result.sm.set(pair.owner, pair.accessor, measured.smGBps);
    }
    result.oneWay.push_back(measured);
  }

  // Both directions at once: each endpoint pulls the other's source into its own destination.
  for (const p2p::DevicePair& pair : plan.bidirectional) {
    const std::size_t firstIndex = p2p::ownerEndpoint(plan, pair);
    const std::size_t secondIndex = p2p::accessorEndpoint(plan, pair);
    const p2p::PeerDevice& first = run.endpoints.at(firstIndex);
    const p2p::PeerDevice& second = run.endpoints.at(secondIndex);
    const CUdeviceptr firstSource = buffers[firstIndex].source.get();
    const CUdeviceptr firstDestination = buffers[firstIndex].destination.get();
    const CUdeviceptr secondSource = buffers[secondIndex].source.get();
    const CUdeviceptr secondDestination = buffers[secondIndex].destination.get();
    const std::string name = "pair " + p2p::formatBothWays(pair);
    std::optional<p2p::PeerAccess> secondReadsFirst;
    std::optional<p2p::PeerAccess> firstReadsSecond;
    if (p2p::needsPeerAccess(pair)) {
      secondReadsFirst.emplace(second, first);
      firstReadsSecond.emplace(first, second);
    }

    const auto both = [&](const std::string& what, const std::function<void()>& onFirst,
                          const std::function<void()>& onSecond) {
      const ms::TimingStats stats =
          p2p::timeConcurrently(first, second, warmup, iterations, onFirst, onSecond);
      // timeConcurrently waited for both streams. One more round, untimed, into cleared
      // destinations (each cleared on the stream that then writes it), checked on its own.
      clearDestination(run, first, firstDestination);
      clearDestination(run, second, secondDestination);
      {
        const ms::ScopedContext onFirstContext(first.context());
        onFirst();
      }
      {
        const ms::ScopedContext onSecondContext(second.context());
        onSecond();
      }
      verifyDestination(run, first, firstDestination, seedOf(secondIndex),
                        what + ", " + name + ", into endpoint " + std::to_string(firstIndex) +
                            " (device " + std::to_string(first.ordinal()) + ")");
      verifyDestination(run, second, secondDestination, seedOf(firstIndex),
                        what + ", " + name + ", into endpoint " + std::to_string(secondIndex) +
                            " (device " + std::to_string(second.ordinal()) + ")");
      return ms::gigabytesPerSecond(2.0 * bytes, stats.medianMs);
    };
    BothWays measured;
    measured.pair = pair;
    measured.copyEngineGBps = both(
        "copy engine, both ways",
        [&] {
          ms::check(cuMemcpyPeerAsync(firstDestination, first.context(), secondSource,
                                      second.context(), run.bytes, first.stream()),
                    "cuMemcpyPeerAsync");
        },
        [&] {
          ms::check(cuMemcpyPeerAsync(secondDestination, second.context(), firstSource,
                                      first.context(), run.bytes, second.stream()),
                    "cuMemcpyPeerAsync");
        });
    measured.smGBps = both(
        "SM copy, both ways",
        [&] { p2p::launchCopy(first, firstDestination, secondSource, run.count); },
        [&] { p2p::launchCopy(second, secondDestination, firstSource, run.count); });
    if (firstReadsSecond)
      firstReadsSecond->disable();
    if (secondReadsFirst)
      secondReadsFirst->disable();
    result.bothWays.push_back(measured);
  }
  return result;
}

void reportBandwidth(const Run& run, const Bandwidth& bandwidth, std::ostream& out,
                     ms::JsonObject& json) {
  const p2p::DeviceMatrix smOverEngine = p2p::ratioMatrix(bandwidth.sm, bandwidth.copyEngine);
  out << "\nCopy bandwidth, GB/s = bytes copied / time (1 GB = 1e9 B), median of "
      << run.options.common.iterations << ", " << ms::formatBytes(run.bytes)
      << " per copy; each figure's copy was\nrepeated once more into a cleared destination and "
         "checked word by word.\n";
  if (run.plan.loopback) {
    const int device = run.plan.devices.front();
    const auto line = [&](const std::string& what, double engine, double sm) {
      out << "  " << std::left << std::setw(58) << what << std::right << std::setw(12)
          << gbpsText(engine) << std::setw(12) << gbpsText(sm) << std::setw(10)
          << ratioText(engine != 0.0 ? std::optional<double>(sm / engine) : std::nullopt) << '\n';
    };
    out << "LOOPBACK on device " << device
        << ": owner and accessor are the same device. These are LOCAL-MEMORY figures, not "
           "peer-link figures\n(a local copy reads and writes the same memory: its traffic is "
           "twice the bytes copied).\n"
        << "  " << std::left << std::setw(58) << "copy" << std::right << std::setw(12)
        << "copy engine" << std::setw(12) << "SM" << std::setw(10) << "SM / CE" << '\n';
    line("reference: cuMemcpyDtoDAsync / Copy_kernel, one stream",
         *bandwidth.copyEngine.at(device, device), *bandwidth.sm.at(device, device));
    for (const OneWay& measured : bandwidth.oneWay) {
      line("pair " + p2p::formatPair(measured.pair) +
               ": cuMemcpyPeerAsync (one context) / Copy_kernel",
           measured.copyEngineGBps, measured.smGBps);
    }
  } else {
    out << "Rows: from (the owner); columns: to (the accessor, which runs the copy). The "
           "diagonal is a copy\ninside one device, the reference for the links (its memory "
           "traffic is twice the bytes copied).\n"
        << "Copy engine (cuMemcpyPeerAsync; diagonal cuMemcpyDtoDAsync):\n"
        << p2p::formatMatrix(bandwidth.copyEngine, "from", "to", 1)
        << "SM (Copy_kernel on the accessor, reading the owner's memory):\n"
        << p2p::formatMatrix(bandwidth.sm, "from", "to", 1) << "Ratio SM / copy engine:\n"
        << p2p::formatMatrix(smOverEngine, "from", "to", 3);
  }
  if (bandwidth.bothWays.empty()) {
    out << "Both directions at once: no pair is tested both ways, nothing to measure.\n";
  } else {
    out << "Both directions at once (one stream per endpoint, started together; aggregate GB/s "
           "= 2 x bytes / time until\nboth finish"
        << (run.plan.loopback ? "; LOOPBACK: two streams of one device, local memory" : "")
        << "):\n"
        << "  " << std::left << std::setw(8) << "pair" << std::right << std::setw(12)
        << "copy engine" << std::setw(12) << "SM" << '\n';
    for (const BothWays& measured : bandwidth.bothWays) {
      out << "  " << std::left << std::setw(8) << p2p::formatBothWays(measured.pair) << std::right
          << std::setw(12) << gbpsText(measured.copyEngineGBps) << std::setw(12)
          << gbpsText(measured.smGBps) << '\n';
    }
  }

  ms::JsonArray oneWay;
  for (const OneWay& measured : bandwidth.oneWay) {
    ms::JsonObject item;
    item.set("pair", p2p::formatPair(measured.pair))
        .set("copyEngineGBps", measured.copyEngineGBps)
        .set("smCopyGBps", measured.smGBps);
    oneWay.addRaw(item.dump());
  }
  ms::JsonArray engineBoth, smBoth;
  for (const BothWays& measured : bandwidth.bothWays) {
    ms::JsonObject engine, sm;
    engine.set("pair", p2p::formatBothWays(measured.pair))
        .set("aggregateGBps", measured.copyEngineGBps);
    sm.set("pair", p2p::formatBothWays(measured.pair)).set("aggregateGBps", measured.smGBps);
    engineBoth.addRaw(engine.dump());
    smBoth.addRaw(sm.dump());
  }
  json.set("copyEngineGBps", p2p::matrixJson(bandwidth.copyEngine))
      .set("smCopyGBps", p2p::matrixJson(bandwidth.sm))
      .set("smOverCopyEngine", p2p::matrixJson(smOverEngine))
      .set("oneWay", oneWay)
      .set("copyEngineBidirectional", engineBoth)
      .set("smCopyBidirectional", smBoth);
}

// ------------------------------------------------------------------------------- the sample

ms::JsonArray jsonPairs(const std::vector<p2p::DevicePair>& pairs) {
  ms::JsonArray array;
  for (const p2p::DevicePair& pair : pairs)
    array.add(p2p::formatPair(pair));
  return array;
}

void reportLinkFailures(const p2p::LinkMatrix& links, std::ostream& out) {
  for (std::size_t owner = 0; owner < links.size(); ++owner) {
    for (std::size_t accessor = 0; accessor < links[owner].size(); ++accessor) {
      const std::string& failure = links[owner][accessor].failure;
      if (!failure.empty()) {
        out << "  ? owner " << owner << ", accessor " << accessor << ": " << failure
            << " (informative only: the pairs are chosen with cuDeviceCanAccessPeer)\n";
      }
    }
  }
}

ms::Verdict runP2pMemMap(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();
  // Checked before any GPU work so that a typo costs nothing.
  const std::vector<p2p::DevicePair> requested =
      options.pairs.empty() ? std::vector<p2p::DevicePair>{} : p2p::parsePairList(options.pairs);
  p2p::checkLoopbackOptions(options.loopback, requested);

  // 1. Driver and devices; 2. the peer-access matrix. Queries only: nothing is allocated.
  ms::checkDriverInit(cuInit(0));
  const vmm::DeviceTopology topology = vmm::queryDeviceTopology();
  const int deviceCount = topology.deviceCount();
  const p2p::LinkMatrix links = p2p::queryLinkAttributes(deviceCount);
  out << "Devices: " << deviceCount << '\n';
  ms::JsonArray jsonDevices;
  for (int ordinal = 0; ordinal < deviceCount; ++ordinal) {
    CUdevice device = 0;
    ms::check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
    const bool vmmSupported = topology.vmmSupported[static_cast<std::size_t>(ordinal)];
    out << "  " << ordinal << ": " << ms::deviceName(device)
        << (vmmSupported ? "  (VMM supported)" : "  (no VMM)") << '\n';
    ms::JsonObject item;
    item.set("ordinal", ordinal).set("name", ms::deviceName(device)).set("vmm", vmmSupported);
    jsonDevices.addRaw(item.dump());
  }
  out << "Peer access (cuDeviceCanAccessPeer(accessor, owner); rank = "
         "CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,\nA = native atomics, !s = ACCESS_SUPPORTED "
         "disagrees, ? = cuDeviceGetP2PAttribute failed):\n"
      << p2p::formatAccessMatrix(topology, links);
  reportLinkFailures(links, out);
  ms::JsonArray jsonLinks;
  for (int owner = 0; owner < deviceCount; ++owner) {
    for (int accessor = 0; accessor < deviceCount; ++accessor) {
      if (owner == accessor)
        continue;
      const p2p::LinkAttributes& link =
          links[static_cast<std::size_t>(owner)][static_cast<std::size_t>(accessor)];
      ms::JsonObject item;
      item.set("owner", owner)
          .set("accessor", accessor)
          .set("canAccessPeer", static_cast<bool>(topology.canAccessPeer[static_cast<std::size_t>(
                                    accessor)][static_cast<std::size_t>(owner)]));
      if (link.failure.empty()) {
        item.set("performanceRank", link.performanceRank)
            .set("accessSupported", link.accessSupported)
            .set("nativeAtomics", link.nativeAtomics);
      } else {
        item.set("attributeQueryFailed", link.failure);
      }
      jsonLinks.addRaw(item.dump());
    }
  }
  json.set("deviceCount", deviceCount).set("devices", jsonDevices).set("peerAccess", jsonLinks);

  // 3. The pairs; waived here (before any allocation) without two devices that connect.
  p2p::PairPlan plan;
  if (options.loopback) {
    plan = p2p::planLoopback(topology, ms::deviceOrdinal(ms::selectDevice(options.common.device)));
    const int device = plan.devices.front();
    out << "LOOPBACK RUN on device " << device << ": owner == accessor == device " << device
        << ". No peer link is used: every GB/s below is a\nlocal-memory figure, not a peer-link "
           "figure. Two endpoints (two streams of the one primary context) play owner\nand "
           "accessor.\n";
  } else {
    try {
      plan = p2p::planPairs(topology, requested, options.common.device);
    } catch (const ms::WaivedError&) {
      if (deviceCount == 1)
        out << "(With one GPU, --loopback runs every check that one GPU can run.)\n";
      throw;
    }
  }
  out << "Pairs to test (owner:accessor): " << p2p::formatPairList(plan.tested) << '\n';
  if (!plan.lacking.empty())
    out << "Not tested, no peer access: " << p2p::formatPairList(plan.lacking) << '\n';
  json.set("mode", plan.loopback ? "loopback" : "peer")
      .set("pairsTested", jsonPairs(plan.tested))
      .set("pairsWithoutAccess", jsonPairs(plan.lacking));
  if (plan.loopback) {
    json.set("loopbackDevice", plan.devices.front())
        .set("figures", "local memory, not a peer link");
  }

  // 4. One context per device, with the kernels and a stream per endpoint.
  const std::string vectorAddFatbin = ms::locateFatbin(p2p::kVectorAddFatbin);
  const std::string copyFatbin = ms::locateFatbin(p2p::kCopyFatbin);
  out << "Kernels: " << vectorAddFatbin << ", " << copyFatbin << '\n';
  const p2p::Endpoints endpoints(plan, vectorAddFatbin, copyFatbin);
  // Pinned host memory needs a current context but belongs to none in particular: the first
  // endpoint's serves as the base, and every device-specific call pushes its own on top of it.
  const ms::ScopedContext base(endpoints.at(0).context());

  // At most buffersPerDevice() buffers of --size live on one device at a time.
  std::uint64_t freeBytes = UINT64_MAX;
  for (std::size_t index = 0; index < endpoints.size(); ++index)
    freeBytes = std::min<std::uint64_t>(freeBytes, endpoints.at(index).freeBytes());
  const std::uint64_t bytes = ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, freeBytes,
                                                    p2p::buffersPerDevice(plan), sizeof(float));
  out << "Buffers: " << ms::formatBytes(bytes) << " (" << bytes / sizeof(float)
      << " floats) each\n";
  // PORTABLE: pinned for every context, not only the current one, so that each device's copy
  // engine reads and writes it directly.
  ms::OwnedPinnedHostMemory hostA, hostB, scratch;
  for (ms::OwnedPinnedHostMemory* buffer : {&hostA, &hostB, &scratch})
    ms::check(cuMemHostAlloc(buffer->out(), bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  // Declared after the host buffers: no copy still uses them when they are freed.
  const p2p::SynchronizeOnExit drain(endpoints.all());
  Run run{options, plan, endpoints, bytes, bytes / sizeof(float), hostA, hostB, scratch, 0, {}};
  ms::fillVectorAddInputs(static_cast<float*>(hostA.get()), static_cast<float*>(hostB.get()),
                          run.count, 2024);

  // 5. to 7. The reference, the VMM path and the classic path on every pair.
  runPathTests(run, topology, out, json);

  // 8. Copy engine vs SM, one direction and both at once.
  const Bandwidth bandwidth = measureBandwidth(run, deviceCount);
  reportBandwidth(run, bandwidth, out, json);

  out << "Verified transfers: " << run.verifiedTransfers << ", wrong: " << run.failures.size()
      << '\n';
  for (const std::string& failure : run.failures)
    out << "  FAILED: " << failure << '\n';
  if (plan.loopback) {
    out << "Loopback run: the checks above ran on one device; the peer link itself was not "
           "tested.\n";
  }
  ms::JsonArray jsonFailures;
  for (const std::string& failure : run.failures)
    jsonFailures.add(failure);
  json.set("bytesPerBuffer", bytes)
      .set("iterations", options.common.iterations)
      .set("verifiedTransfers", run.verifiedTransfers)
      .set("failures", jsonFailures);
  // 9. Cleanup: RAII, in reverse order of creation.
  return run.failures.empty() ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "p2pMemMap",
      "Maps one GPU's memory into another, with VMM (cuMemSetAccess) and with classic peer access "
      "(cuCtxEnablePeerAccess); a kernel on one device works in the other's memory; measures copy "
      "engine vs SM peer bandwidth, one way and both ways, verifying every transfer. Needs 2 "
      "GPUs with peer access (else WAIVED), or --loopback to run the same checks on one GPU.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per buffer, a multiple of 4 (default 256M, less if memory is short)",
                      options.sizeBytes);
  commandLine.addString("pairs",
                        "ordered pairs to test as OWNER:ACCESSOR, e.g. 0:1,1:0 (default: every "
                        "pair with peer access; with --device: those involving that device)",
                        options.pairs, "LIST");
  commandLine.addFlag("loopback",
                      "one GPU: owner == accessor == the chosen device (--device or the "
                      "fastest); runs every check one GPU can, figures are local-memory figures",
                      options.loopback);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runP2pMemMap(options, report); });
}
