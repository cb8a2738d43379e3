// What 05_p2pMemMap measures and reports (see p2pMemMap_measure.hpp).
#include "p2pMemMap_measure.hpp"

#include <iomanip>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <utility>

#include "support/timing.hpp"

namespace memsamples::p2p {
namespace {

std::string withDecimals(double value, int precision = 1) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(precision) << value;
  return text.str();
}

std::string ratioText(const std::optional<double>& value) {
  return value ? withDecimals(*value, 3) : "-";
}

JsonArray jsonPairs(const std::vector<DevicePair>& pairs) {
  JsonArray array;
  for (const DevicePair& pair : pairs)
    array.add(formatPair(pair));
  return array;
}

// ------------------------------------------------------------------------------------ the paths

std::string pathCell(const PathResult& result) {
  if (!result.ran)
    return "skipped";
  std::ostringstream text;
  text << (result.check.mismatches == 0 ? "verified" : "WRONG") << std::setw(9)
       << withDecimals(result.gbps) << " GB/s";
  return text.str();
}

std::optional<double> ratio(const PathResult& top, const PathResult& bottom) {
  if (!top.ran || !bottom.ran || bottom.gbps == 0.0)
    return std::nullopt;
  return top.gbps / bottom.gbps;
}

JsonObject pathJson(const PathResult& result) {
  JsonObject json;
  json.set("ran", result.ran);
  if (!result.ran) {
    json.set("skipped", result.note);
    return json;
  }
  json.set("mismatches", static_cast<std::uint64_t>(result.check.mismatches))
      .set("kernelMedianMs", result.kernel.medianMs)
      .set("kernelGBps", result.gbps);
  if (!result.access.empty()) {
    JsonArray access;
    for (const RangeAccess& range : result.access) {
      for (const DeviceAccessView& view : range.views) {
        JsonObject item;
        item.set("range", range.range)
            .set("device", view.device)
            .set("access", view.flags ? accessFlagsName(*view.flags) : view.failure);
        access.addRaw(item.dump());
      }
    }
    json.set("cuMemGetAccess", access);
  }
  return json;
}

// ----------------------------------------------------------------------------------- the copies

// Per endpoint: a source holding the endpoint's own pattern, and a destination.
struct TransferBuffers {
  explicit TransferBuffers(CUcontext context) : source(context), destination(context) {}
  ContextMemory source;
  ContextMemory destination;
};

std::uint32_t seedOf(std::size_t endpoint) {
  return sourceSeed(static_cast<int>(endpoint));
}

void inContext(const Endpoint& endpoint, const std::function<void()>& work) {
  const ScopedContext current(endpoint.ctx());
  work();
}

void clearDestination(const Run& run, const Endpoint& holder, CUdeviceptr destination) {
  const ScopedContext current(holder.ctx());
  check(cuMemsetD32Async(destination, kSentinelWord, run.count, holder.stream.get()),
        "cuMemsetD32Async");
}

// Reads @p destination back through its holder and checks that it holds the pattern of @p seed.
void verifyDestination(Run& run, const Endpoint& holder, CUdeviceptr destination,
                       std::uint32_t seed, const std::string& what) {
  {
    const ScopedContext current(holder.ctx());
    check(cuMemcpyDtoHAsync(run.scratch, destination, run.bytes, holder.stream.get()),
          "cuMemcpyDtoHAsync");
    check(cuStreamSynchronize(holder.stream.get()), "cuStreamSynchronize");
  }
  const PatternCheck result =
      checkPattern(static_cast<const std::uint32_t*>(run.scratch), run.count, seed);
  ++run.verifiedTransfers;
  if (!result.passed())
    run.failures.push_back(what + ": " + describePatternCheck(result));
}

// One direction: kCopiesPerSample copies of @p copy (queued on @p runner's stream, which also
// holds the destination) per sample, between two events. Then the destination is cleared, the
// copy runs ONCE more and that copy is checked; all on one stream, so each step follows the last.
double timeOneWay(Run& run, const Endpoint& runner, CUdeviceptr destination, std::uint32_t seed,
                  const std::string& what, const std::function<void()>& copy) {
  TimingStats stats;
  inContext(runner, [&] {
    stats = timeOnStream(runner.stream.get(), run.options.warmup, run.options.iterations, [&] {
      for (int i = 0; i < kCopiesPerSample; ++i)
        copy();
    });
  });
  clearDestination(run, runner, destination);
  inContext(runner, copy);
  verifyDestination(run, runner, destination, seed, what);
  return sampleGBps(run.bytes, kCopiesPerSample, stats.medianMs);
}

struct BothWaysTimes {
  TimingStats first;     // into the first endpoint, from its own start to its own end
  TimingStats second;    // into the second endpoint, likewise
  TimingStats bothDone;  // from the common start until both had finished
};

void synchronizeBoth(const Endpoint& first, const Endpoint& second) {
  for (const Endpoint* endpoint : {&first, &second}) {
    const ScopedContext current(endpoint->ctx());
    check(cuStreamSynchronize(endpoint->stream.get()), "cuStreamSynchronize");
  }
}

// Both directions at once, each a loop of kCopiesPerSample copies on its own endpoint's stream.
// Per sample: the first stream records the start, the second waits for it (across contexts) and
// records its own; the two loops are queued interleaved, so the second's first copy is queued
// right after the first's; each stream records its end, and the first waits for the second's end
// before recording "both done". Events are recorded on streams of their own context. The host
// waits after each sample, so that neither queue ever fills up and stalls the other stream.
BothWaysTimes timeBothWays(const Run& run, const Endpoint& first, const Endpoint& second,
                           const std::function<void()>& intoFirst,
                           const std::function<void()>& intoSecond) {
  const auto bothLoops = [&] {
    for (int i = 0; i < kCopiesPerSample; ++i) {
      inContext(first, intoFirst);
      inContext(second, intoSecond);
    }
  };
  for (int i = 0; i < run.options.warmup; ++i)
    bothLoops();
  synchronizeBoth(first, second);  // no warm-up copy overlaps a sample
  const auto timingEvent = [](const Endpoint& endpoint) {
    ContextEvent event(endpoint.ctx());
    const ScopedContext current(endpoint.ctx());
    check(cuEventCreate(event.out(), CU_EVENT_DEFAULT), "cuEventCreate");
    return event;
  };
  const ContextEvent firstStart = timingEvent(first), firstEnd = timingEvent(first),
                     bothDone = timingEvent(first);
  const ContextEvent secondStart = timingEvent(second), secondEnd = timingEvent(second);
  const CUstream firstStream = first.stream.get(), secondStream = second.stream.get();
  const auto elapsed = [](const ContextEvent& start, const ContextEvent& end) {
    float ms = 0;
    check(cuEventElapsedTime(&ms, start.get(), end.get()), "cuEventElapsedTime");
    return static_cast<double>(ms);
  };
  std::vector<double> intoFirstMs, intoSecondMs, bothDoneMs;
  for (int sample = 0; sample < run.options.iterations; ++sample) {
    inContext(first, [&] { check(cuEventRecord(firstStart.get(), firstStream), "cuEventRecord"); });
    inContext(second, [&] {
      check(cuStreamWaitEvent(secondStream, firstStart.get(), 0), "cuStreamWaitEvent");
      check(cuEventRecord(secondStart.get(), secondStream), "cuEventRecord");
    });
    bothLoops();
    inContext(second,
              [&] { check(cuEventRecord(secondEnd.get(), secondStream), "cuEventRecord"); });
    inContext(first, [&] {
      check(cuEventRecord(firstEnd.get(), firstStream), "cuEventRecord");
      check(cuStreamWaitEvent(firstStream, secondEnd.get(), 0), "cuStreamWaitEvent");
      check(cuEventRecord(bothDone.get(), firstStream), "cuEventRecord");
    });
    synchronizeBoth(first, second);
    intoFirstMs.push_back(elapsed(firstStart, firstEnd));
    intoSecondMs.push_back(elapsed(secondStart, secondEnd));
    bothDoneMs.push_back(elapsed(firstStart, bothDone));
  }
  return {summarizeTimings(std::move(intoFirstMs)), summarizeTimings(std::move(intoSecondMs)),
          summarizeTimings(std::move(bothDoneMs))};
}

struct OneWay {
  DevicePair pair;
  double copyEngineGBps = 0;
  double smGBps = 0;
};

struct BothWays {
  DevicePair pair;  // owner <= accessor: the first endpoint is the owner's
  BothWaysFigures copyEngine;
  BothWaysFigures sm;
};

struct Bandwidth {
  explicit Bandwidth(int devices) : copyEngine(devices), sm(devices) {}
  DeviceMatrix copyEngine;         // diagonal: the local reference; off-diagonal: peer pairs
  DeviceMatrix sm;                 // same layout
  std::vector<OneWay> oneWay;      // every tested pair, the loopback pair included
  std::vector<BothWays> bothWays;  // once per unordered pair
};

JsonObject bothWaysJson(const DevicePair& pair, const BothWaysFigures& figures) {
  // The first endpoint (the pair's owner) pulls from the second: that direction is the pair
  // accessor:owner.
  JsonObject intoFirst, intoSecond;
  intoFirst.set("pair", formatPair({pair.accessor, pair.owner})).set("GBps", figures.firstGBps);
  intoSecond.set("pair", formatPair(pair)).set("GBps", figures.secondGBps);
  JsonArray directions;
  directions.addRaw(intoFirst.dump()).addRaw(intoSecond.dump());
  JsonObject json;
  json.set("pair", formatBothWays(pair))
      .set("sumGBps", figures.sumGBps)
      .set("aggregateGBps", figures.bothDoneGBps)
      .set("directions", directions);
  return json;
}

void reportCopies(const Run& run, const Bandwidth& bandwidth, std::ostream& out, JsonObject& json) {
  const DeviceMatrix smOverEngine = ratioMatrix(bandwidth.sm, bandwidth.copyEngine);
  const std::string samples =
      describeCopySamples(run.bytes, kCopiesPerSample, run.options.iterations);
  out << "\nCopy bandwidth, GB/s = bytes copied / time (1 GB = 1e9 B), counted as nvbandwidth v0.8 "
         "counts:\n"
      << samples << ".\nEach figure's copy then ran once more into a cleared destination and was "
      << "checked word by word.\n";
  if (run.plan.loopback) {
    const int device = run.plan.devices.front();
    const auto line = [&](const std::string& what, double engine, double sm) {
      out << "  " << std::left << std::setw(58) << what << std::right << std::setw(12)
          << withDecimals(engine) << std::setw(12) << withDecimals(sm) << std::setw(10)
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
      line("pair " + formatPair(measured.pair) + ": cuMemcpyPeerAsync (one context) / Copy_kernel",
           measured.copyEngineGBps, measured.smGBps);
    }
  } else {
    out << "Rows: from (the owner); columns: to (the accessor, which runs the copy). The "
           "diagonal is a copy\ninside one device, the reference for the links (its memory "
           "traffic is twice the bytes copied).\n"
        << "Copy engine (cuMemcpyPeerAsync; diagonal cuMemcpyDtoDAsync):\n"
        << formatMatrix(bandwidth.copyEngine, "from", "to", 1)
        << "SM (Copy_kernel on the accessor, reading the owner's memory):\n"
        << formatMatrix(bandwidth.sm, "from", "to", 1) << "Ratio SM / copy engine:\n"
        << formatMatrix(smOverEngine, "from", "to", 3);
  }
  if (bandwidth.bothWays.empty()) {
    out << "Both directions at once: no pair is tested both ways, nothing to measure.\n";
  } else {
    out << "Both directions at once (each endpoint pulls the other's source on its own stream; "
           "one event starts both\nloops"
        << (run.plan.loopback ? "; LOOPBACK: two streams of one device, local memory" : "")
        << "):\n  sum       = each direction's bytes / its own time, added (nvbandwidth's "
           "bidirectional \"Total\")\n  both done = both directions' bytes / time from the "
           "common start until both finished (at most the sum)\n"
        << "  " << std::left << std::setw(8) << "pair" << std::right << std::setw(18)
        << "copy engine: sum" << std::setw(11) << "both done" << std::setw(10) << "SM: sum"
        << std::setw(11) << "both done" << '\n';
    for (const BothWays& measured : bandwidth.bothWays) {
      out << "  " << std::left << std::setw(8) << formatBothWays(measured.pair) << std::right
          << std::setw(18) << withDecimals(measured.copyEngine.sumGBps) << std::setw(11)
          << withDecimals(measured.copyEngine.bothDoneGBps) << std::setw(10)
          << withDecimals(measured.sm.sumGBps) << std::setw(11)
          << withDecimals(measured.sm.bothDoneGBps) << '\n';
    }
  }

  JsonArray oneWay;
  for (const OneWay& measured : bandwidth.oneWay) {
    JsonObject item;
    item.set("pair", formatPair(measured.pair))
        .set("copyEngineGBps", measured.copyEngineGBps)
        .set("smCopyGBps", measured.smGBps);
    oneWay.addRaw(item.dump());
  }
  JsonArray engineBoth, smBoth;
  for (const BothWays& measured : bandwidth.bothWays) {
    engineBoth.addRaw(bothWaysJson(measured.pair, measured.copyEngine).dump());
    smBoth.addRaw(bothWaysJson(measured.pair, measured.sm).dump());
  }
  json.set("copiesPerSample", kCopiesPerSample)
      .set("copyCounting", "bytes copied / time; " + samples)
      .set("bidirectionalCounting",
           "sumGBps: each direction's bytes / its own time, added; aggregateGBps: both "
           "directions' bytes / time from the common start until both finished")
      .set("copyEngineGBps", matrixJson(bandwidth.copyEngine))
      .set("smCopyGBps", matrixJson(bandwidth.sm))
      .set("smOverCopyEngine", matrixJson(smOverEngine))
      .set("oneWay", oneWay)
      .set("copyEngineBidirectional", engineBoth)
      .set("smCopyBidirectional", smBoth);
}

}  // namespace

