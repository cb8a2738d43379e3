// reportRun() and reportStep(): the lines, JSON records and checks of steps 1-6, and the latency
// table of step 6 (perDeviceResource_measure.hpp says how the latency is measured).
#include "perDeviceResource_measure.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <utility>

#include "support/text_format.hpp"
#include "support/timing.hpp"

namespace memsamples::resource {
namespace {

// Host time on purpose, not CUDA events: the calls measured are host-side API calls, most of
// them synchronous, and a stream-ordered allocation's enqueue has no GPU work to bracket.
using Clock = std::chrono::steady_clock;

double millisecondsBetween(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

void synchronize(CUstream stream) {
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
}

// Median host time of one @\p call after @\p warmup untimed ones: the baselines.
template <typename Call>
TimingStats timeHostCall(int warmup, int repetitions, Call&& call) {
  std::vector<double> times;
  for (int i = 0; i < warmup + repetitions; ++i) {
    const Clock::time_point start = Clock::now();
    call();
    const Clock::time_point end = Clock::now();
    if (i >= warmup)
      times.push_back(millisecondsBetween(start, end));
  }
  return summarizeTimings(std::move(times));
}

// A pool's CU_MEMPOOL_ATTR_RELEASE_THRESHOLD for a scope; afterwards the old value is put back
// and the pool trimmed to it (cuMemPoolTrimTo), so the memory it kept is returned. With the
// default 0 the pool gives its free memory back at every synchronization; a high threshold
// keeps it for the next allocation.
class ScopedPoolReleaseThreshold {
 public:
  ScopedPoolReleaseThreshold(CUmemoryPool pool, std::uint64_t threshold) : pool_(pool) {
    check(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &previous_),
          "cuMemPoolGetAttribute");
    cuuint64_t value = threshold;
    check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value),
          "cuMemPoolSetAttribute");
  }
  ~ScopedPoolReleaseThreshold() {
    cuMemPoolSetAttribute(pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &previous_);
    cuMemPoolTrimTo(pool_, static_cast<std::size_t>(previous_));
  }
  ScopedPoolReleaseThreshold(const ScopedPoolReleaseThreshold&) = delete;
  ScopedPoolReleaseThreshold& operator=(const ScopedPoolReleaseThreshold&) = delete;

 private:
  CUmemoryPool pool_;
  cuuint64_t previous_ = 0;
};

constexpr const char* kReferenceRow = "device pool";
constexpr std::uint64_t kSmallLatencySizes[] = {4096, 65536};
constexpr int kMaxLatencyBatch = 10;
constexpr int kTargetLatencyBatches = 5;

// A row's label says what it includes beyond the bare allocation, and the note printed under
// the table explains it. In the order of ResourceKind; a kind without a note needs none.
struct KindRow {
  const char* label;
  const char* note;
};
constexpr KindRow kKindRows[] = {
    {kReferenceRow,
     "  device pool: release threshold as found (0: freed memory goes back to the system at each "
     "synchronization); keeps memory: threshold at its maximum, freed memory stays in the pool; "
     "both timed without the resource's current-device check (a policy of the resource, not a "
     "driver need)\n"},
    {"managed: guard + alloc, untouched",
     "  managed: its free-memory guard (one cuMemGetInfo per allocation, see the baseline) + "
     "cuMemAllocManaged; no page is touched, so no page is created: not the cost of managed "
     "memory in use\n"},
    {"pinned host", ""},
    {"numa host", ""},
    {"vmm striped + granularity query",
     "  vmm: every allocation also queries cuMemGetAllocationGranularity again (02's "
     "StripedVmmRange, once per backing and mapping device)\n"},
};
static_assert(std::size(kKindRows) == static_cast<std::size_t>(ResourceKind::Vmm) + 1);

std::string microseconds(const TimingStats& stats) {
  return format("%.1f us", stats.medianMs * 1000.0);
}

}  // namespace

