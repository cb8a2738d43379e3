// 10_streamOrderedPool's sizing, measurements and probes (see streamOrderedPool_measure.hpp).
#include "streamOrderedPool_measure.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <string>
#include <vector>

#include "pool_attributes.hpp"
#include "support/vector_add.hpp"

namespace ms = memsamples;
namespace pa = pool_attributes;

namespace {

constexpr std::uint64_t kDefaultKernelBytes = 256ull << 20;  // per vector
constexpr int kKernelBuffers = 6;          // A, B, C from the pool and from cuMemAlloc
constexpr std::uint32_t kMixSeed = 2024;   // the same mix on every machine
constexpr std::uint64_t kProbeBytes = 1ull << 20;  // steps 6 and 8
constexpr int kRounds = 3;                 // interleaved kernel timing rounds

using OwnedPool = ms::DriverHandle<CUmemoryPool, cuMemPoolDestroy>;
using Clock = std::chrono::steady_clock;

double microseconds(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

/// The median and p99 of @p pairUs into @p variant.
void summarize(pool_plan::VariantResult& variant, const std::vector<double>& pairUs) {
  variant.medianUs = pool_plan::quantile(pairUs, 0.5);
  variant.p99Us = pool_plan::quantile(pairUs, 0.99);
}

/// @p variant as a JSON object.
ms::JsonObject toJson(const pool_plan::VariantResult& variant) {
  ms::JsonObject json;
  json.set("name", variant.name).set("medianUs", variant.medianUs).set("p99Us", variant.p99Us);
  if (variant.reservedHigh)
    json.set("reservedHighBytes", *variant.reservedHigh)
        .set("usedHighBytes", *variant.usedHigh)
        .set("reservedAfterSyncBytes", *variant.reservedAfter);
  return json;
}

/// The allocation loop over @p sizes, each call timed on the host: steps of
/// kTemporariesPerStep allocations, all freed at the end of their step. With @p stream,
/// cuMemAllocAsync and cuMemFreeAsync from the device's current pool, and a synchronization
/// ending each step, as a training step ends; without, cuMemAlloc and cuMemFree.
/// @return microseconds per allocate + free pair, one per size.
std::vector<double> timedLoop(const std::vector<std::uint64_t>& sizes, CUstream stream) {
  std::vector<double> pairUs(sizes.size());
  // [pool-loop]
  std::vector<ms::OwnedDeviceMemory> live(pool_plan::kTemporariesPerStep);
  for (std::size_t first = 0; first < sizes.size(); first += pool_plan::kTemporariesPerStep) {
    const std::size_t count = std::min<std::size_t>(pool_plan::kTemporariesPerStep,
                                                    sizes.size() - first);
    for (std::size_t k = 0; k < count; ++k) {
      const Clock::time_point start = Clock::now();
      if (stream != nullptr)
        ms::check(cuMemAllocAsync(live[k].out(), sizes[first + k], stream), "cuMemAllocAsync");
      else
        ms::check(cuMemAlloc(live[k].out(), sizes[first + k]), "cuMemAlloc");
      pairUs[first + k] = microseconds(start, Clock::now());
    }
    for (std::size_t k = 0; k < count; ++k) {
      const Clock::time_point start = Clock::now();
      if (stream != nullptr)
        ms::check(cuMemFreeAsync(live[k].release(), stream), "cuMemFreeAsync");
      else
        ms::check(cuMemFree(live[k].release()), "cuMemFree");
      pairUs[first + k] += microseconds(start, Clock::now());
    }
    if (stream != nullptr)  // where a pool at a low threshold gives its memory back
      ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
  // [pool-loop]
  return pairUs;
}

/// The loop on cuMemAlloc and cuMemFree.
pool_plan::VariantResult allocFreeLoop(const std::vector<std::uint64_t>& sizes) {
  pool_plan::VariantResult variant;
  variant.name = "cuMemAlloc + cuMemFree";
  summarize(variant, timedLoop(sizes, nullptr));
  return variant;
}

/// The loop on the pool at release threshold @p threshold, started empty (trimmed, high-water
/// marks reset); the pool's counters read at the end and checked.
pool_plan::VariantResult poolLoop(PoolRun& run, const std::vector<std::uint64_t>& sizes,
                                  std::uint64_t threshold, const std::string& name) {
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  pa::setReleaseThreshold(run.pool, threshold);
  ms::check(cuMemPoolTrimTo(run.pool, 0), "cuMemPoolTrimTo");
  pa::resetHighWater(run.pool);
  std::vector<double> pairUs;
  try {
    pairUs = timedLoop(sizes, run.first);
  } catch (const ms::CudaError& error) {
    if (error.result() != CUDA_ERROR_OUT_OF_MEMORY)
      throw;
    // The loop never holds more than one step's temporaries: a pool that runs out is not
    // reusing what was freed (initcheck was seen to hold freed blocks back), or the GPU is full.
    const pa::PoolUsage usage = pa::readPoolUsage(run.pool);
    throw ms::CudaError(error.result(),
                        std::string(error.what()) + "; " + name + " held " +
                            ms::formatBytes(usage.reservedCurrent) + " reserved for at most " +
                            ms::formatBytes(pool_plan::loopHighWater(sizes)) +
                            " live: freed blocks were not reused, or the GPU is full");
  }
  const pa::PoolUsage usage = pa::readPoolUsage(run.pool);
  pool_plan::VariantResult variant;
  variant.name = name;
  summarize(variant, pairUs);
  variant.reservedHigh = usage.reservedHigh;
  variant.usedHigh = usage.usedHigh;
  variant.reservedAfter = usage.reservedCurrent;
  run.checks.expect(usage.usedCurrent == 0, name + ": memory in use after the last free",
                    "0 bytes", ms::formatBytes(usage.usedCurrent));
  run.checks.expect(usage.reservedHigh >= usage.usedHigh, name + ": reserved high-water mark",
                    "at least the used one (" + ms::formatBytes(usage.usedHigh) + ")",
                    ms::formatBytes(usage.reservedHigh));
  return variant;
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

/// What trying @p call answered, as a table cell: "ok" or the result's name.
std::string answer(CUresult result) {
  return result == CUDA_SUCCESS ? "ok" : ms::describeResult(result);
}

/// Step 8: 1 MiB from @p pool on stream 1, written by the device, read by the CPU and freed;
/// the pool destroyed.
/// Returns the first call that failed and its answer, or "" when all worked.
std::string usePool(PoolRun& run, OwnedPool& pool, const std::string& name) {
  ms::OwnedDeviceMemory block;
  const std::size_t words = kProbeBytes / sizeof(std::uint32_t);
  std::vector<std::uint32_t> host(words);
  CUresult result = cuMemAllocFromPoolAsync(block.out(), kProbeBytes, pool.get(), run.first);
  if (result != CUDA_SUCCESS)
    return "cuMemAllocFromPoolAsync: " + answer(result);
  result = cuMemsetD32Async(block.get(), 0xC0FFEEu, words, run.first);
  if (result != CUDA_SUCCESS)
    return "cuMemsetD32Async: " + answer(result);
  // Both kinds of pool hand out memory the CPU reads directly: managed memory, or memory in
  // host RAM, which a host-location pool makes accessible to the CPU by default (tryPool()
  // gave the device access). So the CPU reads it once the device has written it.
  // A copy engine would not: cuMemcpyDtoHAsync refuses a host-location pool's pointer as its
  // source (CUDA_ERROR_INVALID_VALUE on the H200, driver 580).
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  std::memcpy(host.data(), reinterpret_cast<const void*>(block.get()), kProbeBytes);
  ms::check(cuMemFreeAsync(block.release(), run.first), "cuMemFreeAsync");
  ms::check(cuStreamSynchronize(run.first), "cuStreamSynchronize");
  const auto good = std::count(host.begin(), host.end(), 0xC0FFEEu);
  run.checks.expect(static_cast<std::size_t>(good) == words, "step 8: 1 MiB of the " + name,
                    std::to_string(words) + " words", std::to_string(good));
  ms::check(cuMemPoolDestroy(pool.release()), "cuMemPoolDestroy");
  return "";
}

/// Step 8 for one kind of pool: create it from @p props, use it, print what the driver said.
void tryPool(PoolRun& run, CUmemPoolProps props, const std::string& name, ms::Report& report) {
  OwnedPool pool;
  const CUresult created = cuMemPoolCreate(pool.out(), &props);
  std::string outcome = "cuMemPoolCreate: " + answer(created);
  if (created == CUDA_SUCCESS && props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    // A host-location pool's memory is accessible to the CPU by default, not to the
    // device: the device is given access first.
    CUmemAccessDesc desc = {};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = run.ordinal;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const CUresult access = cuMemPoolSetAccess(pool.get(), &desc, 1);
    outcome += ", cuMemPoolSetAccess (device): " + answer(access);
  }
  if (created == CUDA_SUCCESS) {
    const std::string failed = usePool(run, pool, name);
    outcome += failed.empty() ? ", 1 MiB allocated, written, read by the CPU, freed" : ", " + failed;
  }
  report.out() << "  " << std::left << std::setw(22) << name << std::right << outcome << '\n';
  report.json().set(name, outcome);
}

}  // namespace

void sizeRun(const PoolOptions& options, PoolRun& run, std::ostream& out) {
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  run.plan.maxBytes = pool_plan::fitLargest(run.plan.minBytes, run.plan.maxBytes, freeBytes);
  run.kernelBytes = ms::chooseBufferBytes(options.kernelBytes, kDefaultKernelBytes, freeBytes,
                                          kKernelBuffers, sizeof(float));
  run.kernelBytes = ms::fitHostMemory(options.kernelBytes, run.kernelBytes, 3, sizeof(float));
  run.deviceName = ms::deviceName(run.device);
  out << "Device " << run.ordinal << ": " << run.deviceName << '\n';
  out << "Mix: " << run.plan.allocations << " allocations of " << ms::formatBytes(run.plan.minBytes)
      << " to " << ms::formatBytes(run.plan.maxBytes) << ", " << pool_plan::kTemporariesPerStep
      << " live per step; kernel vectors " << ms::formatBytes(run.kernelBytes) << '\n';
}

void measureAllocations(PoolRun& run, ms::Report& report) {
  const std::vector<std::uint64_t> sizes =
      pool_plan::sizeMix(run.plan.allocations, run.plan.minBytes, run.plan.maxBytes, kMixSeed);
  const std::uint64_t liveHigh = pool_plan::loopHighWater(sizes);

  std::vector<pool_plan::VariantResult> variants;
  variants.push_back(allocFreeLoop(sizes));
  const std::string keepName = run.plan.keepThreshold == UINT64_MAX
                                   ? std::string("pool, threshold max")
                                   : "pool, threshold " + ms::formatBytes(run.plan.keepThreshold);
  ms::JsonArray json;
  json.addRaw(toJson(variants.back()).dump());
  for (const std::uint64_t threshold : {run.plan.keepThreshold, std::uint64_t{0}}) {
    const std::string name = threshold == 0 ? "pool, threshold 0" : keepName;
    variants.push_back(poolLoop(run, sizes, threshold, name));
    json.addRaw(toJson(variants.back()).dump());
    run.checks.expect(*variants.back().usedHigh >= liveHigh, name + ": used high-water mark",
                      "at least the live bytes' " + ms::formatBytes(liveHigh),
                      ms::formatBytes(*variants.back().usedHigh));
  }
  pa::setReleaseThreshold(run.pool, run.plan.keepThreshold);

  std::ostream& out = report.out();
  out << pool_plan::latencyTable(variants) << pool_plan::footprintTable(variants, liveHigh);
  const double speedUp = variants[0].medianUs / variants[1].medianUs;
  out << "Goal: the pool keeping its memory at least 100x faster per pair than cuMemAlloc: "
      << (speedUp >= 100 ? "met" : "not met") << " (" << std::fixed << std::setprecision(1)
      << speedUp << "x)\n";
  const std::string keep = run.plan.keepThreshold == UINT64_MAX
                               ? std::string("max")
                               : std::to_string(run.plan.keepThreshold);
  report.json()
      .set("keepThreshold", keep)
      .set("allocations", run.plan.allocations)
      .set("minBytes", run.plan.minBytes)
      .set("maxBytes", run.plan.maxBytes)
      .set("liveHighBytes", liveHigh)
      .set("variants", json)
      .set("poolOverAllocSpeedUp", speedUp);
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

void probeOtherPools(PoolRun& run, ms::Report& report) {
  std::ostream& out = report.out();
  out << "Other pools (what the driver answered):\n";
  CUmemLocation none = {};
  none.type = CU_MEM_LOCATION_TYPE_NONE;
  CUmemoryPool managedDefault = nullptr;
  const CUresult managed = cuMemGetDefaultMemPool(&managedDefault, &none, CU_MEM_ALLOCATION_TYPE_MANAGED);
  out << "  managed default pool  cuMemGetDefaultMemPool: " << answer(managed) << '\n';
  report.json().set("managedDefaultPool", answer(managed));

  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = run.ordinal;
  tryPool(run, props, "managedPool", report);

  int hostPools = 0;
  ms::check(cuDeviceGetAttribute(&hostPools, CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED,
                                 run.device),
            "cuDeviceGetAttribute");
  if (hostPools == 0) {
    // Not asked: a refused call would only repeat the attribute (and count as an API
    // error under compute-sanitizer).
    out << "  hostPool              not tried: HOST_MEMORY_POOLS_SUPPORTED = 0\n";
    report.json().set("hostPool", "not tried: HOST_MEMORY_POOLS_SUPPORTED = 0");
    return;
  }
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  props.location.id = 0;
  tryPool(run, props, "hostPool", report);
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

ms::Verdict verdictOf(const PoolRun& run, ms::Report& report) {
  for (const std::string& failure : run.checks.failures())
    report.out() << "Check failed: " << failure << '\n';
  report.out() << "Checks: " << run.checks.checks() << ", failed: "
               << run.checks.failures().size() << '\n';
  ms::JsonArray failures;
  for (const std::string& failure : run.checks.failures())
    failures.add(failure);
  report.json()
      .set("device", run.ordinal)
      .set("deviceName", run.deviceName)
      .set("checks", static_cast<std::uint64_t>(run.checks.checks()))
      .set("failures", failures);
  return run.checks.passed() ? ms::Verdict::Pass : ms::Verdict::Fail;
}
