/**
 * @file p2pMemMap.cpp
 * @brief Map one GPU's memory into another: the VMM way (cuMemSetAccess) and the classic way
 *        (cuMemAlloc + cuCtxEnablePeerAccess), a kernel on one device working in another
 *        device's memory, and the peer bandwidth of copy engines and SMs, every transfer checked.
 *
 * Device memory is not demand-paged: a GPU can touch another GPU's memory only once that memory
 * has been mapped into its page tables, and the mapping is made by an explicit call, before any
 * kernel runs. There are two such calls, for two kinds of memory. This sample does both on every
 * pair of devices that the hardware connects, and shows that a kernel then reads and writes the
 * other GPU's memory with ordinary pointers. Read 01_vectorAddDrv first (the kernel and its
 * check) and 02_vectorAddMMAP (the VMM allocator reused here).
 *
 * Words used throughout: a **pair** `A:B` is ordered; the memory lives on the **owner** A and is
 * used by the **accessor** B. In every matrix rows are owners and columns are accessors.
 *
 * 1. **cuInit**; the devices (**cuDeviceGetCount**, **cuDeviceGet**, **cuDeviceGetName**) and
 *    whether each supports VMM (**cuDeviceGetAttribute**
 *    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED).
 * 2. **The peer-access matrix.** **cuDeviceCanAccessPeer(B, A)** says whether B can access A's
 *    memory at all; **cuDeviceGetP2PAttribute** adds the link's performance rank, whether all
 *    atomics are native over it, and ACCESS_SUPPORTED. Access is directional: `0:1` and `1:0`
 *    are asked separately.
 * 3. **The pairs** (p2p_logic.hpp): every ordered pair, or `--pairs`, or those involving
 *    `--device`; the ones without access are named and skipped. With fewer than two GPUs, or no
 *    pair with access, the sample is **WAIVED** here, before anything is allocated.
 * 4. **One context per device**: each device's primary context (**cuDevicePrimaryCtxRetain**),
 *    with the two kernels loaded into it (**cuModuleLoadData**, **cuModuleGetFunction**) and a
 *    stream. Every call below first makes the right context current (**cuCtxPushCurrent** /
 *    **cuCtxPopCurrent**): peer access, modules, streams, events and cuMemAlloc memory all
 *    belong to one context.
 * 5. **The VMM path**, per pair A:B (skipped when a device lacks VMM). A, B and C are each one
 *    range built by 02's StripedVmmRange with backing device {A} and mapping devices {A, B}:
 *    **cuMemAddressReserve**, **cuMemCreate** on A, **cuMemMap**, **cuMemRelease**, and one
 *    **cuMemSetAccess** granting read-write to A and to B. That call is the whole peer setup:
 *    it writes B's page tables for this range. No cuCtxEnablePeerAccess is involved; none is in
 *    effect while this path runs. **cuMemGetAccess** reads back B's right. Then: A writes the
 *    inputs (**cuMemcpyHtoDAsync**) and a sentinel into C (**cuMemsetD32Async**); B's
 *    VecAdd_kernel reads A and B and writes C, all three in A's memory (**cuLaunchKernel**); A
 *    reads C back (**cuMemcpyDtoHAsync**) and every element is compared exactly with A + B.
 *    Then the same launch is timed on B (CUDA events) and C is checked again.
 * 6. **The classic path**, per pair A:B: **cuMemAlloc** three buffers in A's context; with B's
 *    context current, **cuCtxEnablePeerAccess**(A's context) lets B use *every* cuMemAlloc
 *    allocation of A's context; the same kernel, checks and timing; then
 *    **cuCtxDisablePeerAccess** (after **cuCtxSynchronize**: nothing may still use the
 *    mapping). An RAII owner disables the access on every path, error paths included. The two
 *    paths' kernel bandwidths are printed side by side with their ratio.
 * 7. **Copy engine vs SM.** Each device gets a source buffer holding a pattern of its own and a
 *    destination buffer (cuMemAlloc). For each pair A:B, with B granted access to A: the copy
 *    engine (**cuMemcpyPeerAsync**(dst on B, B's context, src on A, A's context, bytes, B's
 *    stream)) and the SMs (Copy_kernel on B reading A's memory) each copy A's source into B's
 *    destination, timed (median of `--iterations`). The diagonal is a copy inside one device
 *    (**cuMemcpyDtoDAsync** and the kernel), the reference every link is read against.
 *    **Bidirectional**: for pairs tested both ways, both directions run at once, one stream per
 *    device, started together and ended together with events (**cuEventRecord**,
 *    **cuStreamWaitEvent** across contexts, **cuEventElapsedTime**); the aggregate GB/s is
 *    reported. Before every measurement the destination is filled with a sentinel, after it the
 *    destination is read back and compared word by word with the source's pattern: every matrix
 *    cell is a verified transfer.
 * 8. **Cleanup** is RAII throughout: peer access disabled, VMM ranges unmapped and freed,
 *    cuMemAlloc memory freed in its own context, modules unloaded and streams destroyed with
 *    their context current, then the primary contexts released (**cuDevicePrimaryCtxRelease**).
 */
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

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
};

