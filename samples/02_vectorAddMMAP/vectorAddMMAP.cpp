/**
 * @file vectorAddMMAP.cpp
 * @brief 01_vectorAddDrv with one change: A, B and C are virtual-memory (VMM) ranges, each one
 *        contiguous pointer backed by several physical allocations that may live on several GPUs.
 *
 * cuMemAlloc does three things at once: it finds free addresses, allocates physical memory and
 * makes it accessible. The VMM API gives each its own call, so a program chooses where the memory
 * lives, how it is cut up and who may touch it, while a kernel still sees one ordinary pointer.
 * Everything after the allocation is 01_vectorAddDrv: read that one first. The steps:
 *
 * 1. **cuInit** and the device, as in 01; the device must report
 *    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, else the sample is WAIVED.
 * 2. **Which devices take part.** queryDeviceTopology() asks the driver about every device
 *    (**cuDeviceCanAccessPeer**, the VMM attribute) and device_roles.cpp decides: *backing*
 *    devices hold the memory, this device and every peer it can access that supports VMM itself;
 *    *mapping* devices may access the range, this one. `--backing` and `--mapping` choose both.
 *    stripedGranularities() takes the largest **cuMemGetAllocationGranularity** of those devices,
 *    minimum and recommended.
 * 3. **cuCtxCreate**, **cuModuleLoadData**, **cuModuleGetFunction**, as in 01.
 * 4. **The size**: **cuMemGetInfo** on every device that holds part of the run (a peer's through
 *    its primary context); device_memory.cpp shrinks the default size until each has room for
 *    its stripes (a `--size` that does not fit is refused, naming the device). The stripes use
 *    the recommended granularity when each is at least that large, else the minimum.
 *    Then **the allocation**, mapStripedRange() in striped_vmm.cpp, one function, for A, B and C:
 *    **cuMemAddressReserve** (addresses only), then per stripe **cuMemCreate** (physical memory on
 *    one device, no address yet), **cuMemMap** (at `base + i x stripe size`), **cuMemRelease**
 *    (the mapping keeps the memory alive), then one **cuMemSetAccess**: read-write for every
 *    mapping device. No cuCtxEnablePeerAccess: a VMM mapping carries its own access rights. If a
 *    call fails half-way, what was built is undone and the error names the call and the stripe.
 * 5. **What the driver sees**, asked from inside every stripe: **cuPointerGetAttributes** gives
 *    the whole range (so one pointer for the kernel) and the stripe's own device;
 *    **cuMemGetAccess** gives read-write for every mapping device, printed per stripe (a stripe
 *    on a peer shows the rights granted there). Anything else FAILs the run.
 * 6. Inputs in, **cuLaunchKernel**, result out, exact check: as in 01.
 * 7. **Measured** (vectorAddMMAP_measure.cpp): the same kernel on cuMemAlloc buffers in the same
 *    run (VMM / cuMemAlloc is about 1 when every stripe is on this GPU; stripes on a peer are
 *    bound by the link), and the host time of building and freeing a range of 1, 2, 8 and 64
 *    stripes next to cuMemAlloc + cuMemFree of the same size.
 * 8. **Cleanup**: each StripedVmmRange is freed with one **cuMemUnmap** of the whole range (each
 *    stripe's memory goes with its only mapping) and **cuMemAddressFree**.
 */
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <vector>

#include "device_roles.hpp"
#include "memsamples.hpp"
#include "striped_vmm.hpp"
#include "vectorAddMMAP_measure.hpp"

namespace ms = memsamples;
namespace vmm = memsamples::vmm;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // 256 Mi floats per vector
constexpr int kBlockSize = 256;                      // threads per block of VecAdd_kernel

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  int stripes = 0;  // 0: one per backing device
  std::vector<int> backing;
  std::vector<int> mapping;
};

