// perDeviceResource_measure.cpp: the latency plan and table, the measuring itself (linked against
// fake_measure_driver.cpp instead of libcuda, with CPU-only resources), the lines and JSON
// records of steps 1-5 (the sample's output, as its README shows it), and the verdict's checks.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fake_measure_driver.hpp"
#include "memsamples.hpp"
#include "perDeviceResource_measure.hpp"
#include "printed_text.hpp"
#include "test_resources.hpp"
#include "test_support.hpp"

namespace mr = memsamples::resource;
using memsamples::TimingStats;
using memsamples::test::cellsOf;
using memsamples::test::Grid;
using memsamples::test::messageOf;
using memsamples::test::rowsLabelled;
using mr::testing::fakeStream;
using mr::testing::MallocResource;

namespace {

TimingStats median(double ms, int samples) {
  TimingStats stats;
  stats.medianMs = ms;
  stats.minMs = ms;
  stats.maxMs = ms;
  stats.samples = samples;
  return stats;
}

// A row with N = @p batchSize and @p batches batches; times in ms per allocation.
mr::LatencyRow row(const std::string& resource, std::uint64_t bytes, int batchSize, int batches,
                   double allocateMs, double allocateSyncMs, double freeMs, double freeSyncMs) {
  mr::LatencyRow r;
  r.resource = resource;
  r.bytes = bytes;
  r.batchSize = batchSize;
  r.allocate = median(allocateMs, batches);
  r.allocateSync = median(allocateSyncMs, batches);
  r.deallocate = median(freeMs, batches);
  r.deallocateSync = median(freeSyncMs, batches);
  return r;
}

// A resource of @p kind for the step 3-6 functions: a MallocResource with the sample's name and
// properties for that kind, owned by the entry.
mr::KindResource kindResource(mr::ResourceKind kind, const std::string& name,
                              mr::ResourceProperties properties, std::string detail = "") {
  mr::KindResource entry;
  entry.kind = kind;
  entry.owned = std::make_unique<MallocResource>(name, 0, properties);
  entry.resource = entry.owned.get();
  entry.detail = std::move(detail);
  return entry;
}

CUmemoryPool fakePool() {
  return reinterpret_cast<CUmemoryPool>(std::uintptr_t{0x5000});
}

}  // namespace

TEST(LatencySizes, SmallSizesAndTheLargeOneAscending) {
  EXPECT_EQ(mr::latencySizes(64ull << 20), (std::vector<std::uint64_t>{4096, 65536, 64ull << 20}));
  EXPECT_EQ(mr::latencySizes(65536), (std::vector<std::uint64_t>{4096, 65536}));
  EXPECT_EQ(mr::latencySizes(100), (std::vector<std::uint64_t>{100, 4096, 65536}));
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::latencySizes(0); }),
            "latencySizes: the large size must be at least 1 byte");
}

TEST(LatencyRepetitions, TenTimesMoreForSmallSizes) {
  EXPECT_EQ(mr::latencyRepetitions(4096, 20), 200);
  EXPECT_EQ(mr::latencyRepetitions(1 << 20, 20), 200);
  EXPECT_EQ(mr::latencyRepetitions((1 << 20) + 1, 20), 20);
  EXPECT_EQ(mr::latencyRepetitions(64ull << 20, 3), 3);
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::latencyRepetitions(4096, 0); }),
            "latencyRepetitions: iterations must be in [1, 214748364] (got 0)");
  EXPECT_THROW(mr::latencyRepetitions(4096, 214748365), std::invalid_argument);
}

// What planLatencyBatches() must answer, and why.
struct BatchCase {
  std::uint64_t bytes;
  int repetitions;
  std::uint64_t maxBatchBytes;
  int batchSize;
  int batches;
  const char* why;
};

TEST(LatencyBatches, AboutFiveBatchesOfAtMostTenAndAtMostTheByteLimit) {
  constexpr std::uint64_t kGiB = mr::kLatencyBatchBytes;
  for (const BatchCase& c : {
           BatchCase{4096, 200, kGiB, 10, 20, "the default up to 1 MiB: 200 repetitions"},
           BatchCase{64ull << 20, 20, kGiB, 4, 5, "the default above 1 MiB: 20 repetitions"},
           BatchCase{65536, 30, kGiB, 6, 5, "what CTest runs (--iterations 3), small"},
           BatchCase{4ull << 20, 3, kGiB, 1, 3, "what CTest runs (--iterations 3), large"},
           BatchCase{4096, 23, kGiB, 4, 5, "whole batches only: 20 of 23 are timed"},
           BatchCase{512ull << 20, 20, kGiB, 2, 10, "at most 1 GiB alive at once"},
           BatchCase{4ull << 30, 20, kGiB, 1, 20, "one allocation larger than the limit"},
           BatchCase{100, 200, 300, 3, 66, "a smaller limit"},
       }) {
    const mr::LatencyBatches plan = mr::planLatencyBatches(c.bytes, c.repetitions, c.maxBatchBytes);
    EXPECT_EQ(plan.batchSize, c.batchSize) << c.why;
    EXPECT_EQ(plan.batches, c.batches) << c.why;
  }
}

TEST(LatencyBatches, RefusesNothingToMeasure) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::planLatencyBatches(0, 20); }),
            "planLatencyBatches: the allocation size must be at least 1 byte");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { mr::planLatencyBatches(4096, 0); }),
            "planLatencyBatches: at least 1 repetition is required (got 0)");
}

TEST(LatencyTable, RatiosCompareAllocatePlusSyncAtTheSameSize) {
  const std::vector<mr::LatencyRow> rows = {
      // The pool's calls only enqueue (0.001 ms); with the synchronize they take 0.004 ms.
      row("device pool", 4096, 10, 20, 0.001, 0.004, 0.001, 0.060),
      row("pinned host", 4096, 10, 20, 0.050, 0.052, 0.020, 0.021),
      row("pinned host", 1 << 20, 4, 5, 0.5, 0.5, 0.2, 0.2),
  };
  EXPECT_DOUBLE_EQ(*mr::allocateRatio(rows, rows[1], "device pool"), 13.0);
  EXPECT_DOUBLE_EQ(*mr::allocateRatio(rows, rows[0], "device pool"), 1.0);
  EXPECT_FALSE(mr::allocateRatio(rows, rows[2], "device pool"));  // no reference of that size
  EXPECT_FALSE(mr::allocateRatio(rows, rows[1], "missing"));
  // A reference whose enqueue is 0 but whose alloc+sync is not still gives a ratio.
  std::vector<mr::LatencyRow> enqueueZero = {row("device pool", 4096, 1, 1, 0.0, 0.002, 0, 0),
                                             row("managed", 4096, 1, 1, 0.01, 0.01, 0, 0)};
  EXPECT_DOUBLE_EQ(*mr::allocateRatio(enqueueZero, enqueueZero[1], "device pool"), 5.0);
  std::vector<mr::LatencyRow> zero = {row("device pool", 4096, 1, 1, 0.0, 0.0, 0.0, 0.0)};
  EXPECT_FALSE(mr::allocateRatio(zero, zero[0], "device pool"));
}