// What every step after the setup needs: sizes, options, host buffers, and the running tally.
struct Run {
  const Options& options;
  std::uint64_t bytes = 0;
  std::size_t count = 0;  // floats (and 32-bit words) per buffer
  ms::PinnedHostBuffer& hostA;
  ms::PinnedHostBuffer& hostB;
  ms::PinnedHostBuffer& scratch;  // read-backs and pattern uploads
  int verifiedTransfers = 0;
  std::vector<std::string> failures;
};

std::string accessText(unsigned long long flags) {
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
      return "read-write";
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
      return "read";
    case CU_MEM_ACCESS_FLAGS_PROT_NONE:
      return "none";
    default:
      return "flags " + std::to_string(flags);
  }
}

// --------------------------------------------------------------------- steps 5 and 6: the paths

struct PathResult {
  bool ran = false;
  std::string note;  // why it did not run, or what cuMemGetAccess said
  ms::VectorAddCheck check;
  ms::TimingStats kernel;
  double gbps = 0;
};

// C (in the owner's memory) read back by the owner and compared with A + B.
ms::VectorAddCheck readBackSum(Run& run, const p2p::PeerDevice& owner, CUdeviceptr c) {
  {
    p2p::CurrentContext onOwner(owner.context());
    ms::check(cuMemcpyDtoHAsync(run.scratch.get(), c, run.bytes, owner.stream()),
              "cuMemcpyDtoHAsync");
  }
  owner.synchronize();
  ++run.verifiedTransfers;
  return ms::checkVectorAdd(run.hostA.as<float>(), run.hostB.as<float>(), run.scratch.as<float>(),
                            run.count);
}

void clearOnOwner(const Run& run, const p2p::PeerDevice& owner, CUdeviceptr c) {
  {
    p2p::CurrentContext onOwner(owner.context());
    ms::check(cuMemsetD32Async(c, p2p::kSentinelWord, run.count, owner.stream()),
              "cuMemsetD32Async");
  }
  owner.synchronize();  // the accessor's kernel runs on another stream: it must see this first
}

// The part both paths share, once the accessor can reach a, b and c in the owner's memory: the
// owner writes the inputs, the accessor's kernel computes C = A + B there, the owner reads C
// back. Checked once, then timed, then checked again (C is cleared in between, so the timed
// launches are checked too).
PathResult addOnAccessor(Run& run, const p2p::PeerDevice& owner, const p2p::PeerDevice& accessor,
                         CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  {
    p2p::CurrentContext onOwner(owner.context());
    ms::check(cuMemcpyHtoDAsync(a, run.hostA.get(), run.bytes, owner.stream()),
              "cuMemcpyHtoDAsync");
    ms::check(cuMemcpyHtoDAsync(b, run.hostB.get(), run.bytes, owner.stream()),
              "cuMemcpyHtoDAsync");
  }
  clearOnOwner(run, owner, c);
  const auto launch = [&] {
    ms::launchVectorAdd(accessor.vectorAdd(), accessor.vectorAddGrid(), a, b, c, run.count,
                        accessor.stream());
  };
  {
    p2p::CurrentContext onAccessor(accessor.context());
    launch();
  }
  accessor.synchronize();
  const ms::VectorAddCheck first = readBackSum(run, owner, c);

  clearOnOwner(run, owner, c);
  PathResult result;
  result.ran = true;
  {
    p2p::CurrentContext onAccessor(accessor.context());  // timeOnStream's events join its stream
    result.kernel = ms::timeOnStream(accessor.stream(), run.options.common.warmup,
                                     run.options.common.iterations, launch);
  }
  const ms::VectorAddCheck timed = readBackSum(run, owner, c);
  result.check = first.mismatches > 0 ? first : timed;
  result.gbps =
      ms::gigabytesPerSecond(3.0 * static_cast<double>(run.bytes), result.kernel.medianMs);
  return result;
}