ms::Verdict runVectorAddMMAP(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();

  // 1. The driver, a device, and the capability this sample needs.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  const int ordinal = ms::deviceOrdinal(device);  // a CUdevice is a handle, not an ordinal
  out << "Device " << ordinal << ": " << ms::deviceName(device) << '\n';
  int deviceCount = 0;  // bad input before any waiver: the devices the lists name exist
  ms::check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");
  vmm::checkDeviceOrdinals(options.backing, options.mapping, deviceCount);
  int vmmSupported = 0;
  ms::check(cuDeviceGetAttribute(&vmmSupported,
                                 CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device),
            "cuDeviceGetAttribute");
  if (!vmmSupported) {
    throw ms::WaivedError("device " + std::to_string(ordinal) +
                          " does not support virtual memory management "
                          "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
  }

  // [choose-devices]
  // 2. Who holds the memory, who may access it, and the granularities all of them accept.
  const vmm::DeviceTopology topology = vmm::queryDeviceTopology();
  const vmm::DeviceRoles roles =
      vmm::resolveDeviceRoles(ordinal, options.backing, options.mapping, topology);
  const int stripes = vmm::resolveStripeCount(options.stripes, roles.backing.size());
  const vmm::Granularities granularities = vmm::stripedGranularities(roles.backing, roles.mapping);
  // [choose-devices]
  out << "Backing devices: " << vmm::formatDeviceList(roles.backing)
      << "   mapping devices: " << vmm::formatDeviceList(roles.mapping) << "   stripes: " << stripes
      << "   granularity: " << ms::formatBytes(granularities.minimum) << " minimum, "
      << ms::formatBytes(granularities.recommended) << " recommended\n";

  // 3. Context and kernel, as in 01.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
  ms::OwnedModule module;
  ms::check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
  CUfunction vecAdd = nullptr;
  ms::check(cuModuleGetFunction(&vecAdd, module.get(), "VecAdd_kernel"), "cuModuleGetFunction");

  // 4. Three striped ranges, sized so that every device holding part of the run has room: each
  // backing device its stripes of A, B and C, this device also the cuMemAlloc references measured
  // beside them. cuMemGetInfo answers for the current context's device, so a peer's primary
  // context is made current to ask it.
  std::vector<int> holders = roles.backing;
  if (std::find(holders.begin(), holders.end(), ordinal) == holders.end())
    holders.push_back(ordinal);
  std::vector<vmm::DeviceFree> freeMemory;
  for (const int holder : holders) {
    std::size_t freeBytes = 0, totalBytes = 0;
    if (holder == ordinal) {
      ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
    } else {
      CUdevice peer = 0;
      ms::check(cuDeviceGet(&peer, holder), "cuDeviceGet");
      const ms::PrimaryContext peerContext(peer);
      const ms::ScopedContext current(peerContext.get());
      ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
    }
    freeMemory.push_back({holder, freeBytes});
  }
  const vmm::RunShape shape{ordinal, stripes, roles.backing, granularities,
                            mappingCostStripeCounts()};
  // Step 6's three pinned host copies must fit too: in MemAvailable, or a container's limit.
  const std::uint64_t hostFit =
      ms::fitHostMemory(options.sizeBytes, kDefaultBytes, 3, sizeof(float));
  const vmm::RunSize size = vmm::sizeRun(options.sizeBytes, hostFit, shape, freeMemory);
  const std::uint64_t bytes = size.bytes;
  const std::size_t count = bytes / sizeof(float);
  const vmm::StripeLayout& layout = size.layout;
  // The recommended granularity performs better, but a small range would be padded up to it.
  const bool recommended = vmm::recommendedGranularityFits(granularities, bytes, stripes);
  out << "Vectors: " << count << " floats (" << ms::formatBytes(bytes) << ") each, "
      << ms::formatBytes(layout.roundedBytes) << " mapped in " << stripes
      << (stripes == 1 ? " stripe of " : " stripes of ") << ms::formatBytes(layout.stripeBytes)
      << (recommended ? " (recommended granularity)\n"
                      : " (minimum granularity: a stripe is smaller than the recommended one)\n");

  // [allocate-ranges]
  const vmm::StripedVmmRange a(layout, roles.mapping);
  const vmm::StripedVmmRange b(layout, roles.mapping);
  const vmm::StripedVmmRange c(layout, roles.mapping);
  // [allocate-ranges]

  // [driver-view]
  // 5. From inside every stripe of A, the driver must see the whole range (so the kernel's one
  // pointer reaches every stripe), the device the stripe was created on, and read-write access
  // for every mapping device.
  std::vector<std::string> problems;
  out << "  stripe  device  address         range seen from inside    access\n";
  for (std::size_t i = 0; i < layout.stripes.size(); ++i) {
    const vmm::Stripe& stripe = layout.stripes[i];
    const CUdeviceptr address = a.get() + stripe.offset;
    CUdeviceptr rangeStart = 0;
    std::size_t rangeSize = 0;
    int deviceOrdinal = -1;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* values[] = {&rangeStart, &rangeSize, &deviceOrdinal};
    ms::check(cuPointerGetAttributes(3, attributes, values, address), "cuPointerGetAttributes");
    if (rangeStart != a.get() || rangeSize != a.size() || deviceOrdinal != stripe.device) {
      problems.push_back("stripe " + std::to_string(i) + " reports device " +
                         std::to_string(deviceOrdinal) + " and a range of " +
                         std::to_string(rangeSize) + " bytes; expected device " +
                         std::to_string(stripe.device) + " and the whole range");
    }
    std::string access;  // per mapping device, read in this stripe: a peer's stripe has its own
    for (const int mapper : roles.mapping) {
      CUmemLocation location{};
      location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      location.id = mapper;
      unsigned long long flags = 0;
      ms::check(cuMemGetAccess(&flags, &location, address), "cuMemGetAccess");
      if (flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
        problems.push_back("stripe " + std::to_string(i) + ": device " + std::to_string(mapper) +
                           " has access flags " + std::to_string(flags) + ", not read-write");
      }
      access +=
          (access.empty() ? "" : " ") + std::to_string(mapper) + ":" + vmm::describeAccess(flags);
    }
    printStripe(out, i, deviceOrdinal, address, rangeStart, rangeSize, access,
                layout.stripes.size());
  }
  out << "Read-write access for device" << (roles.mapping.size() > 1 ? "s " : " ")
      << vmm::formatDeviceList(roles.mapping)
      << " in every stripe (cuMemGetAccess): " << (problems.empty() ? "yes" : "see FAILED below")
      << '\n';
  // [driver-view]

  // 6. Inputs in, kernel, result out: as in 01, with the ranges' base addresses as pointers.
  ms::OwnedPinnedHostMemory pinnedA, pinnedB, pinnedC;
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

  const unsigned int grid = ms::blocksToCover(count, 4 * kBlockSize);  // a float4 per thread
  CUdeviceptr deviceA = a.get(), deviceB = b.get(), deviceC = c.get();
  unsigned long long n = count;  // exactly the kernel's parameter types, as in 01
  void* kernelParams[] = {&deviceA, &deviceB, &deviceC, &n};
  ms::check(
      cuLaunchKernel(vecAdd, grid, 1, 1, kBlockSize, 1, 1, 0, stream.get(), kernelParams, nullptr),
      "cuLaunchKernel");
  ms::check(cuMemcpyDtoHAsync(hostC, c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(stream.get()), "cuStreamSynchronize");
  const ms::VectorAddCheck firstRun = ms::checkVectorAdd(hostA, hostB, hostC, count);

  // 7. The same kernel on cuMemAlloc memory, and what building a range costs.
  const auto remoteStripes =
      std::count_if(layout.stripes.begin(), layout.stripes.end(),
                    [&](const vmm::Stripe& s) { return s.device != ordinal; });
  const ms::VectorAddLaunch run{vecAdd,  grid,    kBlockSize, stream.get(),
                                a.get(), b.get(), c.get(),    count};
  const ms::VectorAddCheck timedRuns = compareWithCuMemAlloc(
      run, device, static_cast<int>(remoteStripes), options.common, hostA, hostB, hostC, out, json);
  reportMappingCost(roles, granularities, bytes, out, json);

  const ms::VectorAddCheck& verified = firstRun.mismatches > 0 ? firstRun : timedRuns;
  if (verified.mismatches > 0)
    out << ms::describeMismatch(verified) << '\n';
  for (const std::string& problem : problems)
    out << "FAILED: " << problem << '\n';
  recordRun(json, ordinal, ms::deviceName(device), roles, granularities, size, problems);
  json.set("mismatches", static_cast<std::uint64_t>(verified.mismatches));
  // 8. Cleanup: the owners unmap C, B and A and free their addresses, after the stream, the
  // host memory and before the module and the context.
  return verified.mismatches == 0 && problems.empty() ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "vectorAddMMAP",
      "Adds two float vectors like vectorAddDrv, but in virtual-memory ranges striped over "
      "physical allocations (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess); "
      "compares the kernel's bandwidth with cuMemAlloc memory and measures the mapping cost.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4 (default 1G, less if memory is short); "
                      "the mapping rounds it up to stripes x granularity",
                      options.sizeBytes);
  commandLine.addInteger("stripes",
                         "physical allocations per vector, round robin over the backing devices "
                         "(default: one per backing device)",
                         options.stripes, 1, 4096);
  commandLine.addIntegerList("backing",
                             "devices whose memory holds the stripes, e.g. 0,1 (default: this "
                             "device and the peers it can access that support VMM)",
                             options.backing, 0, 1023);
  commandLine.addIntegerList("mapping",
                             "devices given read-write access; must include --device (default: "
                             "--device only)",
                             options.mapping, 0, 1023);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runVectorAddMMAP(options, report); });
}
