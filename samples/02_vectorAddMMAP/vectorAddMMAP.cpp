/**
 * @file vectorAddMMAP.cpp
 * @brief 01_vectorAddDrv with one change: A, B and C are virtual-memory (VMM) ranges, each one
 *        device pointer backed by several physical allocations ("stripes") that may live on
 *        several GPUs.
 *
 * cuMemAlloc finds addresses, allocates memory and grants access in one call; VMM gives each its
 * own call. The VMM sequence, in the order it runs, is two regions: `core-b` in striped_vmm.cpp,
 * the allocator mapStripedRange() that builds one range (a file of its own, because
 * 06_perDeviceResource reuses it and the unit tests run it against a fake driver), then `core`
 * below, which builds A, B and C with it, uses them and frees them. The steps:
 *
 * 1. **cuInit**, as in 01.
 * 2. **The devices** (chooseDevices(), run_plan.cpp): the kernel's (WAIVED without VMM), the
 *    *backing* devices that hold the stripes, the *mapping* devices that may access them.
 * 3. **cuCtxCreate**, **cuModuleLoadData**, **cuModuleGetFunction**, as in 01.
 * 4. **The size** (sizeRun(), run_plan.cpp), fitting every device that holds part of the run;
 *    the pinned host vectors (**cuMemHostAlloc**), as in 01.
 * 5. **Build** A, B and C, each by mapStripedRange(): **cuMemGetAllocationGranularity**,
 *    **cuMemAddressReserve**, per stripe **cuMemCreate**, **cuMemMap**, **cuMemRelease**, then
 *    **cuMemSetAccess**.
 * 6. **Use**, as in 01: **cuStreamCreate**, inputs in, **cuLaunchKernel** on the ranges' base
 *    addresses, result out, exact check.
 * 7. **Free**: **cuStreamDestroy**, then per range **cuMemUnmap** of every stripe at once and
 *    **cuMemAddressFree**.
 * 8. **Checked and measured** on three new ranges built the same way (checkAndMeasure(),
 *    vectorAddMMAP_measure.cpp): what the driver sees in every stripe, the kernel against
 *    cuMemAlloc, the host time of building and freeing a range.
 * 9. **The rest of the cleanup**, as in 01: **cuMemFreeHost**, **cuModuleUnload**,
 *    **cuCtxDestroy**.
 */
#include <iostream>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "run_plan.hpp"
#include "striped_vmm.hpp"
#include "vectorAddMMAP_measure.hpp"

namespace ms = memsamples;
namespace vmm = memsamples::vmm;

namespace {

constexpr unsigned int kBlockSize = 256;  // threads per block of VecAdd_kernel

ms::Verdict runVectorAddMMAP(const vmm::RunOptions& options, ms::Report& report) {
  // 1. The driver, as in 01.
  ms::checkDriverInit(cuInit(0));

  // [choose-devices]
  // 2. The devices: the kernel's, those whose memory holds the stripes (backing) and
  // those allowed to access the range (mapping), and the granularities all of them
  // accept. A device without VMM waives the sample; a --backing or --mapping device
  // this machine lacks is a usage error, reported before any waiver.
  const vmm::RunDevices devices = vmm::chooseDevices(options, report);
  // [choose-devices]

  // 3. A context and the kernel, as in 01.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, devices.device), "cuCtxCreate");

  const std::string fatbinPath = ms::locateFatbin("vectorAdd_kernel.fatbin");
  const std::vector<char> fatbin = ms::readBinaryFile(fatbinPath);
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");

  CUfunction vecAdd = nullptr;
  ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"),
            "cuModuleGetFunction");

  // 4. The size. A striped range takes memory on every backing device, not only here,
  // so every device that holds part of the run must have room for its stripes of A, B
  // and C (and this device for the cuMemAlloc references measured beside them).
  const vmm::RunSize size = vmm::sizeRun(options, devices, report);
  const std::uint64_t bytes = size.bytes;
  const std::size_t count = bytes / sizeof(float);

  // The host vectors, as in 01: pinned, so that the copy engine reads and writes them
  // directly.
  ms::OwnedPinnedHostMemory pinnedA;
  ms::OwnedPinnedHostMemory pinnedB;
  ms::OwnedPinnedHostMemory pinnedC;
  ms::check(cuMemHostAlloc(pinnedA.out(), bytes, 0), "cuMemHostAlloc");
  ms::check(cuMemHostAlloc(pinnedB.out(), bytes, 0), "cuMemHostAlloc");
  ms::check(cuMemHostAlloc(pinnedC.out(), bytes, 0), "cuMemHostAlloc");
  float* hostA = static_cast<float*>(pinnedA.get());
  float* hostB = static_cast<float*>(pinnedB.get());
  float* hostC = static_cast<float*>(pinnedC.get());
  ms::fillVectorAddInputs(hostA, hostB, count, 2024);
  const unsigned int grid = ms::blocksToCover(count, 4 * kBlockSize);  // a float4 per thread