// ------------------------------------------------------------------------- devices and pairs

void reportDevices(const DeviceTopology& topology, const std::vector<CUdevice>& devices,
                   std::ostream& out, JsonObject& json) {
  const int deviceCount = topology.deviceCount();
  LinkMatrix links(devices.size(), std::vector<LinkAttributes>(devices.size()));
  for (std::size_t owner = 0; owner < devices.size(); ++owner) {
    for (std::size_t accessor = 0; accessor < devices.size(); ++accessor) {
      if (owner == accessor)
        continue;  // CUDA_ERROR_INVALID_DEVICE for a device paired with itself
      LinkAttributes& link = links[owner][accessor];
      const auto ask = [&](CUdevice_P2PAttribute attribute, const char* name) {
        int value = 0;
        const CUresult answer =
            cuDeviceGetP2PAttribute(&value, attribute, devices[accessor], devices[owner]);
        if (answer != CUDA_SUCCESS && link.failure.empty())
          link.failure =
              std::string("cuDeviceGetP2PAttribute(") + name + "): " + describeResult(answer);
        return value;
      };
      link.performanceRank = ask(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, "PERFORMANCE_RANK");
      link.accessSupported = ask(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, "ACCESS_SUPPORTED") != 0;
      link.nativeAtomics =
          ask(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, "NATIVE_ATOMIC_SUPPORTED") != 0;
    }
  }
  out << "Devices: " << deviceCount << '\n';
  JsonArray jsonDevices;
  for (int ordinal = 0; ordinal < deviceCount; ++ordinal) {
    const bool vmm = topology.vmmSupported[static_cast<std::size_t>(ordinal)];
    const std::string name = deviceName(devices[static_cast<std::size_t>(ordinal)]);
    out << "  " << ordinal << ": " << name << (vmm ? "  (VMM supported)" : "  (no VMM)") << '\n';
    JsonObject item;
    item.set("ordinal", ordinal).set("name", name).set("vmm", vmm);
    jsonDevices.addRaw(item.dump());
  }
  out << "Peer access (cuDeviceCanAccessPeer(accessor, owner); rank = "
         "CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,\nA = native atomics, !s = ACCESS_SUPPORTED "
         "disagrees, ? = cuDeviceGetP2PAttribute failed):\n"
      << formatAccessMatrix(topology, links);
  JsonArray jsonLinks;
  for (std::size_t owner = 0; owner < links.size(); ++owner) {
    for (std::size_t accessor = 0; accessor < links[owner].size(); ++accessor) {
      if (owner == accessor)
        continue;
      const LinkAttributes& link = links[owner][accessor];
      JsonObject item;
      item.set("owner", static_cast<int>(owner))
          .set("accessor", static_cast<int>(accessor))
          .set("canAccessPeer", static_cast<bool>(topology.canAccessPeer[accessor][owner]));
      if (link.failure.empty()) {
        item.set("performanceRank", link.performanceRank)
            .set("accessSupported", link.accessSupported)
            .set("nativeAtomics", link.nativeAtomics);
      } else {
        out << "  ? owner " << owner << ", accessor " << accessor << ": " << link.failure
            << " (informative only: the pairs are chosen with cuDeviceCanAccessPeer)\n";
        item.set("attributeQueryFailed", link.failure);
      }
      jsonLinks.addRaw(item.dump());
    }
  }
  json.set("deviceCount", deviceCount).set("devices", jsonDevices).set("peerAccess", jsonLinks);
}