TEST(LatencyTable, OneLinePerRowPerAllocationInMicroseconds) {
  const std::vector<mr::LatencyRow> rows = {
      row("device pool", 4096, 10, 20, 0.001, 0.004, 0.001, 0.060),
      row("pinned host", 4096, 10, 20, 0.050, 0.052, 0.020, 0.021),
      row("pinned host", 1 << 20, 4, 5, 0.5, 0.5, 0.25, 0.3),
  };
  EXPECT_EQ(mr::formatLatencyTable(rows, "device pool"),
            "resource          size  N x batches   alloc us  +sync us   free us  +sync us   "
            "alloc+sync / device pool\n"
            "device pool   4.00 KiB      10 x 20        1.0       4.0       1.0      60.0   1.00x\n"
            "pinned host   4.00 KiB      10 x 20       50.0      52.0      20.0      21.0   "
            "13.00x\n"
            "pinned host   1.00 MiB        4 x 5      500.0     500.0     250.0     300.0   n/a\n");
}

TEST(MeasureLatency, TimesWholeBatchesAndGivesEverythingBack) {
  fake_measure::reset();
  MallocResource resource("heap");
  const mr::LatencyRow row =
      mr::measureLatency("heap row", resource, 4096, 2, {3, 4}, fakeStream(0x42));
  EXPECT_EQ(row.resource, "heap row");
  EXPECT_EQ(row.bytes, 4096u);
  EXPECT_EQ(row.batchSize, 3);
  EXPECT_EQ(row.allocate.samples, 4);  // the warm-up batches are not timed
  EXPECT_EQ(row.allocateSync.samples, 4);
  EXPECT_EQ(row.deallocate.samples, 4);
  EXPECT_EQ(row.deallocateSync.samples, 4);
  EXPECT_EQ(resource.allocations(), (2 + 4) * 3);
  EXPECT_EQ(resource.outstanding(), 0);
  EXPECT_EQ(resource.lastBytes(), 4096u);
  EXPECT_EQ(resource.lastStream(), fakeStream(0x42));
  // One synchronize after the allocations and one after the frees, per batch.
  EXPECT_EQ(fake_measure::driver().streamSynchronizeCalls, 2 * (2 + 4));
  for (const CUstream stream : fake_measure::driver().synchronizedStreams)
    EXPECT_EQ(stream, fakeStream(0x42));
  EXPECT_LE(row.allocate.medianMs, row.allocateSync.medianMs);
  EXPECT_LE(row.deallocate.medianMs, row.deallocateSync.medianMs);
}

