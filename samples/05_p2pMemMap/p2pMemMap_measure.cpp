// What 05_p2pMemMap prepares, measures and reports (see p2pMemMap_measure.hpp).
#include "p2pMemMap_measure.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <ostream>
#include <set>
#include <utility>

#include "support/peer_topology.hpp"
#include "support/text_format.hpp"
#include "support/timing.hpp"

namespace memsamples::p2p {
namespace {

constexpr std::uint64_t kDefaultBytes = 512ull << 20;  // per buffer: nvbandwidth's default

std::string ratioText(const std::optional<double>& value) {
  return value ? format("%.3f", *value) : "-";
}

JsonArray jsonPairs(const std::vector<DevicePair>& pairs) {
  JsonArray array;
  for (const DevicePair& pair : pairs)
    array.add(formatPair(pair));
  return array;
}

void inContext(const Endpoint& endpoint, const std::function<void()>& work) {
  const ScopedContext current(endpoint.ctx);
  work();
}

// ------------------------------------------------------------------------------------ the paths

std::string pathCell(const PathResult& result) {
  if (!result.ran)  // a classic path that asked for peer access was refused it
    return result.peerAccessEnabled ? "refused" : "skipped";
  const std::string verdict = result.check.mismatches == 0 ? "verified" : "WRONG";
  return verdict + format("%9.1f GB/s", result.gbps);
}

std::optional<double> ratio(const PathResult& top, const PathResult& bottom) {
  if (!top.ran || !bottom.ran || bottom.gbps == 0.0)
    return std::nullopt;
  return top.gbps / bottom.gbps;
}

JsonObject pathJson(const PathResult& result) {
  JsonObject json;
  json.set("ran", result.ran);
  if (!result.ran)
    return json.set("skipped", result.note);
  json.set("mismatches", static_cast<std::uint64_t>(result.check.mismatches));
  json.set("kernelMedianMs", result.kernel.medianMs).set("kernelGBps", result.gbps);
  JsonArray access;
  for (const RangeAccess& range : result.access) {
    for (const DeviceAccessView& view : range.views) {
      JsonObject item;
      item.set("range", range.range).set("device", view.device);
      item.set("access", view.flags ? accessFlagsName(*view.flags) : view.failure);
      access.addRaw(item.dump());
    }
  }
  if (!access.empty())
    json.set("cuMemGetAccess", access);
  return json;
}

// ------------------------------------------------------------------ timing and checking, shared

void synchronize(const Endpoint& endpoint) {
  const ScopedContext current(endpoint.ctx);
  check(cuStreamSynchronize(endpoint.stream.get()), "cuStreamSynchronize");
}

// @p holder fills @p target (Run::bytes of its memory) with kSentinelWord, queued on its stream, so
// that a transfer that writes nothing cannot pass its check.
void clear(const Run& run, const Endpoint& holder, CUdeviceptr target) {
  const ScopedContext current(holder.ctx);
  check(cuMemsetD32Async(target, kSentinelWord, run.count, holder.stream.get()),
        "cuMemsetD32Async");
}

// @p holder copies @p target (Run::bytes of its memory) into Run::scratch and waits for it.
void readBack(Run& run, const Endpoint& holder, CUdeviceptr target) {
  const ScopedContext current(holder.ctx);
  check(cuMemcpyDtoHAsync(run.scratch.get(), target, run.bytes, holder.stream.get()),
        "cuMemcpyDtoHAsync");
  check(cuStreamSynchronize(holder.stream.get()), "cuStreamSynchronize");
}

// Every measurement, the kernel of a path and each copy alike: @p once queued on @p worker's
// stream, @p perSample times per timed sample, --warmup untimed samples and --iterations timed
// ones. The timed runs all write the same @p target, so only a run checked on its own proves the
// figure's transfer right: then @p holder (the endpoint whose memory holds @p target) clears it,
// @p once runs ONE more time, and @p holder reads @p target back into Run::scratch, which the
// caller compares with what it must hold.
TimingStats timeThenRerun(Run& run, const Endpoint& worker, const Endpoint& holder,
                          CUdeviceptr target, int perSample, const std::function<void()>& once) {
  const auto sample = [&] {
    for (int i = 0; i < perSample; ++i)
      once();
  };
  TimingStats stats;
  inContext(worker, [&] {
    stats = timeOnStream(worker.stream.get(), run.options.warmup, run.options.iterations, sample);
  });  // timeOnStream waited for the stream: no timed run writes the target any more
  clear(run, holder, target);
  synchronize(holder);  // the worker's run may be queued on another stream: it must see it cleared
  inContext(worker, once);
  synchronize(worker);
  readBack(run, holder, target);
  return stats;
}

// Compares Run::scratch, a destination read back, word by word with @p from's pattern.
void checkCopied(Run& run, const Endpoint& from, const std::string& what) {
  const auto* words = static_cast<const std::uint32_t*>(run.scratch.get());
  const PatternCheck result = checkPattern(words, run.count, from.seed());
  ++run.verifiedTransfers;
  if (!result.passed())
    run.failures.push_back(what + ": " + describePatternCheck(result));
}

// ----------------------------------------------------------------------------------- the copies

// [peer-copies]
// A copy engine copies @p from's source into @p to's destination, queued on @p to's stream:
// destination first, each pointer with its context; the stream decides who runs the copy. An
// endpoint that copies its own source (the diagonal, the reference for the links) copies inside
// its device.
void copyEngineCopy(const Run& run, const Endpoint& to, const Endpoint& from) {
  if (&to == &from) {
    check(cuMemcpyDtoDAsync(to.destination.get(), to.source.get(), run.bytes, to.stream.get()),
          "cuMemcpyDtoDAsync");
    return;
  }
  check(cuMemcpyPeerAsync(to.destination.get(), to.ctx, from.source.get(), from.ctx, run.bytes,
                          to.stream.get()),
        "cuMemcpyPeerAsync");
}

// The SMs of @p to copy @p from's source (any memory @p to can reach: a peer's through peer
// access) into @p to's destination: Copy_kernel(float* dst, const float* src, n).
void smCopy(const Run& run, const Endpoint& to, const Endpoint& from) {
  CUdeviceptr destination = to.destination.get();
  CUdeviceptr source = from.source.get();
  unsigned long long words = run.count;
  void* args[] = {&destination, &source, &words};
  check(cuLaunchKernel(to.copy, to.copyGrid, 1, 1, kThreadsPerBlock, 1, 1, 0, to.stream.get(), args,
                       nullptr),
        "cuLaunchKernel");
}
// [peer-copies]

// The whole buffer seen as a volume, for the 3D peer copies: rows of rowBytes, split into
// `layers` layers of layerRows rows. The row and the layer count are the largest powers of two
// up to 64 KiB and 64 that divide what they cut (a buffer is whole 32-bit words, so a row is at
// least 4 bytes), so the volume holds every byte, in at most 64 layers whatever the size.
struct Volume3D {
  std::size_t rowBytes = 4;
  std::size_t layerRows = 1;
  std::size_t layers = 1;
};

Volume3D volumeOf(std::size_t bytes) {
  const auto largestPowerOfTwo = [](std::size_t value, std::size_t cap) {
    std::size_t power = 1;
    while (power * 2 <= cap && value % (power * 2) == 0)
      power *= 2;
    return power;
  };
  Volume3D volume;
  volume.rowBytes = largestPowerOfTwo(bytes, 64 << 10);
  const std::size_t rows = bytes / volume.rowBytes;
  volume.layers = largestPowerOfTwo(rows, 64);
  volume.layerRows = rows / volume.layers;
  return volume;
}

// [peer-twins]
// cuMemcpyPeer, the synchronous twin of cuMemcpyPeerAsync, and the 3D peer copies
// cuMemcpy3DPeer and cuMemcpy3DPeerAsync, once each: @p from's source into @p to's
// destination, cleared before and checked word by word after, like every copy above.
// cuMemcpyPeer and cuMemcpy3DPeer take no stream (they run on the default stream) and are
// \note_sync in cuda.h; cuMemcpy3DPeerAsync takes @p to's stream. The 3D forms name each
// pointer's context in a CUDA_MEMCPY3D_PEER and walk the buffer as layers of rows. Returns
// the host's time in each call, "call 1.234 ms" each.
std::string runPeerTwins(Run& run, const Endpoint& to, const Endpoint& from,
                         const std::string& name) {
  const CUdeviceptr destination = to.destination.get();
  const Volume3D shape = volumeOf(run.bytes);
  CUDA_MEMCPY3D_PEER volume{};
  volume.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  volume.srcDevice = from.source.get();
  volume.srcContext = from.ctx;
  volume.srcPitch = shape.rowBytes;
  volume.srcHeight = shape.layerRows;
  volume.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  volume.dstDevice = destination;
  volume.dstContext = to.ctx;
  volume.dstPitch = shape.rowBytes;
  volume.dstHeight = shape.layerRows;
  volume.WidthInBytes = shape.rowBytes;
  volume.Height = shape.layerRows;
  volume.Depth = shape.layers;

  const std::vector<std::pair<std::string, std::function<CUresult()>>> twins = {
      {"cuMemcpyPeer",
       [&] { return cuMemcpyPeer(destination, to.ctx, from.source.get(), from.ctx, run.bytes); }},
      {"cuMemcpy3DPeer", [&] { return cuMemcpy3DPeer(&volume); }},
      {"cuMemcpy3DPeerAsync", [&] { return cuMemcpy3DPeerAsync(&volume, to.stream.get()); }},
  };
  std::string times;
  for (const auto& twin : twins) {
    const std::string& call = twin.first;
    // The sentinels land first: a copy on the default stream need not wait for to's stream.
    clear(run, to, destination);
    synchronize(to);

    double callMs = 0;
    inContext(to, [&] {
      const auto start = std::chrono::steady_clock::now();
      check(twin.second(), call.c_str());
      const auto end = std::chrono::steady_clock::now();
      callMs = std::chrono::duration<double, std::milli>(end - start).count();
    });

    // A copy between device memories may return before it is done: wait for every stream of
    // both contexts before reading the destination back.
    for (const Endpoint* side : {&to, &from})
      inContext(*side, [] { check(cuCtxSynchronize(), "cuCtxSynchronize"); });
    readBack(run, to, destination);
    checkCopied(run, from, call + name);
    times += (times.empty() ? "" : ", ") + call + format(" %.3f ms", callMs);
  }
  return times;
}
// [peer-twins]

using Copy = void (*)(const Run& run, const Endpoint& to, const Endpoint& from);

// One direction, @p to pulling @p from's source into its own destination with @p copy:
// kCopiesPerSample copies per sample on @p to's stream (which also holds the destination), the
// destination then checked after one more copy. @return GB/s.
double timeOneWay(Run& run, const Endpoint& to, const Endpoint& from, const std::string& what,
                  Copy copy) {
  const CUdeviceptr destination = to.destination.get();
  const TimingStats stats =
      timeThenRerun(run, to, to, destination, kCopiesPerSample, [&] { copy(run, to, from); });
  checkCopied(run, from, what);
  return sampleGBps(run.bytes, kCopiesPerSample, stats.medianMs);
}

// Both directions at once, each a loop of kCopiesPerSample copies on its own endpoint's stream.
// Per sample: the first stream records the start, the second waits for it (across contexts) and
// records its own; the two loops are queued interleaved, so the second's first copy is queued
// right after the first's; each stream records its end, and the first waits for the second's end
// before recording "both done". Events are recorded on streams of their own context. The host
// waits after each sample, so that neither queue ever fills up and stalls the other stream.
// Then one more round, untimed, into cleared destinations (each cleared on the stream that then
// writes it), checked on its own.
BothWaysFigures timeBothWays(Run& run, const Endpoint& first, const Endpoint& second,
                             const std::string& what, Copy copy) {
  const auto round = [&] {
    inContext(first, [&] { copy(run, first, second); });
    inContext(second, [&] { copy(run, second, first); });
  };
  for (int i = 0; i < run.options.warmup * kCopiesPerSample; ++i)
    round();
  synchronize(first);  // no warm-up copy overlaps a sample
  synchronize(second);
  const auto timingEvent = [](const Endpoint& endpoint) {
    ContextEvent event(endpoint.ctx);
    const ScopedContext current(endpoint.ctx);
    check(cuEventCreate(event.out(), CU_EVENT_DEFAULT), "cuEventCreate");
    return event;
  };
  const ContextEvent firstStart = timingEvent(first), firstEnd = timingEvent(first),
                     bothDone = timingEvent(first);
  const ContextEvent secondStart = timingEvent(second), secondEnd = timingEvent(second);
  const auto record = [](const ContextEvent& event, const Endpoint& on) {
    check(cuEventRecord(event.get(), on.stream.get()), "cuEventRecord");
  };
  const auto elapsed = [](const ContextEvent& start, const ContextEvent& end) {
    float ms = 0;
    check(cuEventElapsedTime(&ms, start.get(), end.get()), "cuEventElapsedTime");
    return static_cast<double>(ms);
  };
  std::vector<double> intoFirstMs, intoSecondMs, bothDoneMs;
  for (int sample = 0; sample < run.options.iterations; ++sample) {
    inContext(first, [&] { record(firstStart, first); });
    inContext(second, [&] {
      check(cuStreamWaitEvent(second.stream.get(), firstStart.get(), 0), "cuStreamWaitEvent");
      record(secondStart, second);
    });
    for (int i = 0; i < kCopiesPerSample; ++i)
      round();
    inContext(second, [&] { record(secondEnd, second); });
    inContext(first, [&] {
      record(firstEnd, first);
      check(cuStreamWaitEvent(first.stream.get(), secondEnd.get(), 0), "cuStreamWaitEvent");
      record(bothDone, first);
    });
    synchronize(first);
    synchronize(second);
    intoFirstMs.push_back(elapsed(firstStart, firstEnd));
    intoSecondMs.push_back(elapsed(secondStart, secondEnd));
    bothDoneMs.push_back(elapsed(firstStart, bothDone));
  }
  clear(run, first, first.destination.get());
  clear(run, second, second.destination.get());
  round();
  for (const auto& [into, from] : {std::pair{&first, &second}, std::pair{&second, &first}}) {
    readBack(run, *into, into->destination.get());
    checkCopied(run, *from,
                what + ", into endpoint " + std::to_string(into->index) + " (device " +
                    std::to_string(into->ordinal) + ")");
  }
  const auto median = [](std::vector<double>& ms) {
    return summarizeTimings(std::move(ms)).medianMs;
  };
  return countBothWays(run.bytes, kCopiesPerSample, median(intoFirstMs), median(intoSecondMs),
                       median(bothDoneMs));
}

// A row of the loopback run's copy table: the copy, copy engine and SM GB/s, their ratio.
std::string copyRow(const std::string& what, double engine, double sm) {
  const auto smOverEngine = engine != 0.0 ? std::optional<double>(sm / engine) : std::nullopt;
  // printf pads each column: "%-58s" left-aligned, the numbers right-aligned.
  return format("  %-58s%12.1f%12.1f%10s\n", what.c_str(), engine, sm,
                ratioText(smOverEngine).c_str());
}

JsonObject bothWaysJson(const DevicePair& pair, const BothWaysFigures& figures) {
  // The first endpoint (the pair's owner) pulls from the second: that direction is the pair
  // accessor:owner.
  JsonObject intoFirst, intoSecond, json;
  intoFirst.set("pair", formatPair({pair.accessor, pair.owner})).set("GBps", figures.firstGBps);
  intoSecond.set("pair", formatPair(pair)).set("GBps", figures.secondGBps);
  JsonArray directions;
  directions.addRaw(intoFirst.dump()).addRaw(intoSecond.dump());
  json.set("pair", formatBothWays(pair)).set("sumGBps", figures.sumGBps);
  return json.set("aggregateGBps", figures.bothDoneGBps).set("directions", directions);
}

// Step 3's look at each device a peer run may use (every device, or those --pairs lists): its
// compute mode, and unless that forbids a context, its free memory, asked in its primary context
// (retained for the question and released again: step 4's endpoints retain it once more). A
// device nobody named that refuses the context as busy (CUDA_ERROR_DEVICE_UNAVAILABLE: another
// process holds it in EXCLUSIVE_PROCESS mode; CUDA_ERROR_OUT_OF_MEMORY) is noted for
// chooseDevices(); a named one fails as the endpoint would (PrimaryContext).
std::vector<DeviceState> surveyDevices(const Request& request, int count) {
  std::vector<DeviceState> states;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    DeviceState state;
    state.ordinal = ordinal;
    for (const DevicePair& pair : request.pairs)
      if (pair.owner == ordinal || pair.accessor == ordinal)
        state.namedBy = "--pairs";
    if (request.device && *request.device == ordinal)
      state.namedBy = "--device";
    if (!request.pairs.empty() && state.namedBy.empty())
      continue;  // in no pair of --pairs
    CUdevice device = 0;
    check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
    state.computeMode = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    if (contextForbidden(state).empty()) {
      try {
        const PrimaryContext context(device);
        const ScopedContext current(context.get());
        std::size_t freeBytes = 0, total = 0;
        check(cuMemGetInfo(&freeBytes, &total), "cuMemGetInfo");
        state.freeBytes = freeBytes;
      } catch (const CudaError& error) {
        const CUresult result = error.result();
        const bool busy =
            result == CUDA_ERROR_DEVICE_UNAVAILABLE || result == CUDA_ERROR_OUT_OF_MEMORY;
        if (!busy || !state.namedBy.empty())
          throw;
        state.contextRefused = error.what();
      }
    }
    states.push_back(state);
  }
  return states;
}

}  // namespace

