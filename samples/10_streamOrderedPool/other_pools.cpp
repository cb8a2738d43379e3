// 10_streamOrderedPool's step 8: managed and host-location pools (see other_pools.hpp).
#include "other_pools.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <vector>

namespace ms = memsamples;

namespace {

constexpr std::uint64_t kProbeBytes = 1ull << 20;  // 1 MiB from each pool

using OwnedPool = ms::DriverHandle<CUmemoryPool, cuMemPoolDestroy>;

/// What a call answered, as a table cell: "ok" or the result's name.
std::string answer(CUresult result) {
  return result == CUDA_SUCCESS ? "ok" : ms::describeResult(result);
}

/// Gives the device read and write access to @p pool, whose memory lives elsewhere (the host).
/// @return The driver's answer.
CUresult grantDeviceAccess(const PoolRun& run, CUmemoryPool pool) {
  CUmemAccessDesc desc = {};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = run.ordinal;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return cuMemPoolSetAccess(pool, &desc, 1);
}

/// 1 MiB from @p pool on stream 1, written by the device, read by the CPU and freed; the pool
/// destroyed. The device must have access to the pool.
/// @return The first call that failed and its answer, or "" when all worked.
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
  // host RAM, which a host-location pool makes accessible to the CPU by default. So the CPU
  // reads it once the device has written it. A copy engine would not: cuMemcpyDtoHAsync
  // refuses a host-location pool's pointer as its source (CUDA_ERROR_INVALID_VALUE on the
  // H200, driver 580).
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

/// Prints @p outcome as @p name's row and writes it to the JSON.
void reportPool(const std::string& name, const std::string& outcome, ms::Report& report) {
  report.out() << "  " << std::left << std::setw(22) << name << std::right << outcome << '\n';
  report.json().set(name, outcome);
}

}  // namespace

void tryPool(PoolRun& run, const CUmemPoolProps& props, const std::string& name,
             ms::Report& report) {
  OwnedPool pool;
  const CUresult created = cuMemPoolCreate(pool.out(), &props);
  std::string outcome = "cuMemPoolCreate: " + answer(created);
  if (created != CUDA_SUCCESS) {
    reportPool(name, outcome, report);
    return;
  }

  // A pool at the device's own location is the device's. One elsewhere (host memory) is
  // accessible to the CPU by default, not to the device: the device may use it only once
  // it has been granted access, and a refusal means the pool is not touched from the GPU.
  if (props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    const CUresult access = grantDeviceAccess(run, pool.get());
    outcome += ", cuMemPoolSetAccess (device): " + answer(access);
    if (access != CUDA_SUCCESS) {
      ms::check(cuMemPoolDestroy(pool.release()), "cuMemPoolDestroy");
      reportPool(name, outcome + ": access refused, so the GPU does not use it", report);
      return;
    }
  }

  const std::string failed = usePool(run, pool, name);
  outcome += failed.empty() ? ", 1 MiB allocated, written, read by the CPU, freed" : ", " + failed;
  reportPool(name, outcome, report);
}

void probeOtherPools(PoolRun& run, ms::Report& report) {
  std::ostream& out = report.out();
  out << "Other pools (what the driver answered):\n";

  // Managed memory has no one location: its default pool is asked for at location NONE.
  CUmemLocation none = {};
  none.type = CU_MEM_LOCATION_TYPE_NONE;
  CUmemoryPool managedDefault = nullptr;
  const CUresult managed =
      cuMemGetDefaultMemPool(&managedDefault, &none, CU_MEM_ALLOCATION_TYPE_MANAGED);
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

