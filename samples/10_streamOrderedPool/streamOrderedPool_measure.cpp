// 10_streamOrderedPool's sizing, measurements and probes (see streamOrderedPool_measure.hpp).
#include "streamOrderedPool_measure.hpp"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <ostream>
#include <string>
#include <vector>

#include "pool_attributes.hpp"
#include "pool_verdict.hpp"
#include "support/vector_add.hpp"

namespace ms = memsamples;
namespace pa = pool_attributes;

namespace {

constexpr std::uint64_t kDefaultKernelBytes = 256ull << 20;  // per vector
constexpr int kKernelBuffers = 6;          // A, B, C from the pool and from cuMemAlloc
constexpr std::uint32_t kMixSeed = 2024;   // the same mix on every machine
constexpr std::uint64_t kProbeBytes = 1ull << 20;  // step 6's block
constexpr int kRounds = 3;                 // interleaved kernel timing rounds

using Clock = std::chrono::steady_clock;

double microseconds(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

/// The median and p99 of @p pairUs into @p variant.
void summarize(pool_plan::VariantResult& variant, const std::vector<double>& pairUs) {
  variant.medianUs = pool_plan::quantile(pairUs, 0.5);
  variant.p99Us = pool_plan::quantile(pairUs, 0.99);
}

/// @p variants as a JSON array of objects.
ms::JsonArray toJson(const std::vector<pool_plan::VariantResult>& variants) {
  ms::JsonArray array;
  for (const pool_plan::VariantResult& variant : variants) {
    ms::JsonObject json;
    json.set("name", variant.name).set("medianUs", variant.medianUs).set("p99Us", variant.p99Us);
    if (variant.reservedHigh)
      json.set("reservedHighBytes", *variant.reservedHigh)
          .set("usedHighBytes", *variant.usedHigh)
          .set("reservedAfterSyncBytes", *variant.reservedAfter);
    array.addRaw(json.dump());
  }
  return array;
}

// [pool-loop]
/// One step of a loop on the pool (pool_plan::steps()): each of its groups of blocks allocated in
/// stream order on @p stream (from the device's current pool), then freed in stream order; then
/// the synchronization that ends a step, as a training step ends: that is where a pool above its
/// release threshold gives memory back. Each call is timed on the host: pairUs[i] = allocate +
/// free of block i of the loop. The synchronization is not timed.
void poolStep(CUstream stream, const pool_plan::Loop& loop, const pool_plan::StepRange& step,
              double* pairUs) {
  for (const pool_plan::StepRange& group : pool_plan::groups(loop, step)) {
    std::vector<ms::OwnedDeviceMemory> live(group.count);
    for (std::size_t k = 0; k < group.count; ++k) {
      const std::size_t i = group.first + k;
      const Clock::time_point start = Clock::now();
      ms::check(cuMemAllocAsync(live[k].out(), loop.sizes[i], stream), "cuMemAllocAsync");
      pairUs[i] = microseconds(start, Clock::now());
    }

    for (std::size_t k = 0; k < group.count; ++k) {
      const Clock::time_point start = Clock::now();
      ms::check(cuMemFreeAsync(live[k].release(), stream), "cuMemFreeAsync");
      pairUs[group.first + k] += microseconds(start, Clock::now());
    }
  }

  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
}
// [pool-loop]

/// The same step on cuMemAlloc and cuMemFree, which need no stream and no synchronization.
void allocStep(const pool_plan::Loop& loop, const pool_plan::StepRange& step, double* pairUs) {
  for (const pool_plan::StepRange& group : pool_plan::groups(loop, step)) {
    std::vector<ms::OwnedDeviceMemory> live(group.count);
    for (std::size_t k = 0; k < group.count; ++k) {
      const std::size_t i = group.first + k;
      const Clock::time_point start = Clock::now();
      ms::check(cuMemAlloc(live[k].out(), loop.sizes[i]), "cuMemAlloc");
      pairUs[i] = microseconds(start, Clock::now());
    }

    for (std::size_t k = 0; k < group.count; ++k) {
      const Clock::time_point start = Clock::now();
      ms::check(cuMemFree(live[k].release()), "cuMemFree");
      pairUs[group.first + k] += microseconds(start, Clock::now());
    }
  }
}

/// The first @p warmupSteps steps of @p loop, untimed: the first calls of a kind pay for
/// things a loop pays once, and a pool that keeps its memory fills up here.
template <typename Step>
void warmUp(const pool_plan::Loop& loop, int warmupSteps, Step step) {
  const std::vector<pool_plan::StepRange> steps = pool_plan::steps(loop);
  const std::size_t count = std::min<std::size_t>(std::max(warmupSteps, 0), steps.size());
  std::vector<double> untimed(loop.sizes.size());
  for (std::size_t s = 0; s < count; ++s)
    step(loop, steps[s], untimed.data());
}

/// Every step of @p loop (pool_plan::steps()), each done by @p step(loop, range, pairUs).
/// @return Microseconds per allocate + free pair, one per size.
template <typename Step>
std::vector<double> timedLoop(const pool_plan::Loop& loop, Step step) {
  std::vector<double> pairUs(loop.sizes.size());
  for (const pool_plan::StepRange& range : pool_plan::steps(loop))
    step(loop, range, pairUs.data());
  return pairUs;
}

/// @p loop on cuMemAlloc and cuMemFree, after @p warmupSteps untimed steps.
pool_plan::VariantResult allocFreeLoop(const pool_plan::Loop& loop, int warmupSteps) {
  warmUp(loop, warmupSteps, allocStep);
  pool_plan::VariantResult variant;
  variant.name = "cuMemAlloc + cuMemFree";
  summarize(variant, timedLoop(loop, allocStep));
  return variant;
}

/// @p loop on the pool at release threshold @p threshold: the pool trimmed, run.warmup steps
/// untimed, the high-water marks reset, the loop timed, and the pool's counters read at the
/// end and checked (pool_verdict::checkPoolLoop() against the loop's own live bytes).
pool_plan::VariantResult poolLoop(PoolRun& run, const pool_plan::Loop& loop,
                                  std::uint64_t threshold, const std::string& name) {
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  pa::setReleaseThreshold(run.pool, threshold);
  ms::check(cuMemPoolTrimTo(run.pool, 0), "cuMemPoolTrimTo");

  const CUstream stream = run.first;
  const auto step = [stream](const pool_plan::Loop& steps, const pool_plan::StepRange& range,
                             double* pairUs) { poolStep(stream, steps, range, pairUs); };
  std::vector<double> pairUs;
  try {
    warmUp(loop, run.warmup, step);
    pa::resetHighWater(run.pool);
    pairUs = timedLoop(loop, step);
  } catch (const ms::CudaError& error) {
    if (error.result() != CUDA_ERROR_OUT_OF_MEMORY)
      throw;
    // The loop never holds more than one step's temporaries: a pool that runs out is not
    // reusing what was freed (initcheck was seen to hold freed blocks back), or the GPU is full.
    const pa::PoolUsage usage = pa::readPoolUsage(run.pool);
    throw ms::CudaError(error.result(),
                        std::string(error.what()) + "; " + name + " held " +
                            ms::formatBytes(usage.reservedCurrent) + " reserved for at most " +
                            ms::formatBytes(pool_plan::loopHighWater(loop)) +
                            " live: freed blocks were not reused, or the GPU is full");
  }

  const pa::PoolUsage usage = pa::readPoolUsage(run.pool);
  pool_plan::VariantResult variant;
  variant.name = name;
  summarize(variant, pairUs);
  variant.reservedHigh = usage.reservedHigh;
  variant.usedHigh = usage.usedHigh;
  variant.reservedAfter = usage.reservedCurrent;
  variant.usedAfter = usage.usedCurrent;
  pool_verdict::checkPoolLoop(run.checks, variant, pool_plan::loopHighWater(loop));
  return variant;
}

/// One loop's three variants: cuMemAlloc + cuMemFree, the pool at the keep threshold, the
/// pool at 0; the loop's own high-water mark of live bytes; and the pool's speed-up at the
/// keep threshold (cuMemAlloc + cuMemFree's median over the pool's).
struct LoopResult {
  std::vector<pool_plan::VariantResult> variants;
  std::uint64_t liveHigh = 0;
  double speedUp = 0;
};

/// @p loop, three times (see LoopResult).
LoopResult measureLoop(PoolRun& run, const pool_plan::Loop& loop) {
  const std::uint64_t keep = run.plan.keepThreshold;
  const std::string keepName =
      keep == UINT64_MAX ? std::string("pool, threshold max")
                         : "pool, threshold " + ms::formatBytes(keep);
  LoopResult result;
  result.liveHigh = pool_plan::loopHighWater(loop);
  result.variants.push_back(allocFreeLoop(loop, run.warmup));
  result.variants.push_back(poolLoop(run, loop, keep, keepName));
  result.variants.push_back(poolLoop(run, loop, 0, "pool, threshold 0"));
  result.speedUp = pool_verdict::speedUp(result.variants[0], result.variants[1]);
  return result;
}

/// Step 6's scenario for rule @p rule, run once with the rule on or off (the others off).
bool reuseTrial(PoolRun& run, int rule, bool on, CUevent event) {
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  ms::check(cuStreamSynchronize(run.second), "cuStreamSynchronize");
  ms::check(cuMemPoolTrimTo(run.pool, 0), "cuMemPoolTrimTo");
  pa::ReuseRules rules;
  rules.followEventDependencies = rule == 0 && on;
  rules.allowOpportunistic = rule == 1 && on;
  rules.allowInternalDependencies = rule == 2 && on;
  pa::setReuseRules(run.pool, rules);

  // [reuse-trial]
  ms::OwnedDeviceMemory block;
  ms::check(cuMemAllocAsync(block.out(), kProbeBytes, run.first), "cuMemAllocAsync");
  ms::check(cuMemsetD8Async(block.get(), 0x5A, kProbeBytes, run.first), "cuMemsetD8Async");
  const CUdeviceptr freed = block.get();
  ms::check(cuMemFreeAsync(block.release(), run.first), "cuMemFreeAsync");
  if (rule == 0) {  // stream 2 waits for an event recorded after the free
    ms::check(cuEventRecord(event, run.first), "cuEventRecord");
    ms::check(cuStreamWaitEvent(run.second, event, 0), "cuStreamWaitEvent");
  } else if (rule == 1) {  // the free has completed when stream 2 asks
    // A synchronization that sees a free complete makes its block reusable on any stream
    // whatever the rules, so this shows that documented case, not ALLOW_OPPORTUNISTIC alone.
    ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  }
  // Rule 2: nothing orders stream 2 after the free. The driver adds a dependency only when it
  // cannot get more memory from the device, which 1 MiB on a nearly empty GPU never comes to.
  ms::OwnedDeviceMemory again;
  ms::check(cuMemAllocAsync(again.out(), kProbeBytes, run.second), "cuMemAllocAsync");
  const bool reused = again.get() == freed;
  // [reuse-trial]
  ms::check(cuMemFreeAsync(again.release(), run.second), "cuMemFreeAsync");
  ms::check(cuStreamSynchronize(run.second), "cuStreamSynchronize");
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  return reused;
}

}  // namespace

void sizeRun(const PoolOptions& options, PoolRun& run, std::ostream& out) {
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  run.plan.maxBytes = pool_plan::fitLargest(run.plan.minBytes, run.plan.maxBytes, freeBytes,
                                            pool_plan::kMixLivePerStep);
  run.plan.sameBytes = pool_plan::fitLargest(1, run.plan.sameBytes, freeBytes,
                                             pool_plan::kSameSizeLivePerStep);
  run.kernelBytes = ms::chooseBufferBytes(options.kernelBytes, kDefaultKernelBytes, freeBytes,
                                          kKernelBuffers, sizeof(float));
  run.kernelBytes = ms::fitHostMemory(options.kernelBytes, run.kernelBytes, 3, sizeof(float));
  run.deviceName = ms::deviceName(run.device);
  out << "Device " << run.ordinal << ": " << run.deviceName << '\n';
  out << "Loops: " << run.plan.sameAllocations << " allocations of "
      << ms::formatBytes(run.plan.sameBytes) << " (same size, "
      << pool_plan::kSameSizeLivePerStep << " live, " << pool_plan::kSameSizePairsPerStep
      << " pairs per step), then " << run.plan.allocations
      << " of " << ms::formatBytes(run.plan.minBytes) << " to "
      << ms::formatBytes(run.plan.maxBytes) << " (mix, " << pool_plan::kMixLivePerStep
      << " live per step); kernel vectors " << ms::formatBytes(run.kernelBytes) << '\n';
}

void measureAllocations(PoolRun& run, ms::Report& report) {
  const pool_plan::Loop same = pool_plan::sameSizeLoop(run.plan);
  const pool_plan::Loop mix = pool_plan::mixLoop(run.plan, kMixSeed);

  const LoopResult sameLoop = measureLoop(run, same);
  const LoopResult mixLoop = measureLoop(run, mix);
  pa::setReleaseThreshold(run.pool, run.plan.keepThreshold);

  const pool_verdict::Goal sameGoal{"same size", pool_verdict::kSameSizeGoal};
  const pool_verdict::Goal mixGoal{"mix", pool_verdict::kMixGoal};
  const std::uint64_t keep = run.plan.keepThreshold;
  std::ostream& out = report.out();
  out << pool_plan::latencyTable("Same size, " + ms::formatBytes(run.plan.sameBytes) + ", " +
                                     std::to_string(same.allocationsPerStep) + " pairs per step",
                                 sameLoop.variants)
      << pool_verdict::goalLine(sameGoal, sameLoop.speedUp, keep) << '\n'
      << pool_plan::latencyTable("Mix, " + ms::formatBytes(run.plan.minBytes) + " to " +
                                     ms::formatBytes(run.plan.maxBytes) + " x " +
                                     std::to_string(mix.livePerStep) + " live",
                                 mixLoop.variants)
      << pool_verdict::goalLine(mixGoal, mixLoop.speedUp, keep) << '\n'
      << pool_plan::footprintTable(mixLoop.variants, mixLoop.liveHigh);

  report.json()
      .set("keepThreshold", keep == UINT64_MAX ? std::string("max") : std::to_string(keep))
      .set("sameSizeBytes", run.plan.sameBytes)
      .set("sameSizeAllocations", run.plan.sameAllocations)
      .set("sameSizeLivePerStep", same.livePerStep)
      .set("sameSizePairsPerStep", same.allocationsPerStep)
      .set("sameSizeLiveHighBytes", sameLoop.liveHigh)
      .set("sameSizeVariants", toJson(sameLoop.variants))
      .set("sameSizeSpeedUp", sameLoop.speedUp)
      .set("sameSizeGoal", sameGoal.target)
      .set("sameSizeGoalMet", pool_verdict::goalMet(sameGoal, sameLoop.speedUp, keep))
      .set("allocations", run.plan.allocations)
      .set("minBytes", run.plan.minBytes)
      .set("maxBytes", run.plan.maxBytes)
      .set("livePerStep", mix.livePerStep)
      .set("liveHighBytes", mixLoop.liveHigh)
      .set("variants", toJson(mixLoop.variants))
      .set("poolOverAllocSpeedUp", mixLoop.speedUp)
      .set("mixGoal", mixGoal.target)
      .set("mixGoalMet", pool_verdict::goalMet(mixGoal, mixLoop.speedUp, keep));
}

void probeReuse(PoolRun& run, ms::Report& report) {
  const pa::ReuseRules before = pa::readReuseRules(run.pool);
  ms::OwnedEvent event;
  ms::check(cuEventCreate(event.out(), CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  const char* names[] = {"FOLLOW_EVENT_DEPENDENCIES", "ALLOW_OPPORTUNISTIC",
                         "ALLOW_INTERNAL_DEPENDENCIES"};
  const char* scenarios[] = {"stream 2 waits on an event", "the free has completed",
                             "nothing orders the streams"};
  std::vector<pool_plan::ReuseResult> rows;
  ms::JsonArray json;
  for (int rule = 0; rule < 3; ++rule) {
    pool_plan::ReuseResult row;
    row.rule = names[rule];
    row.scenario = scenarios[rule];
    row.reusedWhenOn = reuseTrial(run, rule, true, event.get());
    row.reusedWhenOff = reuseTrial(run, rule, false, event.get());
    ms::JsonObject entry;
    entry.set("rule", row.rule).set("reusedOn", row.reusedWhenOn).set("reusedOff", row.reusedWhenOff);
    json.addRaw(entry.dump());
    rows.push_back(row);
  }
  pa::setReuseRules(run.pool, before);
  ms::check(cuEventDestroy(event.release()), "cuEventDestroy");
  report.out() << pool_plan::reuseTable(rows);
  report.json().set("reuse", json);
}

void probePeerAccess(PoolRun& run, ms::Report& report) {
  int count = 0;
  ms::check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::ostream& out = report.out();
  out << "Access: device " << run.ordinal << " reads and writes the pool's memory\n";
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice peer = 0;
    ms::check(cuDeviceGet(&peer, ordinal), "cuDeviceGet");
    int canAccess = 0;
    if (ordinal != run.ordinal)
      ms::check(cuDeviceCanAccessPeer(&canAccess, peer, run.device), "cuDeviceCanAccessPeer");
    if (canAccess == 0)
      continue;
    CUmemAccessDesc desc = {};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = ordinal;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ms::check(cuMemPoolSetAccess(run.pool, &desc, 1), "cuMemPoolSetAccess");
    CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    ms::check(cuMemPoolGetAccess(&flags, run.pool, &desc.location), "cuMemPoolGetAccess");
    run.checks.expect(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "step 7: the peer's access",
                      "read and write", std::to_string(static_cast<int>(flags)));
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;  // taken back: later allocations stay local
    ms::check(cuMemPoolSetAccess(run.pool, &desc, 1), "cuMemPoolSetAccess");
    out << "Access: device " << ordinal << " given read and write access (a kernel there "
        << "reading the block is not run yet)\n";
    report.json().set("peerAccess", "device " + std::to_string(ordinal) + ": read and write");
    return;
  }
  out << "Access: peer step not run (" << (count < 2 ? "one GPU" : "no peer-capable GPU")
      << "; it needs a second GPU)\n";
  report.json().set("peerAccess", count < 2 ? "not run: one GPU" : "not run: no peer GPU");
}

void measureKernel(PoolRun& run, ms::Report& report) {
  ms::OwnedModule module;
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction kernel = nullptr;
  ms::check(cuModuleGetFunction(&kernel, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");

  const std::size_t count = run.kernelBytes / sizeof(float);
  std::vector<float> a(count);
  std::vector<float> b(count);
  std::vector<float> c(count);
  ms::fillVectorAddInputs(a.data(), b.data(), count, /*seed=*/kMixSeed);

  // Three vectors from the pool and three from cuMemAlloc, the same inputs in both.
  std::vector<ms::OwnedDeviceMemory> memory(kKernelBuffers);
  // Dies before the vector: on an error no kernel or copy still uses a buffer that is freed
  // (cuMemFree does not wait for the stream on pool memory).
  const ms::DrainOnExit drain(run.first);
  for (int i = 0; i < kKernelBuffers; ++i) {
    if (i < 3)
      ms::check(cuMemAllocFromPoolAsync(memory[i].out(), run.kernelBytes, run.pool, run.first),
                "cuMemAllocFromPoolAsync");
    else
      ms::check(cuMemAlloc(memory[i].out(), run.kernelBytes), "cuMemAlloc");
  }
  ms::VectorAddLaunch launches[2];
  for (int side = 0; side < 2; ++side) {
    ms::VectorAddLaunch& launch = launches[side];
    launch.kernel = kernel;
    launch.block = 256;
    launch.grid = ms::blocksToCover(count, 4 * launch.block);
    launch.stream = run.first;
    launch.count = count;
    launch.a = memory[3 * side].get();
    launch.b = memory[3 * side + 1].get();
    launch.c = memory[3 * side + 2].get();
    ms::check(cuMemcpyHtoDAsync(launch.a, a.data(), run.kernelBytes, run.first), "cuMemcpyHtoDAsync");
    ms::check(cuMemcpyHtoDAsync(launch.b, b.data(), run.kernelBytes, run.first), "cuMemcpyHtoDAsync");
  }

  // Interleaved rounds, each side keeping its best median, so drift favours neither.
  ms::TimingStats best[2] = {};
  for (int round = 0; round < kRounds; ++round) {
    for (int side = 0; side < 2; ++side) {
      const ms::TimingStats stats = ms::timeVectorAdd(launches[side], run.warmup, run.iterations);
      if (round == 0 || stats.medianMs < best[side].medianMs)
        best[side] = stats;
    }
  }
  const char* names[] = {"pool memory", "cuMemAlloc memory"};
  double gbps[2] = {};
  for (int side = 0; side < 2; ++side) {
    std::fill(c.begin(), c.end(), 0.0f);
    ms::check(cuMemcpyDtoHAsync(c.data(), launches[side].c, run.kernelBytes, run.first),
              "cuMemcpyDtoHAsync");
    ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
    const ms::VectorAddCheck checked = ms::checkVectorAdd(a.data(), b.data(), c.data(), count);
    run.checks.expect(checked.mismatches == 0, std::string("step 9: VecAdd on ") + names[side],
                      "every element right", ms::describeMismatch(checked));
    gbps[side] = ms::gigabytesPerSecond(3.0 * static_cast<double>(run.kernelBytes),
                                        best[side].medianMs);
    report.out() << "Kernel  VecAdd on " << std::left << std::setw(18) << names[side]
                 << std::right << std::fixed << std::setprecision(1) << std::setw(9)
                 << gbps[side] << " GB/s  (median " << std::setprecision(3)
                 << best[side].medianMs << " ms)\n";
  }
  report.out() << "Ratio   pool / cuMemAlloc = " << std::setprecision(3) << gbps[0] / gbps[1]
               << '\n';
  report.json()
      .set("kernelBytesPerVector", run.kernelBytes)
      .set("kernelPoolGBps", gbps[0])
      .set("kernelAllocGBps", gbps[1])
      .set("kernelPoolOverAlloc", gbps[0] / gbps[1]);

  for (int i = 0; i < 3; ++i)
    ms::check(cuMemFreeAsync(memory[i].release(), run.first), "cuMemFreeAsync");
  for (int i = 3; i < kKernelBuffers; ++i)
    ms::check(cuMemFree(memory[i].release()), "cuMemFree");
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  ms::check(cuModuleUnload(module.release()), "cuModuleUnload");
}

void reportTrim(PoolRun& run, std::uint64_t reservedBefore, ms::Report& report) {
  const pa::PoolUsage usage = pa::readPoolUsage(run.pool);
  pool_verdict::Trim trim;
  trim.reservedBefore = reservedBefore;
  trim.reservedAfter = usage.reservedCurrent;
  trim.usedAfter = usage.usedCurrent;
  pool_verdict::checkTrim(run.checks, trim);
  report.out() << pool_verdict::trimLine(trim) << '\n';
  report.json()
      .set("reservedBeforeTrimBytes", trim.reservedBefore)
      .set("reservedAfterTrimBytes", trim.reservedAfter);
}

ms::Verdict verdictOf(const PoolRun& run, ms::Report& report) {
  report.json().set("device", run.ordinal).set("deviceName", run.deviceName);
  return pool_verdict::verdict(run.checks, report.out(), report.json());
}