// Step 5: memory created on the owner, mapped for owner and accessor by cuMemSetAccess.
PathResult runVmmPath(Run& run, const vmm::DeviceTopology& topology, const p2p::DevicePair& pair,
                      const p2p::PeerDevice& owner, const p2p::PeerDevice& accessor) {
  if (const std::optional<std::string> reason = p2p::vmmPathUnavailable(topology, pair)) {
    PathResult skipped;
    skipped.note = *reason;
    return skipped;
  }
  vmm::StripedRangeRequest request;
  request.bytes = run.bytes;
  request.backingDevices = {owner.ordinal()};
  request.mappingDevices = {owner.ordinal(), accessor.ordinal()};
  const auto build = [&] {
    p2p::CurrentContext onOwner(owner.context());
    return vmm::StripedVmmRange(request);  // reserve, create on the owner, map, set access
  };
  const vmm::StripedVmmRange a = build();
  const vmm::StripedVmmRange b = build();
  const vmm::StripedVmmRange c = build();

  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = accessor.ordinal();
  unsigned long long flags = 0;
  ms::check(cuMemGetAccess(&flags, &location, a.get()), "cuMemGetAccess");

  PathResult result = addOnAccessor(run, owner, accessor, a.get(), b.get(), c.get());
  result.note = accessText(flags);
  if (flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    run.failures.push_back("pair " + p2p::formatPair(pair) + ", VMM path: cuMemGetAccess says " +
                           result.note + " for device " + std::to_string(accessor.ordinal()) +
                           ", expected read-write");
  }
  return result;  // c, b, a: cuMemUnmap + cuMemAddressFree (the memory goes with the mapping)
}

// Step 6: cuMemAlloc memory of the owner's context, reached through cuCtxEnablePeerAccess.
PathResult runClassicPath(Run& run, const p2p::PeerDevice& owner, const p2p::PeerDevice& accessor) {
  const p2p::ContextBuffer a(owner.context(), run.bytes);
  const p2p::ContextBuffer b(owner.context(), run.bytes);
  const p2p::ContextBuffer c(owner.context(), run.bytes);
  // Declared after the buffers: destroyed (access disabled) before they are freed.
  p2p::PeerAccess access(accessor, owner);
  PathResult result = addOnAccessor(run, owner, accessor, a.get(), b.get(), c.get());
  access.disable();
  return result;
}

std::string pathCell(const PathResult& result) {
  std::ostringstream text;
  if (!result.ran)
    return "skipped";
  text << (result.check.mismatches == 0 ? "verified" : "WRONG") << std::fixed
       << std::setprecision(1) << std::setw(10) << result.gbps << " GB/s";
  return text.str();
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
  return json;
}

void recordMismatch(Run& run, const p2p::DevicePair& pair, const char* path,
                    const PathResult& result) {
  if (result.ran && result.check.mismatches > 0) {
    run.failures.push_back("pair " + p2p::formatPair(pair) + ", " + path + ": C != A + B. " +
                           ms::describeMismatch(result.check));
  }
}