std::vector<std::uint64_t> latencySizes(std::uint64_t largeBytes) {
  if (largeBytes == 0)
    throw std::invalid_argument("latencySizes: the large size must be at least 1 byte");
  std::vector<std::uint64_t> sizes(std::begin(kSmallLatencySizes), std::end(kSmallLatencySizes));
  sizes.push_back(largeBytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

int latencyRepetitions(std::uint64_t bytes, int iterations) {
  constexpr int kSmallFactor = 10;
  if (iterations < 1 || iterations > std::numeric_limits<int>::max() / kSmallFactor) {
    throw std::invalid_argument("latencyRepetitions: iterations must be in [1, " +
                                std::to_string(std::numeric_limits<int>::max() / kSmallFactor) +
                                "] (got " + std::to_string(iterations) + ")");
  }
  constexpr std::uint64_t kSmallLimit = std::uint64_t{1} << 20;
  return bytes <= kSmallLimit ? iterations * kSmallFactor : iterations;
}

LatencyBatches planLatencyBatches(std::uint64_t bytes, int repetitions,
                                  std::uint64_t maxBatchBytes) {
  if (bytes == 0)
    throw std::invalid_argument("planLatencyBatches: the allocation size must be at least 1 byte");
  if (repetitions < 1) {
    throw std::invalid_argument("planLatencyBatches: at least 1 repetition is required (got " +
                                std::to_string(repetitions) + ")");
  }
  const std::uint64_t fitting = std::max<std::uint64_t>(1, maxBatchBytes / bytes);
  const std::uint64_t limit = std::min<std::uint64_t>(kMaxLatencyBatch, fitting);
  const std::uint64_t wanted = std::max(1, repetitions / kTargetLatencyBatches);
  LatencyBatches plan;
  plan.batchSize = static_cast<int>(std::min<std::uint64_t>(wanted, limit));
  plan.batches = std::max(1, repetitions / plan.batchSize);
  return plan;
}

std::optional<double> allocateRatio(const std::vector<LatencyRow>& rows, const LatencyRow& row,
                                    const std::string& referenceResource) {
  for (const LatencyRow& reference : rows) {
    if (reference.resource == referenceResource && reference.bytes == row.bytes) {
      if (reference.allocateSync.medianMs <= 0)
        return std::nullopt;
      return row.allocateSync.medianMs / reference.allocateSync.medianMs;
    }
  }
  return std::nullopt;
}

std::string formatLatencyTable(const std::vector<LatencyRow>& rows,
                               const std::string& referenceResource) {
  std::size_t nameWidth = 8;
  for (const LatencyRow& row : rows)
    nameWidth = std::max(nameWidth, row.resource.size());
  const int width = static_cast<int>(nameWidth);
  std::string table = format("%-*s%11s%13s%11s%10s%10s%10s   alloc+sync / %s\n", width, "resource",
                             "size", "N x batches", "alloc us", "+sync us", "free us", "+sync us",
                             referenceResource.c_str());
  for (const LatencyRow& row : rows) {
    const std::string batches =
        std::to_string(row.batchSize) + " x " + std::to_string(row.allocate.samples);
    const std::optional<double> ratio = allocateRatio(rows, row, referenceResource);
    table += format("%-*s%11s%13s%11.1f%10.1f%10.1f%10.1f   %s\n", width, row.resource.c_str(),
                    formatBytes(row.bytes).c_str(), batches.c_str(), row.allocate.medianMs * 1000.0,
                    row.allocateSync.medianMs * 1000.0, row.deallocate.medianMs * 1000.0,
                    row.deallocateSync.medianMs * 1000.0,
                    ratio ? format("%.2fx", *ratio).c_str() : "n/a");
  }
  return table;
}

LatencyRow measureLatency(const std::string& label, MemoryResource& resource, std::uint64_t bytes,
                          int warmup, const LatencyBatches& plan, CUstream stream) {
  const double perAllocation = 1.0 / plan.batchSize;
  std::vector<ResourceAllocation> batch(static_cast<std::size_t>(plan.batchSize));
  std::vector<double> allocateMs, allocateSyncMs, freeMs, freeSyncMs;
  for (int b = 0; b < warmup + plan.batches; ++b) {
    const Clock::time_point start = Clock::now();
    for (ResourceAllocation& allocation : batch)
      allocation = ResourceAllocation(resource, static_cast<std::size_t>(bytes), stream);
    const Clock::time_point allocated = Clock::now();
    synchronize(stream);
    const Clock::time_point allocatedSynced = Clock::now();
    for (ResourceAllocation& allocation : batch)
      allocation.release();
    const Clock::time_point freed = Clock::now();
    synchronize(stream);
    const Clock::time_point freedSynced = Clock::now();
    if (b >= warmup) {
      allocateMs.push_back(millisecondsBetween(start, allocated) * perAllocation);
      allocateSyncMs.push_back(millisecondsBetween(start, allocatedSynced) * perAllocation);
      freeMs.push_back(millisecondsBetween(allocatedSynced, freed) * perAllocation);
      freeSyncMs.push_back(millisecondsBetween(allocatedSynced, freedSynced) * perAllocation);
    }
  }
  LatencyRow row;
  row.resource = label;
  row.bytes = bytes;
  row.batchSize = plan.batchSize;
  row.allocate = summarizeTimings(std::move(allocateMs));
  row.allocateSync = summarizeTimings(std::move(allocateSyncMs));
  row.deallocate = summarizeTimings(std::move(freeMs));
  row.deallocateSync = summarizeTimings(std::move(freeSyncMs));
  return row;
}

void reportLatency(const std::vector<KindResource>& resources, int ordinal, CUstream stream,
                   const LatencySettings& settings, std::ostream& out, JsonObject& json) {
  const std::vector<std::uint64_t> sizes = latencySizes(settings.largeBytes);
  // As many repetitions as a small row has allocations (10 x --iterations).
  const int baselineRepetitions = latencyRepetitions(1, settings.iterations);
  out << "\n[7] Allocate / free latency on device " << ordinal
      << ": host time (steady_clock), every row measured the same way\n"
         "  per batch: N allocate calls, one cuStreamSynchronize, N deallocate calls, one "
         "cuStreamSynchronize\n"
         "  times are per allocation (batch time / N), median over the batches; 'alloc' and "
         "'free' are the N calls alone, '+sync' includes the one synchronize\n"
         "  the device pool only enqueues (stream-ordered), so its '+sync' columns count the "
         "work; the other kinds allocate at once,\n"
         "  and their deallocate synchronizes the stream itself, once per call; the ratio "
         "compares alloc+sync\n";
  // The managed guard's cuMemGetInfo answers for the current context, as in the managed resource.
  const TimingStats syncBaseline =
      timeHostCall(settings.warmup, baselineRepetitions, [&] { synchronize(stream); });
  const TimingStats guardBaseline =
      timeHostCall(settings.warmup, baselineRepetitions, [] { currentFreeMemory(); });
  out << "  baselines (median of " << baselineRepetitions
      << "): cuStreamSynchronize of the idle stream " << microseconds(syncBaseline)
      << "; cuMemGetInfo (the managed guard) " << microseconds(guardBaseline) << '\n';

  // The device pool rows are measured without its current-device check (entry.timed: the same
  // pool without that policy): the driver does not need it, and the reference row would carry it.
  std::vector<LatencyRow> rows;
  std::string notes;
  for (const KindResource& entry : resources) {
    if (entry.resource == nullptr)
      continue;  // waived in step 3
    const KindRow& kind = kKindRows[static_cast<std::size_t>(entry.kind)];
    notes += kind.note;
    const auto measureAll = [&](const std::string& label) {
      for (const std::uint64_t size : sizes) {
        const LatencyBatches plan =
            planLatencyBatches(size, latencyRepetitions(size, settings.iterations));
        rows.push_back(measureLatency(label, entry.timed ? *entry.timed : *entry.resource, size,
                                      settings.warmup, plan, stream));
      }
    };
    measureAll(kind.label);
    if (entry.pool != nullptr) {
      ScopedPoolReleaseThreshold keep(entry.pool, std::numeric_limits<std::uint64_t>::max());
      measureAll("device pool, keeps memory");
    }
  }
  out << formatLatencyTable(rows, kReferenceRow) << notes;
  JsonArray latencyJson;
  for (const LatencyRow& row : rows) {
    JsonObject entry;
    entry.set("resource", row.resource)
        .set("bytes", row.bytes)
        .set("batchSize", row.batchSize)
        .set("batches", row.allocate.samples)
        .set("allocateUs", row.allocate.medianMs * 1000.0)
        .set("allocateWithSyncUs", row.allocateSync.medianMs * 1000.0)
        .set("freeUs", row.deallocate.medianMs * 1000.0)
        .set("freeWithSyncUs", row.deallocateSync.medianMs * 1000.0);
    if (const auto ratio = allocateRatio(rows, row, kReferenceRow))
      entry.set("allocateWithSyncOverDevicePool", *ratio);
    latencyJson.addRaw(entry.dump());
  }
  json.set("latency", latencyJson)
      .set("latencyBaselines", JsonObject()
                                   .set("streamSynchronizeUs", syncBaseline.medianMs * 1000.0)
                                   .set("memGetInfoUs", guardBaseline.medianMs * 1000.0)
                                   .set("repetitions", baselineRepetitions));
}

void Checks::expect(bool ok, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++count_;
  if (!ok)
    failures_.push_back(what);
}

Verdict Checks::report(std::ostream& out, JsonObject& json) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int failed = static_cast<int>(failures_.size());
  out << "\nChecks: " << count_ - failed << " of " << count_ << " passed\n";
  for (const std::string& failure : failures_)
    out << "  FAILED: " << failure << '\n';
  json.set("checks", count_).set("failedChecks", failed);
  return failures_.empty() ? Verdict::Pass : Verdict::Fail;
}

namespace {

// Steps 4 and 5: set returned the initial resource, every thread got the one set, C is exact,
// reset returned the resource it removed.
void expectRules(Checks& checks, const KindResource& entry, const std::string& label) {
  PerDeviceResourceRegistry& registry = processResourceRegistry();
  checks.expect(entry.previous == registry.initial(entry.resource->ownerDevice().value_or(0)),
                label + "set must return the initial resource");
  for (std::size_t t = 0; t < entry.answers.size(); ++t) {
    const MemoryResource* got = entry.answers[t];
    checks.expect(got == entry.resource, label + "thread " + std::to_string(t) +
                                             ": getCurrentDeviceResource() " + "returned '" +
                                             (got ? got->name() : "nothing") + "', expected '" +
                                             entry.resource->name() + "'");
  }
  checks.expect(entry.verified.mismatches == 0, label + describeMismatch(entry.verified));
  checks.expect(entry.removed == entry.resource,
                label + "reset must return the resource it removed");
}

// "exact", or what the first wrong element was.
std::string verdictOf(const VectorAddCheck& verified, const std::string& exact) {
  return verified.mismatches == 0 ? exact : describeMismatch(verified);
}

// Step 5: the JSON of every kind of step 3-4, the refusal of another device's pool, every
// device's own resource, and every device back on its initial resource.
void reportPerDeviceStep(std::ostream& out, JsonObject& json, Checks& checks,
                         const Devices& devices, const Resources& resources) {
  JsonArray kinds;
  for (const KindResource& made : resources.kinds) {
    JsonObject record;
    record.set("kind", kindName(made.kind)).set("available", made.resource != nullptr);
    if (made.resource == nullptr)
      record.set("reason", made.whyNot);
    else
      record.set("resource", made.resource->name())
          .set("properties", describeProperties(made.resource->properties()))
          .set("detail", made.detail)
          .set("mismatches", static_cast<std::uint64_t>(made.verified.mismatches));
    kinds.addRaw(record.dump());
  }
  json.set("kinds", kinds);

  const std::vector<KindResource>& perDevice = resources.perDevice;
  // perDevice[d] belongs to the d-th device used; its ordinal is what people read.
  const auto ordinalOf = [&devices](std::size_t d) {
    return d < devices.used.size() ? devices.used[d] : static_cast<int>(d);
  };
  if (perDevice.empty())
    out << "\n[6] A different resource per device: skipped ("
        << (devices.count > 1 ? "one device is used" : "this machine has one device") << ")\n";
  else
    out << "\n[6] A different resource per device, one thread per device "
           "(setPerDeviceResource / getCurrentDeviceResource / resetPerDeviceResource)\n";
  for (std::size_t d = 0; d < perDevice.size(); ++d)
    if (!perDevice[d].whyNot.empty())
      out << "  device " << ordinalOf(d) << ": " << perDevice[d].whyNot
          << "; it keeps the device pool\n";
  if (!perDevice.empty()) {
    checks.expect(!resources.refusal.empty(), "another device's pool must refuse to allocate here");
    out << "  device pool of device " << devices.nextUsedDevice() << " used with device "
        << devices.chosen
        << "'s context current -> std::logic_error: " << resources.refusal << '\n';
  }
  PerDeviceResourceRegistry& registry = processResourceRegistry();
  for (std::size_t d = 0; d < perDevice.size(); ++d)
    expectRules(checks, perDevice[d], "device " + std::to_string(ordinalOf(d)) + ": ");
  for (const int d : devices.used)
    checks.expect(registry.get(d) == registry.initial(d),
                  "device " + std::to_string(d) + " must end on its initial resource");

  JsonArray records;
  for (std::size_t d = 0; d < perDevice.size(); ++d) {
    const std::string result =
        perDevice[d].resource->name() + ": " + verdictOf(perDevice[d].verified, "exact");
    out << "  device " << ordinalOf(d) << ": " << result << '\n';
    records.addRaw(JsonObject()
                       .set("device", ordinalOf(d))
                       .set("kind", kindName(perDevice[d].kind))
                       .set("result", result)
                       .dump());
  }
  json.set("perDevice", records);
}

// Steps 2-5, the core: its lines, its JSON `core`, and its checks. The resource it built is
// destroyed by now, so its answers are compared as addresses only and named by what it was.
void reportCore(std::ostream& out, JsonObject& json, Checks& checks, const RegistryRun& core,
                int ordinal, std::uint64_t elements) {
  if (core.answers.empty())
    return;  // not run (unit tests of the other parts)
  const std::string built = onDevice("pinned host", ordinal);
  const MemoryResource* initial = processResourceRegistry().initial(ordinal);
  const bool everyThreadGotIt =
      std::all_of(core.answers.begin(), core.answers.end(),
                  [&core](const MemoryResource* answer) { return answer == core.removed; });
  const std::string previous = core.previous != nullptr ? core.previous->name() : "nothing";
  out << "\n[2-5] One resource's whole life (the core): " << built << ", built, set, used by "
      << core.answers.size() << " threads, reset, destroyed\n"
      << "  setCurrentDeviceResource(pinned)  -> " << previous
      << (core.previous == initial ? " (the initial resource)" : "") << '\n'
      << "  getCurrentDeviceResource()        -> "
      << (everyThreadGotIt ? built + " on every thread" : "not the same on every thread")
      << "; A, B and C allocated through it\n"
      << "  C = A + B on its memory           -> "
      << verdictOf(core.verified, "all " + std::to_string(elements) + " elements exact") << '\n'
      << "  resetCurrentDeviceResource()      -> "
      << (core.removed == initial || core.removed == nullptr ? previous : built)
      << "; then the resource is destroyed\n";
  json.set("core", JsonObject()
                       .set("resource", built)
                       .set("previous", previous)
                       .set("threads", static_cast<int>(core.answers.size()))
                       .set("mismatches", static_cast<std::uint64_t>(core.verified.mismatches)));

  checks.expect(core.previous == initial, "the core: set must return the initial resource");
  for (std::size_t t = 0; t < core.answers.size(); ++t)
    checks.expect(core.answers[t] == core.removed,
                  "the core: thread " + std::to_string(t) +
                      ": getCurrentDeviceResource() must return the resource that was set");
  checks.expect(core.verified.mismatches == 0, "the core: " + describeMismatch(core.verified));
  checks.expect(core.removed != nullptr && core.removed != initial,
                "the core: reset must return the resource it removed, not the initial one");
}

// "0, 1": the ordinals of the devices used.
std::string joinedOrdinals(const std::vector<int>& ordinals) {
  std::string text;
  for (const int ordinal : ordinals)
    text += (text.empty() ? "" : ", ") + std::to_string(ordinal);
  return text;
}

JsonArray devicesUsedJson(const Devices& devices) {
  JsonArray used;
  for (const int ordinal : devices.used)
    used.add(ordinal);
  return used;
}

JsonArray leftOutJson(const Devices& devices) {
  JsonArray leftOut;
  for (const LeftOutDevice& left : devices.leftOut)
    leftOut.addRaw(JsonObject().set("device", left.ordinal).set("reason", left.reason).dump());
  return leftOut;
}

// Step 6: every kind this run could not make, named with the reason, so that a PASS without it
// says so (step 3 printed the same); the JSON `waivedKinds`.
void reportWaivedKinds(const std::vector<KindResource>& kinds, std::ostream& out,
                       JsonObject& json) {
  JsonArray waived;
  for (const KindResource& kind : kinds) {
    if (kind.resource != nullptr)
      continue;
    out << "\nWaived kind: " << kindName(kind.kind) << " (" << kind.whyNot
        << "); the run goes on without it\n";
    waived.addRaw(
        JsonObject().set("kind", kindName(kind.kind)).set("reason", kind.whyNot).dump());
  }
  json.set("waivedKinds", waived);
}

}  // namespace

Verdict reportStep(int part, RunRecord& record, const Devices& devices, const Resources* resources,
                   const KindResource* kind) {
  std::ostream& out = record.report.out();
  JsonObject& json = record.report.json();
  Checks& checks = record.checks;
  PerDeviceResourceRegistry& registry = processResourceRegistry();
  const int ordinal = devices.chosen;
  switch (part) {
    case kDevicesPart:  // the vectors, and what sized them
      out << "Vectors: " << devices.bytes / sizeof(float) << " floats ("
          << formatBytes(devices.bytes) << ") each, allocated by " << record.threads
          << " host threads";
      if (devices.used.size() > 1)
        out << "; " << devices.used.size() << " devices used (" << joinedOrdinals(devices.used)
            << "), sized for device " << devices.smallest.device << "'s free memory ("
            << formatBytes(devices.smallest.freeBytes) << ")";
      out << '\n';
      for (const LeftOutDevice& left : devices.leftOut)
        out << "Left out: " << left.reason << " (name it with --devices to use it)\n";
      json.set("device", ordinal)
          .set("deviceName", devices.chosenName)
          .set("deviceCount", devices.count)
          .set("bytesPerVector", devices.bytes)
          .set("sizedForDevice", devices.smallest.device)
          .set("sizedForFreeBytes", devices.smallest.freeBytes)
          .set("threads", record.threads)
          .set("devicesUsed", devicesUsedJson(devices))
          .set("devicesLeftOut", leftOutJson(devices));
      break;
    case kRegistryPart:  // the registry's answers, and an id that does not exist
      out << "\n[7] The process-wide registry (" << devices.count
          << (devices.count == 1 ? " device" : " devices")
          << "; current device = cuCtxGetDevice = " << ordinal << ")\n"
          << "  getCurrentDeviceResource()        -> " << record.initial->name() << " ["
          << describeProperties(record.initial->properties()) << "]\n"
          << "  getPerDeviceResource(" << ordinal << ")           -> "
          << record.perDeviceAnswer->name() << '\n';
      checks.expect(record.initial == registry.initial(ordinal),
                    "get must answer the initial one once every kind is reset");
      checks.expect(record.perDeviceAnswer == record.initial, "get per device must answer it too");
      if (!record.outOfRange.empty())
        out << "  getPerDeviceResource(" << devices.count
            << ")           -> std::out_of_range: " << record.outOfRange << '\n';
      checks.expect(!record.outOfRange.empty(),
                    "a device id that does not exist must get std::out_of_range");
      break;
    case kResourcesPart:  // one line per kind, then the heading of the kinds' runs
      out << "\n[6] Resources of device " << ordinal << '\n';
      for (const KindResource& made : resources->kinds) {
        out << format("  %-8s", kindName(made.kind));
        if (made.resource == nullptr)
          out << "waived: " << made.whyNot << '\n';
        else
          out << format("%-36s%-26s", made.resource->name().c_str(),
                        describeProperties(made.resource->properties()).c_str())
              << made.detail << '\n';
      }
      out << "\n[6] Each resource in turn on device " << ordinal << ": " << record.threads
          << " threads ask getCurrentDeviceResource() at once and allocate, fill and free "
          << kScratchPerThread << " x " << formatBytes(kScratchBytes)
          << " scratch each through it; A, B and C come from it too\n";
      break;
    case kKindPart: {  // one kind: its answers and its vector add
      const std::string label = std::string(kindName(kind->kind)) + ": ";
      expectRules(checks, *kind, label);
      if (kind->contextFree)
        checks.expect(*kind->contextFree, label + "the thread without a context had one current");
      out << format("  %-8sC = A + B on ", kindName(kind->kind)) << kind->resource->name() << ": "
          << verdictOf(kind->verified,
                       "all " + std::to_string(devices.bytes / sizeof(float)) + " elements exact");
      if (kind->contextFree)
        out << "; used from a thread without a current context: "
            << (*kind->contextFree ? "ok" : "FAILED");
      out << '\n';
      break;
    }
    case kPerDevicePart:
      reportPerDeviceStep(out, json, checks, devices, *resources);
      break;
    case kCorePart:
      reportCore(out, json, checks, record.core, devices.chosen, devices.bytes / sizeof(float));
      break;
    default:  // kVerdictPart: each kind's latency on this device, every row measured alike
      if (!record.skipLatency)
        reportLatency(resources->kinds, ordinal, devices.chosenSetup().stream.get(),
                      record.latency, out, json);
      reportWaivedKinds(resources->kinds, out, json);
      resources->warnings->print(out);
      return checks.report(out, json);
  }
  return Verdict::Pass;
}

void askRegistry(RunRecord& record, const Devices& devices) {
  record.initial = getCurrentDeviceResource();
  record.perDeviceAnswer = getPerDeviceResource(devices.chosen);
  try {
    getPerDeviceResource(devices.count);  // ids are 0 .. count - 1
  } catch (const std::out_of_range& error) {
    record.outOfRange = error.what();
  }
}

Verdict reportRun(RunRecord& record, const Devices& devices, const Resources& resources) {
  reportStep(kDevicesPart, record, devices);
  reportStep(kCorePart, record, devices);
  reportStep(kResourcesPart, record, devices, &resources);
  for (const KindResource& kind : resources.kinds)
    if (kind.resource != nullptr)
      reportStep(kKindPart, record, devices, &resources, &kind);
  reportStep(kPerDevicePart, record, devices, &resources);
  reportStep(kRegistryPart, record, devices);
  return reportStep(kVerdictPart, record, devices, &resources);
}

}  // namespace memsamples::resource