TEST(MeasureLatency, AFailingSynchronizeIsReportedAndLeavesNothingAllocated) {
  fake_measure::reset();
  fake_measure::driver().failStreamSynchronizeCall = 3;  // after the second batch's allocations
  MallocResource resource("heap");
  const std::string message = messageOf<memsamples::CudaError>([&] {
    mr::measureLatency("heap", resource, 64, 0, {2, 5}, nullptr);
  });
  EXPECT_NE(message.find("cuStreamSynchronize failed at perDeviceResource_measure.cpp:"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_HANDLE (invalid resource handle)"), std::string::npos)
      << message;
  EXPECT_EQ(resource.allocations(), 4);
  EXPECT_EQ(resource.outstanding(), 0);
}

TEST(ReportLatency, EveryKindEverySizeThePoolTwiceAndItsThresholdPutBack) {
  fake_measure::reset(0);
  std::vector<mr::KindResource> resources;
  resources.push_back(
      kindResource(mr::ResourceKind::Device, "device pool (device 0)", {false, true, true}));
  resources.back().pool = fakePool();
  resources.push_back(
      kindResource(mr::ResourceKind::Managed, "managed (device 0)", {true, true, false}));
  resources.push_back(
      kindResource(mr::ResourceKind::Vmm, "vmm x2 stripes (device 0)", {false, true, false}));
  mr::KindResource missing;  // a kind left out in step 3 has no row
  missing.kind = mr::ResourceKind::Numa;
  missing.whyNot = "no libnuma";
  resources.push_back(std::move(missing));
  std::ostringstream out;
  memsamples::JsonObject json;
  mr::reportLatency(resources, 3, fakeStream(7), {4096, 1, 0}, out, json);

  const std::string text = out.str();
  for (const std::string expected :
       {"[7] Allocate / free latency on device 3: host time (steady_clock)",
        "baselines (median of 10): cuStreamSynchronize of the idle stream ",
        "alloc+sync / device pool\n", "\ndevice pool                         4.00 KiB        2 x 5",
        "\ndevice pool, keeps memory           64.0 KiB        2 x 5",
        "\nmanaged: guard + alloc, untouched   4.00 KiB        2 x 5",
        "\nvmm striped + granularity query     64.0 KiB        2 x 5",
        "  device pool: release threshold as found",
        "  managed: its free-memory guard (one cuMemGetInfo",
        "  vmm: every allocation also queries cuMemGetAllocationGranularity again"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\nin:\n" << text;
  }
  EXPECT_EQ(text.find("numa"), std::string::npos);
  // Threshold at its maximum for the second pool rows, then the old one back and the pool trimmed.
  EXPECT_EQ(fake_measure::driver().thresholdsSet,
            (std::vector<cuuint64_t>{std::numeric_limits<std::uint64_t>::max(), 0}));
  EXPECT_EQ(fake_measure::driver().trimmedTo, (std::vector<std::size_t>{0}));
  for (const CUmemoryPool pool : fake_measure::driver().poolsUsed)
    EXPECT_EQ(pool, fakePool());
  // Baselines: 10 idle synchronizes and 10 cuMemGetInfo; 8 rows of 5 batches, 2 synchronizes each.
  EXPECT_EQ(fake_measure::driver().memGetInfoCalls, 10);
  EXPECT_EQ(fake_measure::driver().streamSynchronizeCalls, 10 + 8 * 5 * 2);
  for (const mr::KindResource& entry : resources) {
    if (entry.resource != nullptr) {
      EXPECT_EQ(static_cast<MallocResource*>(entry.resource)->outstanding(), 0);
    }
  }
  const std::string dumped = json.dump();
  for (const std::string expected :
       {"\"latency\": [{\"resource\": \"device pool\", \"bytes\": 4096, \"batchSize\": 2, "
        "\"batches\": 5, \"allocateUs\": ",
        "\"allocateWithSyncOverDevicePool\": ", "\"latencyBaselines\": {\"streamSynchronizeUs\": ",
        "\"memGetInfoUs\": ", "\"repetitions\": 10}"}) {
    EXPECT_NE(dumped.find(expected), std::string::npos) << expected << "\nin:\n" << dumped;
  }
}

// The device pool's current-device check is the resource's policy, not a driver need: its rows
// time KindResource::timed (the pool without it), never the checked resource.
TEST(ReportLatency, ThePoolRowsTimeThePoolWithoutItsCurrentDevicePolicy) {
  fake_measure::reset(0);
  std::vector<mr::KindResource> resources;
  resources.push_back(
      kindResource(mr::ResourceKind::Device, "device pool (device 0)", {false, true, true}));
  auto checked = std::make_unique<MallocResource>("checked pool", 0, mr::ResourceProperties{});
  resources.back().resource = checked.get();  // the registry's pool, with the policy
  resources.back().timed = resources.back().owned.get();
  resources.back().pool = fakePool();
  std::ostringstream out;
  memsamples::JsonObject json;
  mr::reportLatency(resources, 0, fakeStream(7), {4096, 1, 0}, out, json);

  EXPECT_EQ(checked->allocations(), 0);
  const auto* timed = static_cast<MallocResource*>(resources.back().timed);
  EXPECT_EQ(timed->allocations(), 4 * 5 * 2);  // 4 rows (2 sizes, twice) of 5 batches of 2
  EXPECT_EQ(timed->outstanding(), 0);
  EXPECT_NE(out.str().find("both timed without the resource's current-device check"),
            std::string::npos)
      << out.str();
}

TEST(ReportLatency, WithoutThePoolThereIsNoReferenceAndNoPoolNote) {
  fake_measure::reset();
  std::vector<mr::KindResource> resources;
  resources.push_back(
      kindResource(mr::ResourceKind::Pinned, "pinned host (device 0)", {true, true, false}));
  std::ostringstream out;
  memsamples::JsonObject json;
  mr::reportLatency(resources, 0, nullptr, {65536, 1, 1}, out, json);
  EXPECT_NE(out.str().find("\npinned host   4.00 KiB        2 x 5"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("   n/a\n"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("device pool:"), std::string::npos) << out.str();
  EXPECT_TRUE(fake_measure::driver().thresholdsSet.empty());
}

// reportStep() is the lesson's report: each step's lines (as the README shows them), its JSON
// and its checks. The tests below drive it step by step with CPU-only resources.
namespace {

// One device (or @p count), vectors of @p bytes, sized for @p smallest.
mr::Devices devicesOf(int count, std::uint64_t bytes, mr::DeviceFreeMemory smallest,
                      int chosen = 0) {
  mr::Devices devices;
  devices.chosen = chosen;
  devices.chosenName = "NVIDIA H200";
  devices.count = count;
  for (int d = 0; d < count; ++d)
    devices.used.push_back(d);  // every device of the machine takes part
  devices.bytes = bytes;
  devices.smallest = smallest;
  return devices;
}

// Step 4's lines read back as {kind, resource, result, context} (context "" where the line has
// none), however wide the kind's column: "  managed C = A + B on managed (device 0): all 8
// elements exact; used from a thread without a current context: ok" reads as {"managed",
// "managed (device 0)", "all 8 elements exact", "ok"}. A line of another shape is kept whole, as
// {line}, so that it fails a comparison.
Grid kindRunsOf(const std::string& text) {
  Grid runs;
  for (const std::vector<std::string>& cells : cellsOf(text)) {
    std::string line;
    for (const std::string& cell : cells)
      line += (line.empty() ? "" : " ") + cell;
    const std::size_t on = line.find(" C = A + B on ");
    const std::size_t colon = on == std::string::npos ? on : line.find(": ", on);
    if (colon == std::string::npos) {
      runs.push_back({line});
      continue;
    }
    const std::string context = "; used from a thread without a current context: ";
    std::string result = line.substr(colon + 2);
    std::string contextFree;
    const std::size_t at = result.find(context);
    if (at != std::string::npos) {
      contextFree = result.substr(at + context.size());
      result.resize(at);
    }
    runs.push_back(
        {line.substr(0, on), line.substr(on + 14, colon - on - 14), result, contextFree});
  }
  return runs;
}

// What reportStep(6) prints when the latency is skipped: the warnings and the checks.
std::string verdictLines(mr::RunRecord& record, const mr::Devices& devices,
                         mr::Resources& resources) {
  record.skipLatency = true;
  if (!resources.warnings)
    resources.warnings = std::make_unique<mr::WarningLog>();
  std::ostringstream& out = dynamic_cast<std::ostringstream&>(record.report.out());
  out.str("");
  mr::reportStep(6, record, devices, &resources);
  return out.str();
}

}  // namespace

TEST(ReportStep, Step1TheVectorsAsTheReadmeShowsThem) {
  std::ostringstream one, two;
  memsamples::Report report(&one);
  mr::RunRecord record(report);
  EXPECT_EQ(mr::reportStep(1, record, devicesOf(1, 64ull << 20, {0, 140ull << 30})),
            memsamples::Verdict::Pass);
  EXPECT_EQ(one.str(), "Vectors: 16777216 floats (64.0 MiB) each, allocated by 4 host threads\n");
  EXPECT_EQ(report.json().dump(),
            "{\"device\": 0, \"deviceName\": \"NVIDIA H200\", \"deviceCount\": 1, "
            "\"bytesPerVector\": 67108864, \"sizedForDevice\": 0, \"sizedForFreeBytes\": "
            "150323855360, \"threads\": 4, \"devicesUsed\": [0], \"devicesLeftOut\": []}");
  memsamples::Report second(&two);
  mr::RunRecord eight(second);
  eight.threads = 8;
  mr::reportStep(1, eight, devicesOf(2, 4096, {0, 1ull << 30}, 1));
  EXPECT_EQ(two.str(),
            "Vectors: 1024 floats (4.00 KiB) each, allocated by 8 host threads; 2 devices used "
            "(0, 1), sized for device 0's free memory (1.00 GiB)\n");
}

// Issue 33 R1: a GPU left out in step 1 is named with the reason, on screen and in the JSON.
TEST(ReportStep, Step1NamesEveryGpuLeftOut) {
  std::ostringstream out;
  memsamples::Report report(&out);
  mr::RunRecord record(report);
  mr::Devices devices = devicesOf(3, 4096, {0, 1ull << 30});
  devices.used = {0, 2};
  devices.leftOut = {{1, "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): "
                         "no context can be created"}};
  mr::reportStep(1, record, devices);
  // The vectors' line names the devices used (Step1TheVectorsAsTheReadmeShowsThem has its
  // words); one line follows per GPU left out, with the reason exactly as the user reads it.
  const Grid printed = cellsOf(out.str());
  ASSERT_EQ(printed.size(), 2u) << out.str();
  ASSERT_EQ(printed[0].size(), 1u) << out.str();
  EXPECT_EQ(printed[0][0].rfind("Vectors: ", 0), 0u) << out.str();
  EXPECT_NE(printed[0][0].find("; 2 devices used (0, 2), sized for device 0's"), std::string::npos)
      << out.str();
  EXPECT_EQ(printed[1],
            std::vector<std::string>{"Left out: device 1 is in compute mode PROHIBITED "
                                     "(CU_COMPUTEMODE_PROHIBITED): no context can be created "
                                     "(name it with --devices to use it)"});
  const std::string json = report.json().dump();
  EXPECT_NE(json.find("\"devicesUsed\": [0, 2], \"devicesLeftOut\": [{\"device\": 1, "
                      "\"reason\": \"device 1 is in compute mode PROHIBITED"),
            std::string::npos)
      << json;
}

TEST(ReportStep, TheRegistrysAnswersAndTheirChecks) {
  std::ostringstream out;
  memsamples::Report report(&out);
  mr::RunRecord record(report);
  const mr::Devices devices = devicesOf(1, 4096, {0, 1ull << 30});
  record.initial = mr::getCurrentDeviceResource();
  record.perDeviceAnswer = mr::getPerDeviceResource(0);
  record.outOfRange = "device 1 is out of range";
  mr::reportStep(2, record, devices);
  // A heading, then one row per question, in this order, each with its answer in the next cell.
  const Grid printed = cellsOf(out.str());
  ASSERT_EQ(printed.size(), 5u) << out.str();
  EXPECT_TRUE(printed[0].empty()) << out.str();
  ASSERT_EQ(printed[1].size(), 1u) << out.str();
  EXPECT_EQ(printed[1][0].rfind("[7] The process-wide registry (1 device; current device = "
                                "cuCtxGetDevice = 0)",
                                0),
            0u)
      << out.str();
  EXPECT_EQ(Grid(printed.begin() + 2, printed.end()),
            (Grid{{"getCurrentDeviceResource()", "-> initial [host]"},
                  {"getPerDeviceResource(0)", "-> initial"},
                  {"getPerDeviceResource(1)", "-> std::out_of_range: device 1 is out of range"}}))
      << out.str();
  mr::Resources none;
  EXPECT_EQ(verdictLines(record, devices, none), "\nChecks: 3 of 3 passed\n");

  // A wrong answer and a missing error are failed checks, not lines that look right.
  std::ostringstream wrongOut;
  memsamples::Report wrongReport(&wrongOut);
  mr::RunRecord wrong(wrongReport);
  MallocResource other("other", 0);
  wrong.initial = mr::getCurrentDeviceResource();
  wrong.perDeviceAnswer = &other;
  mr::reportStep(2, wrong, devices);
  EXPECT_EQ(wrongOut.str().find("std::out_of_range"), std::string::npos) << wrongOut.str();
  EXPECT_EQ(verdictLines(wrong, devices, none),
            "\nChecks: 1 of 3 passed\n  FAILED: get per device must answer it too\n"
            "  FAILED: a device id that does not exist must get std::out_of_range\n");
}

TEST(ReportStep, Step6TheResourcesAndTheHeadingOfTheKinds) {
  std::ostringstream out;
  memsamples::Report report(&out);
  mr::RunRecord record(report);
  mr::Resources resources;
  resources.kinds.push_back(kindResource(mr::ResourceKind::Pinned, "pinned host (device 0)",
                                         {true, true, false},
                                         "cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP)"));
  mr::KindResource missing;
  missing.kind = mr::ResourceKind::Numa;
  missing.whyNot = "this build has no NUMA support";
  resources.kinds.push_back(std::move(missing));
  mr::reportStep(3, record, devicesOf(1, 4096, {0, 1ull << 30}), &resources);
  // The heading, one row per kind in the order made (its name, resource, properties and detail,
  // or why it was waived), then the heading of the kinds' runs with the threads and the scratch.
  const std::string text = out.str();
  const Grid printed = cellsOf(text);
  ASSERT_EQ(printed.size(), 6u) << text;
  EXPECT_EQ(printed[1], std::vector<std::string>{"[6] Resources of device 0"}) << text;
  EXPECT_EQ(Grid(printed.begin() + 2, printed.begin() + 4),
            (Grid{{"pinned", "pinned host (device 0)", "host+device",
                   "cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP)"},
                  {"numa", "waived: this build has no NUMA support"}}))
      << text;
  EXPECT_EQ(rowsLabelled(text, "pinned").size(), 1u) << text;
  EXPECT_EQ(rowsLabelled(text, "numa").size(), 1u) << text;
  EXPECT_TRUE(printed[0].empty() && printed[4].empty()) << text;
  ASSERT_EQ(printed[5].size(), 1u) << text;
  for (const std::string expected :
       {"[6] Each resource in turn on device 0: ", ": 4 threads ask getCurrentDeviceResource()",
        " 8 x 64.0 KiB scratch each"}) {
    EXPECT_NE(printed[5][0].find(expected), std::string::npos) << expected << "\nin:\n" << text;
  }
}

TEST(ReportStep, Step4EachKindAsTheReadmeShowsItAndItsChecks) {
  std::ostringstream out;
  memsamples::Report report(&out);
  mr::RunRecord record(report);
  const mr::Devices devices = devicesOf(1, 64ull << 20, {0, 140ull << 30});
  mr::Resources resources;
  resources.kinds.push_back(
      kindResource(mr::ResourceKind::Device, "device pool (device 0)", {false, true, true}));
  resources.kinds.push_back(
      kindResource(mr::ResourceKind::Managed, "managed (device 0)", {true, true, false}));
  mr::KindResource& pool = resources.kinds[0];
  mr::KindResource& managed = resources.kinds[1];
  // The pool keeps every rule: set answered the initial one, both threads got it, reset it.
  pool.previous = mr::getPerDeviceResource(0);
  pool.answers = {pool.resource, pool.resource};
  pool.removed = pool.resource;
  mr::reportStep(4, record, devices, &resources, &pool);
  managed.contextFree = true;
  mr::reportStep(4, record, devices, &resources, &managed);
  managed.contextFree = false;
  managed.verified.mismatches = 3;
  managed.verified.firstBad = 5;
  managed.verified.expected = 1.25f;
  managed.verified.actual = 0.0f;
  mr::reportStep(4, record, devices, &resources, &managed);
  // One line per run, in order: the kind, its resource, the vector add's result (the mismatch as
  // describeMismatch() words it) and, where asked, the context-free thread's.
  EXPECT_EQ(kindRunsOf(out.str()),
            (Grid{{"device", "device pool (device 0)", "all 16777216 elements exact", ""},
                  {"managed", "managed (device 0)", "all 16777216 elements exact", "ok"},
                  {"managed", "managed (device 0)", memsamples::describeMismatch(managed.verified),
                   "FAILED"}}))
      << out.str();
  // The pool's 5 checks pass. The managed entry was never set: its set and reset checks fail
  // both times, then its context check and its vector add; its exact vector add passes.
  const std::string verdict = verdictLines(record, devices, resources);
  EXPECT_NE(verdict.find("\nChecks: 7 of 13 passed\n"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("  FAILED: managed: the thread without a context had one current\n"),
            std::string::npos)
      << verdict;
  EXPECT_NE(verdict.find("  FAILED: managed: " + memsamples::describeMismatch(managed.verified)),
            std::string::npos)
      << verdict;
  EXPECT_EQ(verdict.find("FAILED: device:"), std::string::npos) << verdict;
}

TEST(ReportStep, Step5OnOneDeviceIsSkippedAndRecordsEveryKindInOrder) {
  std::ostringstream out;
  memsamples::Report report(&out);
  mr::RunRecord record(report);
  mr::Resources resources;
  resources.kinds.push_back(
      kindResource(mr::ResourceKind::Device, "device pool (device 0)", {false, true, true}, "d"));
  mr::KindResource missing;
  missing.kind = mr::ResourceKind::Numa;
  missing.whyNot = "no libnuma";
  resources.kinds.push_back(std::move(missing));
  const mr::Devices devices = devicesOf(1, 4096, {0, 1ull << 30});
  mr::reportStep(5, record, devices, &resources);
  // The heading alone, saying why: no per-device rows, no refusal line.
  const Grid printed = cellsOf(out.str());
  ASSERT_EQ(printed.size(), 2u) << out.str();
  EXPECT_TRUE(printed[0].empty()) << out.str();
  ASSERT_EQ(printed[1].size(), 1u) << out.str();
  EXPECT_EQ(printed[1][0].rfind("[6] A different resource per device: skipped ", 0), 0u)
      << out.str();
  EXPECT_NE(printed[1][0].find("(this machine has one device)"), std::string::npos) << out.str();
  EXPECT_EQ(report.json().dump(),
            "{\"kinds\": [{\"kind\": \"device\", \"available\": true, \"resource\": \"device "
            "pool (device 0)\", \"properties\": \"device, stream-ordered\", \"detail\": \"d\", "
            "\"mismatches\": 0}, {\"kind\": \"numa\", \"available\": false, \"reason\": \"no "
            "libnuma\"}], \"perDevice\": []}");
  // Issue 36: the kind this machine could not make is named with the reason at the verdict.
  EXPECT_EQ(verdictLines(record, devices, resources),
            "\nWaived kind: numa (no libnuma); the run goes on without it\n"
            "\nChecks: 1 of 1 passed\n");
  EXPECT_NE(report.json().dump().find(
                "\"waivedKinds\": [{\"kind\": \"numa\", \"reason\": \"no libnuma\"}]"),
            std::string::npos)
      << report.json().dump();
}

TEST(ReportStep, Step5PerDeviceAsTheReadmeShowsIt) {
  std::ostringstream out;
  memsamples::Report report(&out);
  mr::RunRecord record(report);
  mr::Resources resources;
  resources.perDevice.push_back(
      kindResource(mr::ResourceKind::Managed, "managed (device 0)", {true, true, false}));
  resources.perDevice.push_back(
      kindResource(mr::ResourceKind::Device, "device pool (device 1)", {false, true, true}));
  resources.perDevice.back().whyNot = "pinned is not available (cannot map host memory)";
  resources.refusal = "device pool (device 1): allocate while a context of device 0 is current";
  const mr::Devices devices = devicesOf(2, 4096, {0, 1ull << 30});
  mr::reportStep(5, record, devices, &resources);
  // The heading; the device whose kind could not be made, with why; the refusal, its error
  // exactly as the user reads it; then one result per device, in the order of the devices.
  const Grid printed = cellsOf(out.str());
  ASSERT_EQ(printed.size(), 6u) << out.str();
  EXPECT_TRUE(printed[0].empty()) << out.str();
  ASSERT_EQ(printed[1].size(), 1u) << out.str();
  EXPECT_EQ(printed[1][0].rfind("[6] A different resource per device, one thread per device ", 0),
            0u)
      << out.str();
  EXPECT_EQ(Grid(printed.begin() + 2, printed.end()),
            (Grid{{"device 1: pinned is not available (cannot map host memory); it keeps the "
                   "device pool"},
                  {"device pool of device 1 used with device 0's context current -> "
                   "std::logic_error: device pool (device 1): allocate while a context of "
                   "device 0 is current"},
                  {"device 0: managed (device 0): exact"},
                  {"device 1: device pool (device 1): exact"}}))
      << out.str();
  EXPECT_EQ(report.json().dump(),
            "{\"kinds\": [], \"perDevice\": [{\"device\": 0, \"kind\": \"managed\", \"result\": "
            "\"managed (device 0): exact\"}, {\"device\": 1, \"kind\": \"device\", \"result\": "
            "\"device pool (device 1): exact\"}]}");
  // Neither entry was set or reset here: those checks fail; the refusal and the devices' end
  // on their initial resources pass.
  const std::string verdict = verdictLines(record, devices, resources);
  EXPECT_NE(verdict.find("\nChecks: 5 of 9 passed\n"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("  FAILED: device 1: set must return the initial resource\n"),
            std::string::npos)
      << verdict;
}

TEST(ReportStep, Step6PrintsTheWarningsThenTheVerdict) {
  std::ostringstream out;
  memsamples::Report report(&out);
  mr::RunRecord record(report);
  mr::Resources resources;
  resources.warnings = std::make_unique<mr::WarningLog>();
  resources.warnings->sink()("mbind failed: memory stays unbound");
  record.checks.expect(true, "fine");
  EXPECT_EQ(verdictLines(record, devicesOf(1, 4096, {0, 1ull << 30}), resources),
            "Warning: mbind failed: memory stays unbound\n\nChecks: 1 of 1 passed\n");
  EXPECT_EQ(report.json().dump(), "{\"waivedKinds\": [], \"checks\": 1, \"failedChecks\": 0}");
  record.checks.expect(false, "reset must return the resource it removed");
  EXPECT_EQ(mr::reportStep(6, record, devicesOf(1, 4096, {0, 1ull << 30}), &resources),
            memsamples::Verdict::Fail);
}

// Step 7 of the lesson reports the parts in the order of the steps (the core, then each kind that
// was made, none for a waived kind, then the registry's answers), then the verdict of every
// check they recorded.
TEST(ReportRun, EveryStepInOrderThenTheVerdict) {
  std::ostringstream out;
  memsamples::Report report(&out);
  mr::RunRecord record(report);
  record.skipLatency = true;
  const mr::Devices devices = devicesOf(1, 4096, {0, 1ull << 30});
  MallocResource built("pinned host (device 0)", 0);  // what the core built and set
  record.core = {mr::getPerDeviceResource(0), {&built, &built, &built}, {}, &built};
  record.initial = mr::getCurrentDeviceResource();
  record.perDeviceAnswer = record.initial;
  record.outOfRange = "device 2 is out of range";
  mr::Resources resources;
  resources.warnings = std::make_unique<mr::WarningLog>();
  resources.kinds.push_back(
      kindResource(mr::ResourceKind::Pinned, "pinned host (device 0)", {true, true, false}));
  mr::KindResource missing;
  missing.kind = mr::ResourceKind::Vmm;
  missing.whyNot = "no virtual memory management";
  resources.kinds.push_back(std::move(missing));
  mr::KindResource& pinned = resources.kinds.front();
  pinned.previous = mr::getPerDeviceResource(0);
  pinned.answers = {pinned.resource};
  pinned.removed = pinned.resource;

  EXPECT_EQ(mr::reportRun(record, devices, resources), memsamples::Verdict::Pass);
  // Each line read back as its cells joined by one space, so that no column width is pinned.
  std::string text;
  for (const std::vector<std::string>& cells : cellsOf(out.str())) {
    for (std::size_t c = 0; c < cells.size(); ++c)
      text += (c == 0 ? "" : " ") + cells[c];
    text += '\n';
  }
  std::size_t at = 0;
  for (const std::string expected :
       {"Vectors: 1024 floats", "\n[2-5] One resource's whole life (the core): pinned host",
        "\nC = A + B on its memory -> all 1024 elements exact\n", "\n[6] Resources of device 0\n",
        "\nvmm waived: no virtual memory management\n", "\n[6] Each resource in turn",
        "\npinned C = A + B on pinned host (device 0): all 1024 elements exact\n",
        "\n[6] A different resource per device: skipped", "\n[7] The process-wide registry",
        "\nWaived kind: vmm (no virtual memory management)", "\nChecks: 14 of 14 passed\n"}) {
    const std::size_t found = text.find(expected, at);
    ASSERT_NE(found, std::string::npos) << expected << "\nafter " << at << " in:\n" << out.str();
    at = found + expected.size() - (expected.back() == '\n' ? 1 : 0);
  }
  EXPECT_EQ(text.find("\nvmm C = A + B"), std::string::npos) << out.str();

  // A rule broken in step 6 is a failed verdict.
  std::ostringstream second;
  memsamples::Report secondReport(&second);
  mr::RunRecord broken(secondReport);
  broken.skipLatency = true;
  broken.initial = record.initial;
  broken.perDeviceAnswer = record.initial;
  broken.outOfRange = record.outOfRange;
  pinned.removed = nullptr;
  EXPECT_EQ(mr::reportRun(broken, devices, resources), memsamples::Verdict::Fail);
  EXPECT_NE(second.str().find("FAILED: pinned: reset must return the resource it removed"),
            std::string::npos)
      << second.str();
}

// The core's part (steps 2-5): what it returned, as the README shows it, and its checks. The
// resource it built is gone by step 7: it is named by what it was, never asked.
// A record whose report writes to a string of its own.
struct RecordedRun {
  std::ostringstream out;
  memsamples::Report report{&out};
  mr::RunRecord record{report};
};

TEST(ReportStep, TheCoreAsTheReadmeShowsItAndItsChecks) {
  const mr::Devices devices = devicesOf(1, 64ull << 20, {0, 140ull << 30});
  mr::MemoryResource* initial = mr::getPerDeviceResource(0);
  MallocResource built("never asked", 0);
  RecordedRun good;
  good.record.core = {initial, {&built, &built, &built}, {}, &built};
  mr::reportStep(mr::kCorePart, good.record, devices);
  EXPECT_EQ(good.out.str(),
            "\n[2-5] One resource's whole life (the core): pinned host (device 0), built, set, "
            "used by 3 threads, reset, destroyed\n"
            "  setCurrentDeviceResource(pinned)  -> initial (the initial resource)\n"
            "  getCurrentDeviceResource()        -> pinned host (device 0) on every thread; A, B "
            "and C allocated through it\n"
            "  C = A + B on its memory           -> all 16777216 elements exact\n"
            "  resetCurrentDeviceResource()      -> pinned host (device 0); then the resource is "
            "destroyed\n");
  EXPECT_EQ(good.report.json().dump(),
            "{\"core\": {\"resource\": \"pinned host (device 0)\", \"previous\": \"initial\", "
            "\"threads\": 3, \"mismatches\": 0}}");
  mr::Resources none;
  EXPECT_EQ(verdictLines(good.record, devices, none), "\nChecks: 6 of 6 passed\n");

  // Every rule broken: set answered another resource, reset removed the initial one (which only
  // thread 1 was answered: threads 0 and 2 disagree with it) and C is wrong. Each is a failed
  // check; thread 1's agreement is the one that passes.
  MallocResource other("other", 0);
  RecordedRun wrong;
  wrong.record.core = {&other, {&built, initial, &built}, {}, initial};
  wrong.record.core.verified.mismatches = 2;
  mr::reportStep(mr::kCorePart, wrong.record, devices);
  EXPECT_NE(wrong.out.str().find("-> not the same on every thread"), std::string::npos)
      << wrong.out.str();
  const std::string verdict = verdictLines(wrong.record, devices, none);
  EXPECT_NE(verdict.find("\nChecks: 1 of 6 passed\n"), std::string::npos) << verdict;
  for (const std::string& expected : std::vector<std::string>{
           "  FAILED: the core: set must return the initial resource\n",
           "  FAILED: the core: thread 0: getCurrentDeviceResource() must return the resource that "
           "was set\n",
           "  FAILED: the core: " + memsamples::describeMismatch(wrong.record.core.verified) + "\n",
           "  FAILED: the core: reset must return the resource it removed, not the initial "
           "one\n"}) {
    EXPECT_NE(verdict.find(expected), std::string::npos) << expected << "\nin:\n" << verdict;
  }

  // A core that did not run prints nothing and checks nothing.
  RecordedRun silent;
  mr::reportStep(mr::kCorePart, silent.record, devices);
  EXPECT_EQ(silent.out.str(), "");
  EXPECT_EQ(verdictLines(silent.record, devices, none), "\nChecks: 0 of 0 passed\n");
}

// askRegistry(): the answers step 7 checks, with an id one past the last for std::out_of_range.
TEST(AskRegistry, TheCurrentDeviceTheChosenOneAndAnIdThatDoesNotExist) {
  RecordedRun asked;
  mr::RunRecord& record = asked.record;
  mr::askRegistry(record, devicesOf(2, 4096, {0, 1ull << 30}));
  EXPECT_EQ(record.initial, mr::processResourceRegistry().initial(0));
  EXPECT_EQ(record.perDeviceAnswer, record.initial);
  EXPECT_EQ(record.outOfRange,
            "per-device resource registry: device 2 is out of range (this registry has 2 "
            "devices: ids 0..1)");
}

TEST(Checks, CountEveryCheckAndListTheFailedOnes) {
  mr::Checks passing;
  passing.expect(true, "a");
  passing.expect(true, "b");
  std::ostringstream out;
  memsamples::JsonObject json;
  EXPECT_EQ(passing.report(out, json), memsamples::Verdict::Pass);
  EXPECT_EQ(out.str(), "\nChecks: 2 of 2 passed\n");
  EXPECT_EQ(json.dump(), "{\"checks\": 2, \"failedChecks\": 0}");

  mr::Checks failing;
  failing.expect(true, "fine");
  failing.expect(false, "reset must return the resource it removed");
  std::ostringstream failed;
  EXPECT_EQ(failing.report(failed, json), memsamples::Verdict::Fail);
  EXPECT_EQ(failed.str(),
            "\nChecks: 1 of 2 passed\n  FAILED: reset must return the resource it removed\n");
}

TEST(Checks, AndWarningsComeFromManyThreads) {
  mr::Checks checks;
  mr::WarningLog warnings;
  const auto warn = warnings.sink();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i)
        checks.expect(i != 0 || t != 3, "thread 3's first");
      warn("from thread " + std::to_string(t));
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  std::ostringstream out;
  memsamples::JsonObject json;
  EXPECT_EQ(checks.report(out, json), memsamples::Verdict::Fail);
  EXPECT_EQ(out.str(), "\nChecks: 7999 of 8000 passed\n  FAILED: thread 3's first\n");
  std::ostringstream printed;
  warnings.print(printed);
  for (int t = 0; t < 8; ++t)
    EXPECT_NE(printed.str().find("Warning: from thread " + std::to_string(t) + "\n"),
              std::string::npos);
}

// A step that throws between set and reset (step 4 for the current device, step 5 per device)
// must not leave a resource registered that is about to be destroyed: Resources' destructor puts
// back what set returned, and the registry is as it was.
TEST(Resources, AStepThatThrowsLeavesTheRegistryAsItWas) {
  mr::MemoryResource* before = mr::getPerDeviceResource(0);
  const int destroyedBefore = MallocResource::destroyed();
  EXPECT_THROW(
      {
        mr::Resources resources;
        resources.kinds.push_back(
            kindResource(mr::ResourceKind::Pinned, "pinned host (device 0)", {true, true, false}));
        mr::KindResource& entry = resources.kinds.back();
        entry.previous = mr::setCurrentDeviceResource(entry.resource);
        EXPECT_EQ(mr::getCurrentDeviceResource(), entry.resource);
        throw std::runtime_error("step 4 failed between set and reset");
      },
      std::runtime_error);
  EXPECT_EQ(mr::getPerDeviceResource(0), before);
  EXPECT_EQ(MallocResource::destroyed(), destroyedBefore + 1);  // destroyed after it was put back

  EXPECT_THROW(
      {
        mr::Resources resources;
        resources.perDevice.push_back(
            kindResource(mr::ResourceKind::Managed, "managed (device 0)", {true, true, false}));
        mr::KindResource& entry = resources.perDevice.back();
        entry.previous = mr::setPerDeviceResource(0, entry.resource);
        throw std::runtime_error("step 5 failed between set and reset");
      },
      std::runtime_error);
  EXPECT_EQ(mr::getPerDeviceResource(0), before);

  // On the good path the reset came first: nothing is put back over it.
  {
    mr::Resources resources;
    resources.kinds.push_back(
        kindResource(mr::ResourceKind::Vmm, "vmm (device 0)", {false, true, false}));
    mr::KindResource& entry = resources.kinds.back();
    entry.previous = mr::setCurrentDeviceResource(entry.resource);
    entry.removed = mr::resetCurrentDeviceResource();
    EXPECT_EQ(entry.removed, entry.resource);
  }
  EXPECT_EQ(mr::getPerDeviceResource(0), before);
}

// The core's error path (perDeviceResource.cpp): its resource is held outside the try block
// around the core, so that the catch resets the device (restoreIfRegistered() with no previous
// resource) while the resource is still alive, and only then is it destroyed. A resource that
// was never built, or never set, changes nothing, not even what another thread set since.
TEST(CoreErrorPath, ResetsTheDeviceBeforeTheResourceIsDestroyed) {
  mr::MemoryResource* before = mr::getPerDeviceResource(0);
  const int destroyedBefore = MallocResource::destroyed();
  EXPECT_THROW(
      {
        std::unique_ptr<MallocResource> pinned;
        try {
          pinned = std::make_unique<MallocResource>("pinned host (device 0)", 0);
          mr::setCurrentDeviceResource(pinned.get());
          EXPECT_EQ(mr::getCurrentDeviceResource(), pinned.get());
          throw std::runtime_error("step 4 failed between set and reset");
        } catch (...) {
          mr::restoreIfRegistered(0, pinned.get(), nullptr);
          EXPECT_EQ(mr::getPerDeviceResource(0), before);
          EXPECT_EQ(MallocResource::destroyed(), destroyedBefore);  // put back while alive
          throw;
        }
      },
      std::runtime_error);
  EXPECT_EQ(mr::getPerDeviceResource(0), before);
  EXPECT_EQ(MallocResource::destroyed(), destroyedBefore + 1);  // destroyed after it was put back

  // Thrown before the resource was built, or before it was set: the registry keeps what it has.
  MallocResource later("later", 0);
  mr::setCurrentDeviceResource(&later);
  mr::restoreIfRegistered(0, nullptr, nullptr);
  MallocResource neverSet("never set", 0);
  mr::restoreIfRegistered(0, &neverSet, nullptr);
  EXPECT_EQ(mr::getPerDeviceResource(0), &later);
  mr::resetCurrentDeviceResource();
  EXPECT_EQ(mr::getPerDeviceResource(0), before);
}

// The core's step 5 (perDeviceResource.cpp): three std::async threads at once each get the current
// device's resource and allocate and free one vector through it; future::get() rethrows what a
// thread threw, and a future's destructor waits for a thread nobody waited for, so that on an
// error path no thread outlives what it uses and std::terminate is never called.
TEST(CoreThreads, EachGetsTheResourceAndAllocatesThroughIt) {
  MallocResource pinned("pinned host (device 0)", 0);
  mr::MemoryResource* previous = mr::setCurrentDeviceResource(&pinned);
  mr::MemoryResource* resource = mr::getCurrentDeviceResource();  // step 4, this thread
  std::vector<mr::MemoryResource*> answers = {resource};
  {
    std::vector<std::future<mr::MemoryResource*>> threads;
    for (int t = 0; t < 3; ++t) {
      threads.push_back(std::async(std::launch::async, [] {
        mr::MemoryResource* mine = mr::getCurrentDeviceResource();
        void* vector = mine->allocate(64, fakeStream(0x10));
        mine->deallocate(vector, 64, fakeStream(0x10));
        return mine;
      }));
    }
    // The core's order (perDeviceResource.cpp, step 5): wait for every thread, reset the slot,
    // and only after the core collect what each thread got (a copy of the pattern, not the core).
    for (std::future<mr::MemoryResource*>& thread : threads)
      thread.wait();
    EXPECT_EQ(pinned.outstanding(), 0);
    EXPECT_EQ(mr::resetCurrentDeviceResource(), &pinned);
    EXPECT_EQ(mr::getCurrentDeviceResource(), previous);
    for (std::future<mr::MemoryResource*>& thread : threads)
      answers.push_back(thread.get());
  }
  ASSERT_EQ(answers.size(), 4u);
  for (mr::MemoryResource* answer : answers)
    EXPECT_EQ(answer, &pinned);
}

TEST(CoreThreads, GetRethrowsWhatTheThreadThrewAndEveryThreadIsWaitedFor) {
  std::atomic<int> finished{0};
  EXPECT_THROW(
      {
        std::vector<std::future<void>> threads;
        for (int t = 0; t < 3; ++t) {
          threads.push_back(std::async(std::launch::async, [&finished, t] {
            if (t == 0)
              throw std::runtime_error("thread 0 failed");
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            ++finished;
          }));
        }
        // As the core: wait for all (nothing is thrown yet), then collect; thread 0's get throws.
        for (std::future<void>& thread : threads)
          thread.wait();
        EXPECT_EQ(finished.load(), 2);
        for (std::future<void>& thread : threads)
          thread.get();
      },
      std::runtime_error);
  EXPECT_EQ(finished.load(), 2);
}

// Step 6's threads (perDeviceResource.cpp's onThreads()): mr::Thread is a std::thread whose join()
// rethrows what the thread threw, and whose destructor joins a thread nobody joined.
TEST(StepSixThreads, JoinRethrowsWhatTheThreadThrewAndEveryThreadIsJoined) {
  std::atomic<int> finished{0};
  EXPECT_THROW(
      {
        std::vector<mr::Thread> threads;
        for (int t = 0; t < 3; ++t) {
          threads.emplace_back([&finished, t] {
            if (t == 0)
              throw std::runtime_error("thread 0 failed");
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            ++finished;
          });
        }
        for (mr::Thread& thread : threads)
          thread.join();  // thread 0's join throws; threads 1 and 2 are joined as they end
      },
      std::runtime_error);
  EXPECT_EQ(finished.load(), 2);

  mr::Thread once([] {});
  once.join();
  EXPECT_THROW(once.join(), std::system_error);  // a thread is joined once
}

// reportStep() checks the answers against the process-wide registry, which the program defines
// (the sample: resources.cpp, with the driver); this binary defines one with CPU-only resources,
// for two devices (step 5 checks each).
mr::PerDeviceResourceRegistry& mr::processResourceRegistry() {
  static PerDeviceResourceRegistry registry(
      2, [](int device) { return std::make_unique<MallocResource>("initial", device); },
      [] { return 0; });
  return registry;
}

// Devices owns every DeviceSetup, whose release is resources.cpp's (with the driver); the
// tests make no DeviceSetup, so this binary's release is empty.
mr::DeviceSetup::~DeviceSetup() {}