void runPathTests(Run& run, const vmm::DeviceTopology& topology, const p2p::PairPlan& plan,
                  const std::map<int, p2p::PeerDevice>& devices, std::ostream& out,
                  ms::JsonObject& json) {
  out << "\nPath tests: the owner writes A and B, the accessor's VecAdd_kernel computes C = A + B "
         "in the owner's memory,\nthe owner reads C back and checks every element, before and "
         "after the timed launches (GB/s = 3 x buffer / time).\n"
      << "  pair   VMM path (cuMemSetAccess)   classic path (cuCtxEnablePeerAccess)   "
         "VMM / classic\n";
  ms::JsonArray rows;
  std::vector<std::string> notes;
  for (const p2p::DevicePair& pair : plan.tested) {
    const p2p::PeerDevice& owner = devices.at(pair.owner);
    const p2p::PeerDevice& accessor = devices.at(pair.accessor);
    const PathResult viaVmm = runVmmPath(run, topology, pair, owner, accessor);
    const PathResult classic = runClassicPath(run, owner, accessor);
    recordMismatch(run, pair, "VMM path", viaVmm);
    recordMismatch(run, pair, "classic path", classic);
    if (!viaVmm.ran)
      notes.push_back("pair " + p2p::formatPair(pair) + ": VMM path skipped: " + viaVmm.note);

    out << "  " << std::setw(4) << p2p::formatPair(pair) << "   " << std::left << std::setw(28)
        << pathCell(viaVmm) << std::setw(39) << pathCell(classic) << std::right;
    if (viaVmm.ran)
      out << std::fixed << std::setprecision(3) << viaVmm.gbps / classic.gbps;
    else
      out << "-";
    out << '\n';

    ms::JsonObject row;
    row.set("owner", pair.owner).set("accessor", pair.accessor).set("vmm", pathJson(viaVmm));
    if (viaVmm.ran)
      row.set("accessorAccess", viaVmm.note).set("vmmOverClassic", viaVmm.gbps / classic.gbps);
    row.set("classic", pathJson(classic));
    rows.addRaw(row.dump());
  }
  for (const std::string& note : notes)
    out << "  " << note << '\n';
  out << "  VMM: no cuCtxEnablePeerAccess was in effect; cuMemGetAccess gave every accessor "
         "read-write on its VMM range"
      << (notes.empty() ? "" : " (where the path ran)") << ".\n"
      << "  Classic: cuCtxEnablePeerAccess from the accessor's context, cuCtxDisablePeerAccess "
         "after each pair.\n";
  json.set("paths", rows);
}

// --------------------------------------------------------------------- step 7: copy bandwidth

// Per device: a source holding the device's own pattern, and a destination.
struct TransferBuffers {
  TransferBuffers(CUcontext context, std::size_t bytes)
      : source(context, bytes), destination(context, bytes) {}
  p2p::ContextBuffer source;
  p2p::ContextBuffer destination;
};

void clearDestination(const Run& run, const p2p::PeerDevice& holder, CUdeviceptr destination) {
  p2p::CurrentContext onHolder(holder.context());
  ms::check(cuMemsetD32Async(destination, p2p::kSentinelWord, run.count, holder.stream()),
            "cuMemsetD32Async");
}

// Reads @p destination back through its holder and checks that it holds the pattern of @p seed.
void verifyDestination(Run& run, const p2p::PeerDevice& holder, CUdeviceptr destination,
                       std::uint32_t seed, const std::string& what) {
  {
    p2p::CurrentContext onHolder(holder.context());
    ms::check(cuMemcpyDtoHAsync(run.scratch.get(), destination, run.bytes, holder.stream()),
              "cuMemcpyDtoHAsync");
  }
  holder.synchronize();
  const p2p::PatternCheck result =
      p2p::checkPattern(run.scratch.as<std::uint32_t>(), run.count, seed);
  ++run.verifiedTransfers;
  if (!result.passed())
    run.failures.push_back(what + ": " + p2p::describePatternCheck(result));
}

// Clears @p destination, times @p copy (enqueued on @p runner's stream, which also holds the
// destination), then verifies the destination against the pattern of @p seed.
ms::TimingStats timeVerifiedCopy(Run& run, const p2p::PeerDevice& runner, CUdeviceptr destination,
                                 std::uint32_t seed, const std::string& what,
                                 const std::function<void()>& copy) {
  clearDestination(run, runner, destination);  // same stream: ordered before the copies
  ms::TimingStats stats;
  {
    p2p::CurrentContext onRunner(runner.context());
    stats = ms::timeOnStream(runner.stream(), run.options.common.warmup,
                             run.options.common.iterations, copy);
  }
  verifyDestination(run, runner, destination, seed, what);
  return stats;
}

struct Bandwidth {
  explicit Bandwidth(int devices)
      : copyEngine(devices), sm(devices), copyEngineBoth(devices), smBoth(devices) {}
  p2p::DeviceMatrix copyEngine;      // one direction
  p2p::DeviceMatrix sm;              // one direction
  p2p::DeviceMatrix copyEngineBoth;  // both directions at once, aggregate
  p2p::DeviceMatrix smBoth;          // both directions at once, aggregate
};