  const int stripes = devices.stripes;
  const std::vector<int>& backing = devices.roles.backing;
  const std::vector<int>& mapping = devices.roles.mapping;

  //! [core]
  // 5. Build A, B and C where 01 calls cuMemAlloc, each by mapStripedRange() (striped_vmm.cpp).
  // Each owner frees its range only if an error cuts the lesson short.
  vmm::StripedVmmRange a(bytes, stripes, backing, mapping);
  vmm::StripedVmmRange b(bytes, stripes, backing, mapping);
  vmm::StripedVmmRange c(bytes, stripes, backing, mapping);

  // 6. Use, as in 01: a range is one plain device pointer, its base address.
  ms::OwnedStream stream;  // after A, B and C: on an error it finishes before they are freed
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::check(cuMemcpyHtoDAsync(a.get(), hostA, bytes, stream.get()), "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b.get(), hostB, bytes, stream.get()), "cuMemcpyHtoDAsync");

  CUdeviceptr deviceA = a.get();
  CUdeviceptr deviceB = b.get();
  CUdeviceptr deviceC = c.get();
  unsigned long long n = count;
  void* kernelParams[] = {&deviceA, &deviceB, &deviceC, &n};
  ms::check(cuLaunchKernel(vecAdd, grid, 1, 1, kBlockSize, 1, 1, 0, stream.get(),
                           kernelParams, nullptr),
            "cuLaunchKernel");

  ms::check(cuMemcpyDtoHAsync(hostC, c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
  const ms::VectorAddCheck firstRun = ms::checkVectorAdd(hostA, hostB, hostC, count);

  // 7. Free in reverse order: one cuMemUnmap covers every stripe of a range.
  ms::check(cuStreamDestroy(stream.release()), "cuStreamDestroy");
  for (vmm::StripedVmmRange* range : {&c, &b, &a}) {
    ms::check(cuMemUnmap(range->get(), range->size()), "cuMemUnmap");
    ms::check(cuMemAddressFree(range->get(), range->size()), "cuMemAddressFree");
    range->release();  // bookkeeping, not cuMemRelease: the owner forgets the freed range
  }
  //! [core]

  // 8. Checked and measured on three new ranges built the same way: what the driver sees in
  // every stripe, the kernel against cuMemAlloc, and what building and freeing a range costs.
  const ms::VectorAddLaunch run{vecAdd, grid, kBlockSize, nullptr, 0, 0, 0, count};
  const Step8Findings findings = checkAndMeasure(run, firstRun, hostA, hostB, hostC, devices,
                                                 options.common, report);
  for (const std::string& problem : findings.problems)
    report.out() << "FAILED: " << problem << '\n';
  report.json().set("mismatches", static_cast<std::uint64_t>(findings.verified.mismatches));

  // 9. The rest of the cleanup, every answer checked, as in 01.
  ms::check(cuMemFreeHost(pinnedC.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(pinnedB.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(pinnedA.release()), "cuMemFreeHost");
  ms::check(cuModuleUnload(module.release()), "cuModuleUnload");
  ms::check(cuCtxDestroy(context.release()), "cuCtxDestroy");

  const bool passed = findings.verified.mismatches == 0 && findings.problems.empty();
  return passed ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace
/// Parses the options and hands the sample to runSample(), which owns output and exit
/// codes.
int main(int argc, char** argv) {
  vmm::RunOptions options;
  const char* what =
      "Adds two float vectors like vectorAddDrv, but in virtual-memory ranges striped "
      "over physical allocations (cuMemAddressReserve, cuMemCreate, cuMemMap, "
      "cuMemSetAccess); compares the kernel's bandwidth with cuMemAlloc memory and "
      "measures the mapping cost.";
  ms::CommandLine commandLine("vectorAddMMAP", what);
  commandLine.addCommonOptions(options.common);

  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4, at most 1T (default 256M, less if "
                      "memory is short); the mapping rounds it up to stripes x granularity",
                      options.sizeBytes, 1, vmm::kMaxBytes, sizeof(float));
  commandLine.addInteger("stripes",
                         "physical allocations per vector, round robin over the backing "
                         "devices (default: one per backing device)",
                         options.stripes, 1, 4096);
  commandLine.addIntegerList("backing",
                             "devices whose memory holds the stripes, e.g. 0,1 "
                             "(default: this device and the peers it can access that "
                             "support VMM)",
                             options.backing, 0, 1023);
  commandLine.addIntegerList("mapping",
                             "devices given read-write access; must include --device "
                             "(default: --device only)",
                             options.mapping, 0, 1023);

  return ms::runSample(commandLine, options.common, argc, argv, [&](ms::Report& report) {
    return runVectorAddMMAP(options, report);
  });
}