void reportPlan(const PairPlan& plan, std::ostream& out, JsonObject& json) {
  if (plan.loopback) {
    const int device = plan.devices.front();
    out << "LOOPBACK RUN on device " << device << ": owner == accessor == device " << device
        << ". No peer link is used: every GB/s below is a\nlocal-memory figure, not a peer-link "
           "figure. Two endpoints (two streams of the one primary context) play owner\nand "
           "accessor.\n";
  }
  out << "Pairs to test (owner:accessor): " << formatPairList(plan.tested) << '\n';
  if (!plan.lacking.empty())
    out << "Not tested, no peer access: " << formatPairList(plan.lacking) << '\n';
  json.set("mode", plan.loopback ? "loopback" : "peer")
      .set("pairsTested", jsonPairs(plan.tested))
      .set("pairsWithoutAccess", jsonPairs(plan.lacking));
  if (plan.loopback) {
    json.set("loopbackDevice", plan.devices.front())
        .set("figures", "local memory, not a peer link");
  }
}

// ------------------------------------------------------------------------------------ the paths

PathResult skippedPath(std::string reason) {
  PathResult skipped;
  skipped.note = std::move(reason);
  return skipped;
}

PathResult timeAndCheckSum(Run& run, const Endpoint& owner, const Endpoint& accessor, CUdeviceptr c,
                           const std::function<void()>& launch) {
  PathResult result;
  result.ran = true;
  // The timed launches all write the same C, so only a launch checked on its own proves the
  // figure's transfer right: after timing, C is cleared and ONE more launch writes it.
  inContext(accessor, [&] {
    result.kernel =
        timeOnStream(accessor.stream.get(), run.options.warmup, run.options.iterations, launch);
  });  // timeOnStream waited for the stream: no timed launch writes C any more
  inContext(owner, [&] {
    check(cuMemsetD32Async(c, kSentinelWord, run.count, owner.stream.get()), "cuMemsetD32Async");
    // The accessor's launch runs on another stream: it must see the cleared C.
    check(cuStreamSynchronize(owner.stream.get()), "cuStreamSynchronize");
  });
  inContext(accessor, [&] {
    launch();
    check(cuStreamSynchronize(accessor.stream.get()), "cuStreamSynchronize");
  });
  inContext(owner, [&] {
    check(cuMemcpyDtoHAsync(run.scratch, c, run.bytes, owner.stream.get()), "cuMemcpyDtoHAsync");
    check(cuStreamSynchronize(owner.stream.get()), "cuStreamSynchronize");
  });
  ++run.verifiedTransfers;
  result.check =
      checkVectorAdd(static_cast<const float*>(run.hostA), static_cast<const float*>(run.hostB),
                     static_cast<const float*>(run.scratch), run.count);
  result.gbps = gigabytesPerSecond(3.0 * static_cast<double>(run.bytes), result.kernel.medianMs);
  return result;
}