Bandwidth measureBandwidth(Run& run, int deviceCount, const p2p::PairPlan& plan,
                           const std::map<int, p2p::PeerDevice>& devices) {
  const int warmup = run.options.common.warmup;
  const int iterations = run.options.common.iterations;
  const double bytes = static_cast<double>(run.bytes);
  Bandwidth result(deviceCount);

  std::map<int, TransferBuffers> buffers;
  for (const int ordinal : plan.devices) {
    const p2p::PeerDevice& device = devices.at(ordinal);
    const TransferBuffers& own =
        buffers.try_emplace(ordinal, device.context(), run.bytes).first->second;
    p2p::fillPattern(run.scratch.as<std::uint32_t>(), run.count, p2p::sourceSeed(ordinal));
    {
      p2p::CurrentContext onDevice(device.context());
      ms::check(cuMemcpyHtoDAsync(own.source.get(), run.scratch.get(), run.bytes, device.stream()),
                "cuMemcpyHtoDAsync");
    }
    device.synchronize();  // the scratch buffer is refilled for the next device
  }

  // The diagonal: a copy inside one device, the reference for every link.
  for (const int ordinal : plan.devices) {
    const p2p::PeerDevice& device = devices.at(ordinal);
    const TransferBuffers& own = buffers.at(ordinal);
    const std::uint32_t seed = p2p::sourceSeed(ordinal);
    const std::string name = "device " + std::to_string(ordinal);
    const ms::TimingStats engine =
        timeVerifiedCopy(run, device, own.destination.get(), seed, "copy engine, " + name, [&] {
          ms::check(cuMemcpyDtoDAsync(own.destination.get(), own.source.get(), run.bytes,
                                      device.stream()),
                    "cuMemcpyDtoDAsync");
        });
    const ms::TimingStats kernel = timeVerifiedCopy(
        run, device, own.destination.get(), seed, "SM copy, " + name,
        [&] { p2p::launchCopy(device, own.destination.get(), own.source.get(), run.count); });
    result.copyEngine.set(ordinal, ordinal, ms::gigabytesPerSecond(bytes, engine.medianMs));
    result.sm.set(ordinal, ordinal, ms::gigabytesPerSecond(bytes, kernel.medianMs));
  }

  // One direction: the accessor pulls the owner's source into its own destination.
  for (const p2p::DevicePair& pair : plan.tested) {
    const p2p::PeerDevice& owner = devices.at(pair.owner);
    const p2p::PeerDevice& accessor = devices.at(pair.accessor);
    const CUdeviceptr source = buffers.at(pair.owner).source.get();
    const CUdeviceptr destination = buffers.at(pair.accessor).destination.get();
    const std::uint32_t seed = p2p::sourceSeed(pair.owner);
    const std::string name = "pair " + p2p::formatPair(pair);
    p2p::PeerAccess access(accessor, owner);
    const ms::TimingStats engine =
        timeVerifiedCopy(run, accessor, destination, seed, "copy engine, " + name, [&] {
          // Destination first, each pointer with its own context; the accessor's stream.
          ms::check(cuMemcpyPeerAsync(destination, accessor.context(), source, owner.context(),
                                      run.bytes, accessor.stream()),
                    "cuMemcpyPeerAsync");
        });
    const ms::TimingStats kernel =
        timeVerifiedCopy(run, accessor, destination, seed, "SM copy, " + name,
                         [&] { p2p::launchCopy(accessor, destination, source, run.count); });
    access.disable();
    result.copyEngine.set(pair.owner, pair.accessor,
                          ms::gigabytesPerSecond(bytes, engine.medianMs));
    result.sm.set(pair.owner, pair.accessor, ms::gigabytesPerSecond(bytes, kernel.medianMs));
  }

  // Both directions at once: each device pulls the other's source into its own destination.
  for (const p2p::DevicePair& pair : plan.bidirectional) {
    const p2p::PeerDevice& first = devices.at(pair.owner);
    const p2p::PeerDevice& second = devices.at(pair.accessor);
    const CUdeviceptr firstSource = buffers.at(pair.owner).source.get();
    const CUdeviceptr firstDestination = buffers.at(pair.owner).destination.get();
    const CUdeviceptr secondSource = buffers.at(pair.accessor).source.get();
    const CUdeviceptr secondDestination = buffers.at(pair.accessor).destination.get();
    const std::string name =
        "pair " + std::to_string(pair.owner) + "<->" + std::to_string(pair.accessor);
    p2p::PeerAccess secondReadsFirst(second, first);
    p2p::PeerAccess firstReadsSecond(first, second);

    const auto both = [&](const std::string& what, const std::function<void()>& onFirst,
                          const std::function<void()>& onSecond) {
      clearDestination(run, first, firstDestination);
      clearDestination(run, second, secondDestination);
      const ms::TimingStats stats =
          p2p::timeConcurrently(first, second, warmup, iterations, onFirst, onSecond);
      verifyDestination(run, first, firstDestination, p2p::sourceSeed(pair.accessor),
                        what + ", " + name + ", into device " + std::to_string(pair.owner));
      verifyDestination(run, second, secondDestination, p2p::sourceSeed(pair.owner),
                        what + ", " + name + ", into device " + std::to_string(pair.accessor));
      return ms::gigabytesPerSecond(2.0 * bytes, stats.medianMs);
    };
    const double engine = both(
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
    const double kernel = both(
        "SM copy, both ways",
        [&] { p2p::launchCopy(first, firstDestination, secondSource, run.count); },
        [&] { p2p::launchCopy(second, secondDestination, firstSource, run.count); });
    firstReadsSecond.disable();
    secondReadsFirst.disable();
    for (const auto& [row, column] :
         {std::pair{pair.owner, pair.accessor}, std::pair{pair.accessor, pair.owner}}) {
      result.copyEngineBoth.set(row, column, engine);
      result.smBoth.set(row, column, kernel);
    }
  }
  return result;
}

void reportBandwidth(const Run& run, const Bandwidth& bandwidth, bool anyBidirectional,
                     std::ostream& out, ms::JsonObject& json) {
  const p2p::DeviceMatrix smOverEngine = p2p::ratioMatrix(bandwidth.sm, bandwidth.copyEngine);
  out << "\nCopy bandwidth, GB/s = bytes copied / time (1 GB = 1e9 B), median of "
      << run.options.common.iterations << ", " << ms::formatBytes(run.bytes)
      << " per copy.\nRows: from (the owner); columns: to (the accessor, which runs the copy). "
         "The diagonal is a copy\ninside one device, the reference for the links (its memory "
         "traffic is twice the bytes copied).\n"
      << "Copy engine (cuMemcpyPeerAsync; diagonal cuMemcpyDtoDAsync):\n"
      << p2p::formatMatrix(bandwidth.copyEngine, "from", "to", 1)
      << "SM (Copy_kernel on the accessor, reading the owner's memory):\n"
      << p2p::formatMatrix(bandwidth.sm, "from", "to", 1) << "Ratio SM / copy engine:\n"
      << p2p::formatMatrix(smOverEngine, "from", "to", 3);
  if (anyBidirectional) {
    out << "Both directions at once (one stream per device, aggregate GB/s = 2 x bytes / time "
           "until both finish):\n"
        << "Copy engine:\n"
        << p2p::formatMatrix(bandwidth.copyEngineBoth, "from", "to", 1) << "SM:\n"
        << p2p::formatMatrix(bandwidth.smBoth, "from", "to", 1);
  } else {
    out << "Both directions at once: no pair is tested both ways, nothing to measure.\n";
  }
  json.set("copyEngineGBps", p2p::matrixJson(bandwidth.copyEngine))
      .set("smCopyGBps", p2p::matrixJson(bandwidth.sm))
      .set("smOverCopyEngine", p2p::matrixJson(smOverEngine))
      .set("copyEngineBidirectionalGBps", p2p::matrixJson(bandwidth.copyEngineBoth))
      .set("smCopyBidirectionalGBps", p2p::matrixJson(bandwidth.smBoth));
}

// ------------------------------------------------------------------------------- the sample

ms::JsonArray jsonPairs(const std::vector<p2p::DevicePair>& pairs) {
  ms::JsonArray array;
  for (const p2p::DevicePair& pair : pairs)
    array.add(p2p::formatPair(pair));
  return array;
}

ms::Verdict runP2pMemMap(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();
  // Checked before any GPU work so that a typo costs nothing.
  const std::vector<p2p::DevicePair> requested =
      options.pairs.empty() ? std::vector<p2p::DevicePair>{} : p2p::parsePairList(options.pairs);

  // 1. Driver and devices; 2. the peer-access matrix. Queries only: nothing is allocated.
  ms::initDriver();
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
         "disagrees):\n"
      << p2p::formatAccessMatrix(topology, links);
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
                                    accessor)][static_cast<std::size_t>(owner)]))
          .set("performanceRank", link.performanceRank)
          .set("accessSupported", link.accessSupported)
          .set("nativeAtomics", link.nativeAtomics);
      jsonLinks.addRaw(item.dump());
    }
  }
  json.set("deviceCount", deviceCount).set("devices", jsonDevices).set("peerAccess", jsonLinks);

  // 3. The pairs; waived here (before any allocation) without two devices that connect.
  const p2p::PairPlan plan = p2p::planPairs(topology, requested, options.common.device);
  out << "Pairs to test (owner:accessor): " << p2p::formatPairList(plan.tested) << '\n';
  if (!plan.lacking.empty())
    out << "Not tested, no peer access: " << p2p::formatPairList(plan.lacking) << '\n';
  json.set("pairsTested", jsonPairs(plan.tested))
      .set("pairsWithoutAccess", jsonPairs(plan.lacking));

  // 4. One context per device, with its kernels and stream.
  const std::string vectorAddFatbin = ms::locateFatbin(ms::kVectorAddFatbin);
  const std::string copyFatbin = ms::locateFatbin(p2p::kCopyFatbin);
  out << "Kernels: " << vectorAddFatbin << ", " << copyFatbin << '\n';
  std::map<int, p2p::PeerDevice> devices;
  for (const int ordinal : plan.devices)
    devices.try_emplace(ordinal, ordinal, vectorAddFatbin, copyFatbin);
  // Pinned host memory needs a current context but belongs to none in particular: the first
  // device's serves as the base, and every device-specific call pushes its own on top of it.
  const p2p::CurrentContext base(devices.begin()->second.context());

  // Three buffers of --size exist at most on one device at a time (the paths' A, B and C).
  std::uint64_t freeBytes = UINT64_MAX;
  for (const auto& [ordinal, device] : devices)
    freeBytes = std::min<std::uint64_t>(freeBytes, device.freeBytes());
  const std::uint64_t bytes =
      ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, freeBytes, 3, sizeof(float));
  out << "Buffers: " << ms::formatBytes(bytes) << " (" << bytes / sizeof(float)
      << " floats) each\n";
  // PORTABLE: pinned for every context, not only the current one, so that each device's copy
  // engine reads and writes it directly.
  ms::PinnedHostBuffer hostA(bytes, CU_MEMHOSTALLOC_PORTABLE);
  ms::PinnedHostBuffer hostB(bytes, CU_MEMHOSTALLOC_PORTABLE);
  ms::PinnedHostBuffer scratch(bytes, CU_MEMHOSTALLOC_PORTABLE);
  Run run{options, bytes, bytes / sizeof(float), hostA, hostB, scratch, 0, {}};
  ms::fillVectorAddInputs(hostA.as<float>(), hostB.as<float>(), run.count, 2024);

  // 5. and 6. The VMM path and the classic path on every pair.
  runPathTests(run, topology, plan, devices, out, json);

  // 7. Copy engine vs SM, one direction and both at once.
  const Bandwidth bandwidth = measureBandwidth(run, deviceCount, plan, devices);
  reportBandwidth(run, bandwidth, !plan.bidirectional.empty(), out, json);

  out << "Verified transfers: " << run.verifiedTransfers << ", wrong: " << run.failures.size()
      << '\n';
  for (const std::string& failure : run.failures)
    out << "  FAILED: " << failure << '\n';
  ms::JsonArray jsonFailures;
  for (const std::string& failure : run.failures)
    jsonFailures.add(failure);
  json.set("bytesPerBuffer", bytes)
      .set("iterations", options.common.iterations)
      .set("verifiedTransfers", run.verifiedTransfers)
      .set("failures", jsonFailures);
  // 8. Cleanup: RAII, in reverse order of creation.
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
      "GPUs with peer access (else WAIVED).");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per buffer, a multiple of 4 (default 256M, less if memory is short)",
                      options.sizeBytes);
  commandLine.addString("pairs",
                        "ordered pairs to test as OWNER:ACCESSOR, e.g. 0:1,1:0 (default: every "
                        "pair with peer access; with --device: those involving that device)",
                        options.pairs, "LIST");
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runP2pMemMap(options, report); });
}