// -------------------------------------------------------------------------- machine and pairs

PairPlan choosePairs(const Request& request, const DeviceTopology& topology, Report& report) {
  const int count = topology.deviceCount();
  checkRequestedDevices(count, request.pairs, request.device);  // a typo is no waiver
  std::ostream& out = report.out();
  JsonObject& json = report.json();
  out << "Devices: " << count << '\n';
  JsonArray jsonDevices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    const bool vmm = topology.vmmSupported[std::size_t(ordinal)];
    CUdevice device = 0;
    check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
    const std::string name = deviceName(device);
    out << "  " << ordinal << ": " << name << (vmm ? "  (VMM supported)" : "  (no VMM)") << '\n';
    JsonObject item;
    jsonDevices.addRaw(item.set("ordinal", ordinal).set("name", name).set("vmm", vmm).dump());
  }
  // What the driver says of each ordered pair's link, asked as cuDeviceCanAccessPeer is:
  // accessor first. Informative: the pairs are chosen with cuDeviceCanAccessPeer.
  const LinkMatrix links = queryPeerLinks(count);
  JsonArray jsonLinks;
  out << describePeerLinks(topology, links, jsonLinks);
  const auto unanswered = [](const std::vector<LinkAttributes>& row) {
    return std::any_of(row.begin(), row.end(), [](const LinkAttributes& link) {
      return !link.failure.empty();
    });
  };
  if (std::any_of(links.begin(), links.end(), unanswered))
    out << "  (? is informative only: the pairs are chosen with cuDeviceCanAccessPeer)\n";
  json.set("deviceCount", count).set("devices", jsonDevices).set("peerAccess", jsonLinks);

  // Which GPUs take part: one the options do not name is left out, with the reason, where its
  // compute mode forbids a context, it refused one, or it lacks the memory for the buffers.
  std::vector<LeftOutDevice> leftOut;
  if (!request.loopback && count >= 2) {
    leftOut = chooseDevices(surveyDevices(request, count), request.size, kDefaultBytes).leftOut;
    JsonArray jsonLeftOut;
    for (const LeftOutDevice& left : leftOut) {
      out << "Left out: " << left.reason << '\n';
      JsonObject item;
      jsonLeftOut.addRaw(item.set("device", left.ordinal).set("reason", left.reason).dump());
    }
    json.set("devicesLeftOut", jsonLeftOut);
  }

  PairPlan plan;
  if (request.loopback) {
    plan = planLoopback(topology, deviceOrdinal(selectDevice(request.device)));
  } else {
    try {
      plan = planPairs(topology, request.pairs, request.device, leftOut);
    } catch (const WaivedError&) {
      if (count == 1)
        out << "(With one GPU, --loopback runs every check that one GPU can run.)\n";
      throw;
    }
  }
  const int device = plan.devices.front();
  if (plan.loopback) {
    out << "LOOPBACK RUN on device " << device << ": owner == accessor == device " << device
        << ". No peer link is used: every GB/s below is a\nlocal-memory figure, not a peer-link "
           "figure. Two endpoints (two streams of the one primary context) play owner\nand "
           "accessor.\n";
  }
  out << "Pairs to test (owner:accessor): " << formatPairList(plan.tested) << '\n';
  if (!plan.lacking.empty())
    out << "Not tested, no peer access: " << formatPairList(plan.lacking) << '\n';
  json.set("mode", plan.loopback ? "loopback" : "peer").set("pairsTested", jsonPairs(plan.tested));
  json.set("pairsWithoutAccess", jsonPairs(plan.lacking));
  if (plan.loopback)
    json.set("loopbackDevice", device).set("figures", "local memory, not a peer link");
  return plan;
}