void reportPaths(Run& run, const std::vector<PairPaths>& paths, std::ostream& out,
                 JsonObject& json) {
  const std::size_t failuresBefore = run.failures.size();
  std::vector<std::string> notes;
  bool vmmAccessAllReadWrite = true;
  std::set<int> referencesSeen;  // pairs with one accessor share its reference
  for (const PairPaths& row : paths) {
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
    if (!row.viaVmm.ran)
      notes.push_back(name + ": VMM path skipped: " + row.viaVmm.note);
  }

  out << "\nPath tests: the owner writes A and B, the accessor's VecAdd_kernel computes C = A + B "
         "in the owner's memory\n(timed), then C is cleared, one more launch writes it and the "
         "owner checks every element.\nGB/s = 3 x buffer / time. Local: the same kernel on three "
         "buffers in the accessor's own memory.\n"
      << "  pair  " << std::left << std::setw(24) << "VMM (cuMemSetAccess)" << std::setw(24)
      << "classic (peer access)" << std::setw(24) << "local (accessor's)" << std::right
      << std::setw(12) << "VMM/classic" << std::setw(11) << "VMM/local" << std::setw(15)
      << "classic/local" << '\n';
  JsonArray rows;
  for (const PairPaths& row : paths) {
    const std::optional<double> vmmOverClassic = ratio(row.viaVmm, row.classic);
    const std::optional<double> vmmOverLocal = ratio(row.viaVmm, row.local);
    const std::optional<double> classicOverLocal = ratio(row.classic, row.local);
    out << "  " << std::setw(4) << formatPair(row.pair) << "  " << std::left << std::setw(24)
        << pathCell(row.viaVmm) << std::setw(24) << pathCell(row.classic) << std::setw(24)
        << pathCell(row.local) << std::right << std::setw(12) << ratioText(vmmOverClassic)
        << std::setw(11) << ratioText(vmmOverLocal) << std::setw(15) << ratioText(classicOverLocal)
        << '\n';
    JsonObject item;
    item.set("owner", row.pair.owner)
        .set("accessor", row.pair.accessor)
        .set("vmm", pathJson(row.viaVmm))
        .set("classic", pathJson(row.classic))
        .set("classicUsedPeerAccess", row.classic.peerAccessEnabled)
        .set("classicPeerAccessAdopted", row.classic.peerAccessAdopted)
        .set("localReference", pathJson(row.local));
    for (const auto& [key, value] :
         {std::pair{"vmmOverClassic", vmmOverClassic}, std::pair{"vmmOverLocal", vmmOverLocal},
          std::pair{"classicOverLocal", classicOverLocal}}) {
      if (value)
        item.set(key, *value);
    }
    rows.addRaw(item.dump());
  }
  for (const std::string& note : notes)
    out << "  " << note << '\n';
  out << "  VMM: access from cuMemSetAccess (a VMM mapping does not take it from "
         "cuCtxEnablePeerAccess); cuMemGetAccess on A, B and C: "
      << (vmmAccessAllReadWrite ? "read-write for the owner and the accessor"
                                : "NOT read-write everywhere (see FAILED below)")
      << (notes.empty() ? "" : " (where the path ran)") << ".\n";
  if (run.plan.loopback) {
    out << "  Classic: no cuCtxEnablePeerAccess in a loopback run: the one context reaches its "
           "own allocations,\n  and the driver refuses a context as its own peer "
           "(CUDA_ERROR_INVALID_CONTEXT).\n";
  } else {
    const auto adopted = std::count_if(paths.begin(), paths.end(), [](const PairPaths& row) {
      return row.classic.peerAccessAdopted;
    });
    out << "  Classic: cuCtxEnablePeerAccess from the accessor's context, kept for the copies "
           "below, then\n  cuCtxDisablePeerAccess"
        << (adopted == 0 ? ".\n"
                         : "; for " + std::to_string(adopted) +
                               " pair(s) it was already enabled by other code: used, left on.\n");
  }
  if (run.failures.size() != failuresBefore)
    out << "  Some checks failed: see FAILED below.\n";
  json.set("paths", rows);
}

