/**
 * @file vectorAddMMAP.cpp
 * @brief 01_vectorAddDrv with one change: A, B and C are virtual-memory (VMM) ranges,
 *        each one contiguous pointer backed by several physical allocations that may
 *        live on several GPUs.
 *
 * cuMemAlloc does three things at once: it finds free addresses, allocates physical
 * memory and makes it accessible. The VMM API gives each its own call, so a program
 * chooses where the memory lives, how it is cut up and who may touch it, while a kernel
 * still sees one ordinary pointer. Everything after the allocation is 01_vectorAddDrv:
 * read that one first. The VMM calls themselves are one function, mapStripedRange(), and
 * its free function beside it, in the region of striped_vmm.cpp marked `core` (a file of
 * its own because 06_perDeviceResource reuses it and the unit tests run it against a fake
 * driver). The steps:
 *
 * 1. **cuInit**, as in 01.
 * 2. **The devices** (chooseDevices(), run_plan.cpp): the kernel's device, as in 01,
 *    which must support VMM, else the sample is WAIVED; the *backing* devices whose
 *    memory holds the stripes and the *mapping* devices that may access them; the
 *    granularity (minimum and recommended) that all of them accept, asked here to print
 *    it and to size the run.
 * 3. **cuCtxCreate**, **cuModuleLoadData**, **cuModuleGetFunction**, as in 01.
 * 4. **The size** (sizeRun(), run_plan.cpp), checked against the free memory of every
 *    device that holds part of the run. Then **A, B and C**, each built by
 *    mapStripedRange(), the core: **cuMemGetAllocationGranularity** for every backing
 *    and mapping device, **cuMemAddressReserve**, per stripe **cuMemCreate**,
 *    **cuMemMap** and **cuMemRelease**, then one **cuMemSetAccess** for the mapping
 *    devices. A failure half-way undoes what was built and names the call and the
 *    stripe.
 * 5. **What the driver sees** from inside every stripe of A (checkDriverView()):
 *    **cuPointerGetAttributes** must report the whole range and the stripe's own
 *    device, **cuMemGetAccess** read-write for every mapping device; anything else
 *    FAILs the run.
 * 6. Inputs in, **cuLaunchKernel** on the ranges' base addresses, result out, exact
 *    check: as in 01.
 * 7. **Measured** (vectorAddMMAP_measure.cpp), in the same run: the kernel on cuMemAlloc
 *    buffers, and the host time of building and freeing a range against cuMemAlloc and
 *    cuMemFree.
 * 8. **Cleanup** in reverse order of creation, every answer checked, as in 01:
 *    **cuStreamDestroy**, **cuMemFreeHost**, then unmapStripedRange() (the core's last
 *    function: one **cuMemUnmap** and **cuMemAddressFree** per range), **cuModuleUnload**
 *    and **cuCtxDestroy**.
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
  // and C (and this device for the cuMemAlloc references measured beside them). The
  // size is then rounded up to stripes x granularity.
  const vmm::RunSize size = vmm::sizeRun(options, devices, report);
  const std::uint64_t bytes = size.bytes;
  const std::size_t count = bytes / sizeof(float);

  // [allocate-ranges]
  // Three striped ranges where 01 has three cuMemAlloc calls. Each StripedVmmRange
  // constructor calls vmm::mapStripedRange(), the core in striped_vmm.cpp, and nothing
  // else: the granularity of every backing and mapping device, cuMemAddressReserve for
  // the whole range, then for each stripe cuMemCreate, cuMemMap and cuMemRelease, then
  // one cuMemSetAccess for the mapping devices. If a call fails, what it built is undone
  // before the error leaves. On an error path later on, the owners' destructors free the
  // ranges; on the good path step 8 does, with checked calls (cuMemUnmap,
  // cuMemAddressFree).
  const std::vector<int>& backing = devices.roles.backing;
  const std::vector<int>& mapping = devices.roles.mapping;
  vmm::StripedVmmRange a(bytes, devices.stripes, backing, mapping);
  vmm::StripedVmmRange b(bytes, devices.stripes, backing, mapping);
  vmm::StripedVmmRange c(bytes, devices.stripes, backing, mapping);
  // [allocate-ranges]

  // 5. From inside every stripe of A, the driver must see the whole range (so the
  // kernel's one pointer reaches every stripe), the device the stripe was created on,
  // and read-write access for every mapping device.
  const std::vector<std::string> problems =
      checkDriverView(a, devices.roles.mapping, report);

  // 6. Inputs in, kernel, result out: as in 01, with the ranges' base addresses as the
  // pointers. Pinned host memory lets the copy engine read and write it directly.
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

  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::check(cuMemcpyHtoDAsync(a.get(), hostA, bytes, stream.get()), "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b.get(), hostB, bytes, stream.get()), "cuMemcpyHtoDAsync");

  // [launch]
  // One float4 per thread, as in 01. The parameters have exactly the kernel's types: a
  // CUdeviceptr for each `const float*`, and n as unsigned long long.
  constexpr unsigned int kBlockSize = 256;  // threads per block of VecAdd_kernel
  const unsigned int grid = ms::blocksToCover(count, 4 * kBlockSize);
  CUdeviceptr deviceA = a.get();
  CUdeviceptr deviceB = b.get();
  CUdeviceptr deviceC = c.get();
  unsigned long long n = count;
  void* kernelParams[] = {&deviceA, &deviceB, &deviceC, &n};
  ms::check(cuLaunchKernel(vecAdd, grid, 1, 1, kBlockSize, 1, 1, 0, stream.get(),
                           kernelParams, nullptr),
            "cuLaunchKernel");
  // [launch]

  ms::check(cuMemcpyDtoHAsync(hostC, c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
  // Every element is compared exactly with A + B, as in 01.
  const ms::VectorAddCheck firstRun = ms::checkVectorAdd(hostA, hostB, hostC, count);

  // 7. The same kernel on cuMemAlloc memory, and what building a range costs, both
  // measured in this run. C is checked again after the timed launches, and the first
  // wrong element of either check is printed.
  ms::VectorAddLaunch launch;
  launch.kernel = vecAdd;
  launch.grid = grid;
  launch.block = kBlockSize;
  launch.stream = stream.get();
  launch.a = a.get();
  launch.b = b.get();
  launch.c = c.get();
  launch.count = count;
  const ms::VectorAddCheck verified = measureAgainstCuMemAlloc(
      launch, firstRun, hostA, hostB, hostC, devices, options.common, report);

  for (const std::string& problem : problems)
    report.out() << "FAILED: " << problem << '\n';
  report.json().set("mismatches", static_cast<std::uint64_t>(verified.mismatches));

  // [cleanup]
  // 8. Cleanup, in reverse order of creation, every answer checked, as in 01. Every
  // launch and copy has finished (the measurement waited for the last one), so the
  // stream can go first; then the host copies; then the ranges, each unmapped and its
  // addresses freed (the last function of the core); then the module and the context.
  ms::check(cuStreamDestroy(stream.release()), "cuStreamDestroy");
  ms::check(cuMemFreeHost(pinnedC.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(pinnedB.release()), "cuMemFreeHost");
  ms::check(cuMemFreeHost(pinnedA.release()), "cuMemFreeHost");

  // An owner gives its range up only after the free succeeded: if cuMemUnmap fails, the
  // owner still holds the range, and its destructor tries again.
  vmm::unmapStripedRange(c.get(), c.size());
  c.release();
  vmm::unmapStripedRange(b.get(), b.size());
  b.release();
  vmm::unmapStripedRange(a.get(), a.size());
  a.release();

  ms::check(cuModuleUnload(module.release()), "cuModuleUnload");
  ms::check(cuCtxDestroy(context.release()), "cuCtxDestroy");
  // [cleanup]

  const bool passed = verified.mismatches == 0 && problems.empty();
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