// ------------------------------------------------------------------------------ the run's setup

void prepareRun(Run& run, const std::optional<std::uint64_t>& size, std::ostream& out) {
  const std::string vectorAddPath = locateFatbin("vectorAdd_kernel.fatbin");
  const std::string copyPath = locateFatbin("copy_kernel.fatbin");
  out << "Kernels: " << vectorAddPath << ", " << copyPath << '\n';
  const std::vector<char> vectorAdd = readBinaryFile(vectorAddPath);
  const std::vector<char> copy = readBinaryFile(copyPath);
  std::size_t freeBytes = SIZE_MAX;
  // [endpoints]
  for (Endpoint& endpoint : run.endpoints.all) {
    const ScopedContext current(endpoint.ctx);  // modules and streams belong to a context
    check(cuModuleLoadData(endpoint.vectorAddModule.out(), vectorAdd.data()), "cuModuleLoadData");
    check(cuModuleGetFunction(&endpoint.vectorAdd, endpoint.vectorAddModule.get(), "VecAdd_kernel"),
          "cuModuleGetFunction");
    check(cuModuleLoadData(endpoint.copyModule.out(), copy.data()), "cuModuleLoadData");
    check(cuModuleGetFunction(&endpoint.copy, endpoint.copyModule.get(), "Copy_kernel"),
          "cuModuleGetFunction");
    check(cuStreamCreate(endpoint.stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    endpoint.copyGrid =
        residentGridSize(endpoint.copy, *endpoint.context.device(), kThreadsPerBlock);
    std::size_t freeHere = 0, total = 0;
    check(cuMemGetInfo(&freeHere, &total), "cuMemGetInfo");
    freeBytes = std::min(freeBytes, freeHere);
  }
  // [endpoints]
  const int buffers = buffersPerDevice(run.plan);
  const std::uint64_t deviceBytes =
      chooseBufferBytes(size, kDefaultBytes, freeBytes, buffers, sizeof(float));
  run.bytes = fitHostMemory(size, deviceBytes, 3, sizeof(float));
  run.count = run.bytes / sizeof(float);
  run.vectorAddGrid = blocksToCover(run.count, 4 * kThreadsPerBlock);  // a float4 per thread
  out << "Buffers: " << formatBytes(run.bytes) << " (" << run.count << " floats) each\n";
  // Pinned host memory needs a current context. With unified addressing every context can reach
  // it anyway; PORTABLE makes every context also treat it as pinned, so copies skip staging.
  const ScopedContext base(run.endpoints.all.front().ctx);
  for (OwnedPinnedHostMemory* buffer : {&run.hostA, &run.hostB, &run.scratch})
    check(cuMemHostAlloc(buffer->out(), run.bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  for (const Endpoint& endpoint : run.endpoints.all)  // no copy uses the buffers as they are freed
    run.drain.endpoints.push_back(&endpoint);
  for (const DevicePair& pair : run.plan.tested) {
    PairPaths& row = run.paths.emplace_back();
    row.pair = pair;
    row.owner = &run.endpoints.owner(pair);
    row.accessor = &run.endpoints.accessor(pair);
  }
  auto* const a = static_cast<float*>(run.hostA.get());
  fillVectorAddInputs(a, static_cast<float*>(run.hostB.get()), run.count, 2024);
}

// ------------------------------------------------------------------------------------ the paths

PathResult timeAndCheckSum(Run& run, const Endpoint& owner, const Endpoint& accessor, CUdeviceptr c,
                           const std::function<void()>& launch) {
  // The accessor launches, the owner clears C and reads it back (timeThenRerun).
  PathResult result;
  result.ran = true;
  result.kernel = timeThenRerun(run, accessor, owner, c, 1, launch);
  ++run.verifiedTransfers;
  const auto floats = [](const OwnedPinnedHostMemory& host) {
    return static_cast<const float*>(host.get());
  };
  result.check =
      checkVectorAdd(floats(run.hostA), floats(run.hostB), floats(run.scratch), run.count);
  result.gbps = gigabytesPerSecond(3.0 * static_cast<double>(run.bytes), result.kernel.medianMs);
  return result;
}

void reportPaths(Run& run, std::ostream& out, JsonObject& json) {
  const std::size_t failuresBefore = run.failures.size();
  std::string notes;
  bool vmmAccessAllReadWrite = true;
  bool vmmSkipped = false;
  std::set<int> referencesSeen;  // pairs with one accessor share its reference
  out << "\nPath tests: the owner writes A and B, the accessor's VecAdd_kernel computes C = A + B "
         "in the owner's memory\n(timed), then C is cleared, one more launch writes it and the "
         "owner checks every element.\nGB/s = 3 x buffer / time. Local: the same kernel on three "
         "buffers in the accessor's own memory.\n  pair  VMM (cuMemSetAccess)    classic (peer "
         "access)   local (accessor's)       VMM/classic  VMM/local  classic/local\n";
  JsonArray rows;
  for (const PairPaths& row : run.paths) {
    const std::string name = "pair " + formatPair(row.pair);
    std::vector<std::pair<std::string, const PathResult*>> results = {
        {name + ", VMM path", &row.viaVmm}, {name + ", classic path", &row.classic}};
    if (referencesSeen.insert(row.pair.accessor).second)
      results.emplace_back("device " + std::to_string(row.pair.accessor) + ", local reference",
                           &row.local);
    for (const auto& [where, result] : results) {
      if (result->ran && result->check.mismatches > 0)
        run.failures.push_back(where + ": C != A + B. " + describeMismatch(result->check));
    }
    for (const RangeAccess& range : row.viaVmm.access) {
      for (const std::string& problem : accessProblems(vmmMappingDevices(row.pair), range.views)) {
        vmmAccessAllReadWrite = false;
        run.failures.push_back(name + ", VMM path, range " + range.range + ": " + problem);
      }
    }
    vmmSkipped = vmmSkipped || !row.viaVmm.ran;
    if (!row.viaVmm.ran)
      notes += "  " + name + ": VMM path skipped: " + row.viaVmm.note + "\n";
    if (!row.classic.ran)  // the driver refused the pair peer access
      notes += "  " + name + ": classic path not run: " + row.classic.note + "\n";

    const std::optional<double> vmmOverClassic = ratio(row.viaVmm, row.classic);
    const std::optional<double> vmmOverLocal = ratio(row.viaVmm, row.local);
    const std::optional<double> classicOverLocal = ratio(row.classic, row.local);
    out << format("  %4s  %-24s%-24s%-24s", formatPair(row.pair).c_str(),
                  pathCell(row.viaVmm).c_str(), pathCell(row.classic).c_str(),
                  pathCell(row.local).c_str())
        << format("%12s%11s%15s\n", ratioText(vmmOverClassic).c_str(),
                  ratioText(vmmOverLocal).c_str(), ratioText(classicOverLocal).c_str());
    JsonObject item;
    item.set("owner", row.pair.owner).set("accessor", row.pair.accessor);
    item.set("vmm", pathJson(row.viaVmm)).set("classic", pathJson(row.classic));
    item.set("classicUsedPeerAccess", row.classic.peerAccessEnabled);
    item.set("classicPeerAccessAdopted", row.classic.peerAccessAdopted);
    item.set("localReference", pathJson(row.local));
    for (const auto& [key, value] :
         {std::pair{"vmmOverClassic", vmmOverClassic}, std::pair{"vmmOverLocal", vmmOverLocal},
          std::pair{"classicOverLocal", classicOverLocal}}) {
      if (value)
        item.set(key, *value);
    }
    rows.addRaw(item.dump());
  }
  out << notes
      << "  VMM: access from cuMemSetAccess (a VMM mapping does not take it from "
         "cuCtxEnablePeerAccess); cuMemGetAccess on A, B and C: "
      << (vmmAccessAllReadWrite ? "read-write for the owner and the accessor"
                                : "NOT read-write everywhere (see FAILED below)")
      << (vmmSkipped ? " (where the path ran)" : "") << ".\n";
  const auto adopted = std::count_if(run.paths.begin(), run.paths.end(), [](const PairPaths& row) {
    return row.classic.peerAccessAdopted;
  });
  if (run.plan.loopback) {
    out << "  Classic: no cuCtxEnablePeerAccess in a loopback run: the one context reaches its "
           "own allocations,\n  and the driver refuses a context as its own peer "
           "(CUDA_ERROR_INVALID_CONTEXT).\n";
  } else {
    out << "  Classic: cuCtxEnablePeerAccess from the accessor's context for its kernel, then\n"
           "  cuCtxDisablePeerAccess; the copies below enable it again, one pair at a time"
        << (adopted == 0 ? ".\n"
                         : "; for " + std::to_string(adopted) +
                               " pair(s) it was already enabled by other code: used, left on.\n");
  }
  if (run.failures.size() != failuresBefore)
    out << "  Some checks failed: see FAILED below.\n";
  json.set("paths", rows);
}

// ----------------------------------------------------------------------------------- the copies

void measureCopies(Run& run, std::ostream& out, JsonObject& json) {
  const PairPlan& plan = run.plan;
  for (Endpoint& endpoint : run.endpoints.all) {
    auto* const pattern = static_cast<std::uint32_t*>(run.scratch.get());
    fillPattern(pattern, run.count, endpoint.seed());
    const ScopedContext current(endpoint.ctx);
    check(cuMemAlloc(endpoint.source.out(), run.bytes), "cuMemAlloc");
    check(cuMemAlloc(endpoint.destination.out(), run.bytes), "cuMemAlloc");
    check(cuMemcpyHtoDAsync(endpoint.source.get(), pattern, run.bytes, endpoint.stream.get()),
          "cuMemcpyHtoDAsync");
    // The scratch buffer is refilled for the next endpoint.
    check(cuStreamSynchronize(endpoint.stream.get()), "cuStreamSynchronize");
  }
  DeviceMatrix engine(run.topology.deviceCount());  // diagonal: the local reference
  DeviceMatrix sm(run.topology.deviceCount());      // elsewhere: owner -> accessor
  std::string loopbackRows;                         // the loopback pair's rows of its table
  std::string bothWaysRows;                         // the rows of the both-ways table
  std::string twinsLine;                            // cuMemcpyPeer and the 3D peer copies
  JsonArray oneWayJson, engineBothJson, smBothJson;
  JsonArray refusedJson;  // each pair the driver refused: `0:1` one way, `0<->1` both ways

  // The diagonal: a copy inside one device, the reference for every link.
  for (const int ordinal : plan.devices) {
    const Endpoint& device = run.endpoints.owner({ordinal, ordinal});
    const std::string name = ", device " + std::to_string(ordinal);
    engine.set(ordinal, ordinal,
               timeOneWay(run, device, device, "copy engine" + name, copyEngineCopy));
    sm.set(ordinal, ordinal, timeOneWay(run, device, device, "SM copy" + name, smCopy));
  }

  // One direction, with peer access for this pair only: the accessor pulls the owner's source
  // into its own destination.
  const auto oneWay = [&](const DevicePair& pair) {
    const Endpoint& owner = run.endpoints.owner(pair);
    const Endpoint& accessor = run.endpoints.accessor(pair);
    const std::string name = ", pair " + formatPair(pair);
    const double viaEngine = timeOneWay(run, accessor, owner, "copy engine" + name, copyEngineCopy);
    const double viaSm = timeOneWay(run, accessor, owner, "SM copy" + name, smCopy);
    if (pair.owner != pair.accessor) {  // a loopback pair would overwrite the diagonal
      engine.set(pair.owner, pair.accessor, viaEngine);
      sm.set(pair.owner, pair.accessor, viaSm);
    }
    loopbackRows +=
        copyRow("pair " + formatPair(pair) + ": cuMemcpyPeerAsync (one context) / Copy_kernel",
                viaEngine, viaSm);
    if (twinsLine.empty())  // the first pair measured only: once is enough to see them
      twinsLine = "Peer copies once more, pair " + formatPair(pair) +
                  ", each checked word by word (host time in the call): " +
                  runPeerTwins(run, accessor, owner, name) + "\n";
    JsonObject item;
    item.set("pair", formatPair(pair)).set("copyEngineGBps", viaEngine);
    oneWayJson.addRaw(item.set("smCopyGBps", viaSm).dump());
  };
  const std::vector<PeerRefusal> refused =
      measurePairByPair(run.endpoints, plan.tested, false, oneWay);

  // Both directions at once, with peer access both ways for this pair only: each endpoint
  // pulls the other's source into its own destination.
  const auto bothWays = [&](const DevicePair& pair) {
    const Endpoint& first = run.endpoints.owner(pair);
    const Endpoint& second = run.endpoints.accessor(pair);
    const std::string name = ", both ways, pair " + formatBothWays(pair);
    const BothWaysFigures viaEngine =
        timeBothWays(run, first, second, "copy engine" + name, copyEngineCopy);
    const BothWaysFigures viaSm = timeBothWays(run, first, second, "SM copy" + name, smCopy);
    bothWaysRows += format("  %-8s%18.1f%11.1f%10.1f%11.1f\n", formatBothWays(pair).c_str(),
                           viaEngine.sumGBps, viaEngine.bothDoneGBps, viaSm.sumGBps,
                           viaSm.bothDoneGBps);
    engineBothJson.addRaw(bothWaysJson(pair, viaEngine).dump());
    smBothJson.addRaw(bothWaysJson(pair, viaSm).dump());
  };
  const std::vector<PeerRefusal> refusedBoth =
      measurePairByPair(run.endpoints, plan.bidirectional, true, bothWays);

  const DeviceMatrix smOverEngine = ratioMatrix(sm, engine);
  const std::string samples =
      describeCopySamples(run.bytes, kCopiesPerSample, run.options.iterations);
  out << "\nCopy bandwidth, GB/s = bytes copied / time (1 GB = 1e9 B), counted as nvbandwidth v0.8 "
         "counts:\n"
      << samples << ".\nEach figure's copy then ran once more into a cleared destination and was "
      << "checked word by word.\n";
  if (plan.loopback) {
    const int device = plan.devices.front();
    out << "LOOPBACK on device " << device
        << ": owner and accessor are the same device. These are LOCAL-MEMORY figures, not "
           "peer-link figures\n(a local copy reads and writes the same memory: its traffic is "
           "twice the bytes copied).\n  "
        << format("%-58s%12s%12s%10s\n", "copy", "copy engine", "SM", "SM / CE")
        << copyRow("reference: cuMemcpyDtoDAsync / Copy_kernel, one stream",
                   *engine.at(device, device), *sm.at(device, device))
        << loopbackRows;
  } else {
    out << "Rows: from (the owner); columns: to (the accessor, which runs the copy). The "
           "diagonal is a copy\ninside one device, the reference for the links (its memory "
           "traffic is twice the bytes copied).\n"
        << "Copy engine (cuMemcpyPeerAsync; diagonal cuMemcpyDtoDAsync):\n"
        << formatMatrix(engine, "from", "to", 1, refused)
        << "SM (Copy_kernel on the accessor, reading the owner's memory):\n"
        << formatMatrix(sm, "from", "to", 1, refused) << "Ratio SM / copy engine:\n"
        << formatMatrix(smOverEngine, "from", "to", 3, refused);
  }
  out << twinsLine;
  // Each refusal once, as it is printed and in the JSON: one way under the matrices, both ways
  // in the both-ways table.
  for (const PeerRefusal& refusal : refused) {
    out << "  refused: pair " << formatPair(refusal.pair) << ", " << refusal.reason << '\n';
    JsonObject item;
    item.set("pair", formatPair(refusal.pair)).set("reason", refusal.reason);
    refusedJson.addRaw(item.dump());
  }
  for (const PeerRefusal& refusal : refusedBoth) {
    const std::string name = formatBothWays(refusal.pair);
    bothWaysRows += format("  %-8s  refused: ", name.c_str()) + refusal.reason + "\n";
    JsonObject item;
    refusedJson.addRaw(item.set("pair", name).set("reason", refusal.reason).dump());
  }
  if (plan.bidirectional.empty()) {
    out << "Both directions at once: no pair is tested both ways, nothing to measure.\n";
  } else {
    out << "Both directions at once (each endpoint pulls the other's source on its own stream; "
           "one event starts both\nloops"
        << (plan.loopback ? "; LOOPBACK: two streams of one device, local memory" : "")
        << "):\n  sum       = each direction's bytes / its own time, added (nvbandwidth's "
           "bidirectional \"Total\")\n  both done = both directions' bytes / time from the "
           "common start until both finished (at most the sum)\n"
        << "  pair      copy engine: sum  both done   SM: sum  both done\n"
        << bothWaysRows;
  }
  json.set("copiesPerSample", kCopiesPerSample)
      .set("copyCounting", "bytes copied / time; " + samples)
      .set("bidirectionalCounting",
           "sumGBps: each direction's bytes / its own time, added; aggregateGBps: both "
           "directions' bytes / time from the common start until both finished")
      .set("copyEngineGBps", matrixJson(engine))
      .set("smCopyGBps", matrixJson(sm))
      .set("smOverCopyEngine", matrixJson(smOverEngine))
      .set("oneWay", oneWayJson)
      .set("copyEngineBidirectional", engineBothJson)
      .set("smCopyBidirectional", smBothJson);
  if (!refusedJson.empty())
    json.set("peerAccessRefused", refusedJson);
  if (!twinsLine.empty())
    json.set("peerCopiesOnce", twinsLine.substr(0, twinsLine.size() - 1));
}

// ---------------------------------------------------------------------------------- the verdict

Verdict reportVerdict(const Run& run, std::ostream& out, JsonObject& json) {
  out << "Verified transfers: " << run.verifiedTransfers << ", wrong: " << run.failures.size()
      << '\n';
  JsonArray failures;
  for (const std::string& failure : run.failures) {
    out << "  FAILED: " << failure << '\n';
    failures.add(failure);
  }
  if (run.plan.loopback)
    out << "Loopback run: the checks above ran on one device; the peer link itself was not "
           "tested.\n";
  json.set("bytesPerBuffer", run.bytes).set("iterations", run.options.iterations);
  json.set("verifiedTransfers", run.verifiedTransfers).set("failures", failures);
  return run.failures.empty() ? Verdict::Pass : Verdict::Fail;
}

}  // namespace memsamples::p2p