// ----------------------------------------------------------------------------------- the copies

void measureCopies(Run& run, const CopyCalls& calls, std::ostream& out, JsonObject& json) {
  const PairPlan& plan = run.plan;
  std::vector<TransferBuffers> buffers;
  buffers.reserve(run.endpoints.size());
  for (std::size_t index = 0; index < run.endpoints.size(); ++index) {
    const Endpoint& endpoint = run.endpoints.at(index);
    TransferBuffers& own = buffers.emplace_back(endpoint.ctx());
    fillPattern(static_cast<std::uint32_t*>(run.scratch), run.count, seedOf(index));
    const ScopedContext current(endpoint.ctx());
    check(cuMemAlloc(own.source.out(), run.bytes), "cuMemAlloc");
    check(cuMemAlloc(own.destination.out(), run.bytes), "cuMemAlloc");
    check(cuMemcpyHtoDAsync(own.source.get(), run.scratch, run.bytes, endpoint.stream.get()),
          "cuMemcpyHtoDAsync");
    // The scratch buffer is refilled for the next endpoint.
    check(cuStreamSynchronize(endpoint.stream.get()), "cuStreamSynchronize");
  }
  // Declared after the buffers: on every path out, no copy still runs when they are freed.
  const SynchronizeOnExit drain(run.endpoints.all());
  // One side of a transfer: its endpoint, its buffers and the seed of its source's pattern.
  struct Side {
    std::size_t index;
    const Endpoint& endpoint;
    CUdeviceptr source;
    CUdeviceptr destination;
    std::uint32_t seed;
  };
  const auto sideOf = [&](std::size_t index) {
    return Side{index, run.endpoints.at(index), buffers[index].source.get(),
                buffers[index].destination.get(), seedOf(index)};
  };
  Bandwidth result(run.topology.deviceCount());

  // The diagonal: a copy inside one device, the reference for every link.
  for (const int ordinal : plan.devices) {
    const Side device = sideOf(ownerEndpoint(plan, {ordinal, ordinal}));
    const std::string name = "device " + std::to_string(ordinal);
    result.copyEngine.set(
        ordinal, ordinal,
        timeOneWay(run, device.endpoint, device.destination, device.seed, "copy engine, " + name,
                   [&] {
                     check(cuMemcpyDtoDAsync(device.destination, device.source, run.bytes,
                                             device.endpoint.stream.get()),
                           "cuMemcpyDtoDAsync");
                   }));
    result.sm.set(
        ordinal, ordinal,
        timeOneWay(run, device.endpoint, device.destination, device.seed, "SM copy, " + name,
                   [&] { calls.sm(device.endpoint, device.destination, device.source); }));
  }

  // One direction: the accessor pulls the owner's source into its own destination.
  for (const DevicePair& pair : plan.tested) {
    const Side owner = sideOf(ownerEndpoint(plan, pair));
    const Side accessor = sideOf(accessorEndpoint(plan, pair));
    const std::string name = "pair " + formatPair(pair);
    const auto oneWay = [&](const std::string& what, const std::function<void()>& copy) {
      return timeOneWay(run, accessor.endpoint, accessor.destination, owner.seed,
                        what + ", " + name, copy);
    };
    OneWay measured{pair, 0, 0};
    measured.copyEngineGBps = oneWay("copy engine", [&] {
      calls.copyEngine(accessor.endpoint, accessor.destination, owner.endpoint, owner.source);
    });
    measured.smGBps =
        oneWay("SM copy", [&] { calls.sm(accessor.endpoint, accessor.destination, owner.source); });
    if (pair.owner != pair.accessor) {  // a loopback pair would overwrite the diagonal
      result.copyEngine.set(pair.owner, pair.accessor, measured.copyEngineGBps);
      result.sm.set(pair.owner, pair.accessor, measured.smGBps);
    }
    result.oneWay.push_back(measured);
  }

  // Both directions at once: each endpoint pulls the other's source into its own destination.
  for (const DevicePair& pair : plan.bidirectional) {
    const Side first = sideOf(ownerEndpoint(plan, pair));
    const Side second = sideOf(accessorEndpoint(plan, pair));
    const std::string name = "pair " + formatBothWays(pair);
    const auto both = [&](const std::string& what, const std::function<void()>& intoFirst,
                          const std::function<void()>& intoSecond) {
      const BothWaysTimes times =
          timeBothWays(run, first.endpoint, second.endpoint, intoFirst, intoSecond);
      // Both streams are drained. One more round, untimed, into cleared destinations (each
      // cleared on the stream that then writes it), checked on its own.
      clearDestination(run, first.endpoint, first.destination);
      clearDestination(run, second.endpoint, second.destination);
      inContext(first.endpoint, intoFirst);
      inContext(second.endpoint, intoSecond);
      for (const auto& [into, from] : {std::pair{&first, &second}, std::pair{&second, &first}}) {
        verifyDestination(run, into->endpoint, into->destination, from->seed,
                          what + ", " + name + ", into endpoint " + std::to_string(into->index) +
                              " (device " + std::to_string(into->endpoint.ordinal) + ")");
      }
      return countBothWays(run.bytes, kCopiesPerSample, times.first.medianMs, times.second.medianMs,
                           times.bothDone.medianMs);
    };
    BothWays measured;
    measured.pair = pair;
    measured.copyEngine = both(
        "copy engine, both ways",
        [&] {
          calls.copyEngine(first.endpoint, first.destination, second.endpoint, second.source);
        },
        [&] {
          calls.copyEngine(second.endpoint, second.destination, first.endpoint, first.source);
        });
    measured.sm = both(
        "SM copy, both ways", [&] { calls.sm(first.endpoint, first.destination, second.source); },
        [&] { calls.sm(second.endpoint, second.destination, first.source); });
    result.bothWays.push_back(measured);
  }
  reportCopies(run, result, out, json);
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
  if (run.plan.loopback) {
    out << "Loopback run: the checks above ran on one device; the peer link itself was not "
           "tested.\n";
  }
  json.set("bytesPerBuffer", run.bytes)
      .set("iterations", run.options.iterations)
      .set("verifiedTransfers", run.verifiedTransfers)
      .set("failures", failures);
  return run.failures.empty() ? Verdict::Pass : Verdict::Fail;
}

}  // namespace memsamples::p2p
