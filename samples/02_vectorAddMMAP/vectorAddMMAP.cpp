/**
 * @file vectorAddMMAP.cpp
 * @brief 01_vectorAddDrv with one change: A, B and C are virtual-memory (VMM) ranges, each one
 *        contiguous pointer backed by several physical allocations that may live on several GPUs.
 *
 * cuMemAlloc does three things at once: it finds free addresses, allocates physical memory and
 * makes it accessible. The VMM API gives each its own call, so a program can choose where the
 * memory lives, how it is cut up and who may touch it, while kernels still see one ordinary
 * pointer. Everything after the allocation is the same program as 01_vectorAddDrv: read that one
 * first. The steps:
 *
 * 1. **cuInit** and the device, as in 01. Then the capability check: the device must report
 *    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, else the sample is WAIVED.
 * 2. **Which devices take part.** *Backing* devices hold the memory: this device plus every
 *    device whose memory it can access as a peer (**cuDeviceCanAccessPeer**) and that supports
 *    VMM itself (the attribute is read on that device). *Mapping* devices may access the range:
 *    this device. `--backing` and `--mapping` choose both lists.
 * 3. **cuCtxCreate**, **cuModuleLoadData**, **cuModuleGetFunction**, as in 01.
 * 4. **The allocation** (striped_vmm.hpp), for each of A, B and C:
 *    1. **cuMemGetAllocationGranularity** (minimum) on every backing and mapping device; the
 *       largest wins. The size is rounded up to `stripes x granularity`.
 *    2. **cuMemAddressReserve**: a range of virtual addresses, no memory behind it yet.
 *    3. Per stripe: **cuMemCreate** makes physical memory on one device (it has no address yet);
 *       **cuMemMap** places it at `base + i x stripe size`; **cuMemRelease** drops the handle at
 *       once, because the mapping now keeps the memory alive and cuMemUnmap will free it.
 *    4. **cuMemSetAccess** once for the whole range: read-write for every mapping device. A
 *       mapped range is not accessible until this call, not even by the device that holds it.
 *       This is also why no **cuCtxEnablePeerAccess** is needed when a stripe lives on another
 *       GPU: peer access of contexts concerns cuMemAlloc memory; a VMM mapping carries its own
 *       access rights, granted here, per device. The hardware must still allow the access, which
 *       is why step 2 asked cuDeviceCanAccessPeer.
 *
 *    If any call fails half-way, exactly what was created is undone (mapped stripes unmapped, a
 *    pending handle released, the addresses freed) and the error names the call and the stripe.
 * 5. **What the driver sees**: the layout (stripe, device, offset, size), then from inside every
 *    stripe **cuPointerGetAttribute** (RANGE_START_ADDR, RANGE_SIZE: the reservation;
 *    DEVICE_ORDINAL; MAPPED), **cuMemGetAddressRange** (the mapped piece) and **cuMemGetAccess**
 *    (who may access it). The kernel gets one pointer per vector and never knows about stripes.
 *    Both answers are checked: a stripe that reports another reservation, or a mapping device
 *    without read-write access, makes the run FAIL.
 * 6. Inputs from pinned host memory, **cuLaunchKernel**, result back, exact check: as in 01.
 * 7. **Measured**: the same kernel on cuMemAlloc buffers of the same size in the same run, and
 *    the ratio VMM / cuMemAlloc (the mapping should cost nothing at run time); then the host
 *    time of building and freeing a range, per GiB, for 1, 2, 8 and 64 stripes.
 * 8. **Cleanup**: each StripedVmmRange is freed with one **cuMemUnmap** of the whole range (the
 *    physical memory goes with its last mapping) and **cuMemAddressFree**.
 *
 * `--rollback-test` replaces steps 4 to 7 with a test of the rollback: it makes each build step
 * fail in turn (test-only fault injection, `--inject-failure`), then proves that free device
 * memory (cuMemGetInfo) is back to where it was and that the same addresses can be reserved
 * again.
 */
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <numeric>

#include "memsamples.hpp"
#include "striped_vmm.hpp"

namespace ms = memsamples;
namespace vmm = memsamples::vmm;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // 256 Mi floats per vector
constexpr int kBandwidthRounds = 3;                  // interleaved VMM / cuMemAlloc rounds
constexpr int kCostRepetitions = 5;                  // builds per stripe count in the cost table
constexpr int kCostStripeCounts[] = {1, 2, 8, 64};

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  int stripes = 0;  // 0: one per backing device
  std::vector<int> backing;
  std::vector<int> mapping;
  std::string injectFailure;
  bool rollbackTest = false;
};

// What steps 1 and 2 decided.
struct Setup {
  CUdevice device = 0;
  int ordinal = 0;
  vmm::DeviceTopology topology;
  vmm::DeviceRoles roles;
  int stripes = 0;
  std::uint64_t granularity = 0;
  std::optional<vmm::FaultInjection> fault;
};

vmm::StripedRangeRequest requestFor(const Setup& setup, std::uint64_t bytes) {
  vmm::StripedRangeRequest request;
  request.bytes = bytes;
  request.backingDevices = setup.roles.backing;
  request.mappingDevices = setup.roles.mapping;
  request.stripes = setup.stripes;
  return request;
}

ms::JsonArray jsonDevices(const std::vector<int>& devices) {
  ms::JsonArray array;
  for (const int device : devices)
    array.add(device);
  return array;
}

// ------------------------------------------------------------------- step 5: what the driver sees

// cuPointerGetAttribute writes as many bytes as the attribute's type has (bool, int, CUdeviceptr,
// size_t); reading them through a zeroed, aligned buffer makes every size safe to receive.
template <typename T>
std::optional<T> pointerAttribute(CUpointer_attribute attribute, CUdeviceptr pointer,
                                  CUresult& result) {
  alignas(8) unsigned char storage[16] = {};
  result = cuPointerGetAttribute(storage, attribute, pointer);
  if (result != CUDA_SUCCESS)
    return std::nullopt;
  T value{};
  std::memcpy(&value, storage, sizeof value);
  return value;
}

// What step 5 found: problems are verdict lines (the run FAILs when there is one).
struct DriverView {
  bool oneReservation = true;
  std::vector<std::string> problems;
};

// Prints, from inside each stripe, what the driver reports, and checks it: every stripe must
// report the same reservation (the range is one object to the driver and one pointer to a
// kernel), and every mapping device must have the read-write access cuMemSetAccess granted.
DriverView describePointer(const vmm::StripedVmmRange& range, int deviceCount, std::ostream& out,
                           ms::JsonObject& json) {
  const vmm::StripeLayout& layout = range.layout();
  const std::vector<int> shown = vmm::sampleIndices(static_cast<int>(layout.stripes.size()), 4);
  out << "From inside each stripe (cuPointerGetAttribute, cuMemGetAddressRange):\n"
      << "  stripe  reservation (RANGE_START_ADDR + RANGE_SIZE)  mapped piece "
         "(cuMemGetAddressRange)  DEVICE_ORDINAL  MAPPED\n";
  std::vector<vmm::StripeReservationView> reservations;
  ms::JsonArray rows;
  for (std::size_t i = 0; i < layout.stripes.size(); ++i) {
    const CUdeviceptr pointer = range.get() + layout.stripes[i].offset;
    CUresult startResult = CUDA_SUCCESS, sizeResult = CUDA_SUCCESS, deviceResult = CUDA_SUCCESS,
             mappedResult = CUDA_SUCCESS;
    const auto start =
        pointerAttribute<CUdeviceptr>(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer, startResult);
    const auto size =
        pointerAttribute<std::size_t>(CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer, sizeResult);
    const auto device =
        pointerAttribute<int>(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer, deviceResult);
    const auto mapped = pointerAttribute<bool>(CU_POINTER_ATTRIBUTE_MAPPED, pointer, mappedResult);
    CUdeviceptr pieceBase = 0;
    std::size_t pieceSize = 0;
    const CUresult pieceResult = cuMemGetAddressRange(&pieceBase, &pieceSize, pointer);

    vmm::StripeReservationView view;
    view.stripe = static_cast<int>(i);
    view.rangeStart = start;
    if (size)
      view.rangeSize = std::uint64_t{*size};
    if (!start)
      view.failure = "RANGE_START_ADDR: " + ms::describeResult(startResult);
    else if (!size)
      view.failure = "RANGE_SIZE: " + ms::describeResult(sizeResult);
    const bool sameReservation =
        start && size && *start == range.get() && std::uint64_t{*size} == range.size();
    reservations.push_back(view);

    ms::JsonObject row;
    row.set("stripe", static_cast<int>(i)).set("sameReservation", sameReservation);
    if (device)
      row.set("deviceOrdinal", *device);
    if (pieceResult == CUDA_SUCCESS)
      row.set("mappedPieceBytes", std::uint64_t{pieceSize});
    rows.addRaw(row.dump());

    if (std::find(shown.begin(), shown.end(), static_cast<int>(i)) == shown.end())
      continue;
    const std::string reservation =
        start && size ? vmm::formatAddress(*start) + " + " + ms::formatBytes(*size)
                      : "n/a (" + ms::describeResult(start ? sizeResult : startResult) + ")";
    const std::string piece =
        pieceResult == CUDA_SUCCESS
            ? vmm::formatAddress(pieceBase) + " + " + ms::formatBytes(pieceSize)
            : "n/a (" + ms::describeResult(pieceResult) + ")";
    out << "  " << std::setw(6) << i << "  " << std::left << std::setw(45) << reservation
        << std::setw(37) << piece << std::right << std::setw(14)
        << (device ? std::to_string(*device) : ms::describeResult(deviceResult)) << "  "
        << (mapped ? (*mapped ? "yes" : "no") : ms::describeResult(mappedResult)) << '\n';
  }
  DriverView result;
  result.problems = vmm::reservationProblems(range.get(), range.size(), reservations);
  result.oneReservation = result.problems.empty();
  out << "One reservation seen from every stripe, so one pointer for the kernel: "
      << (result.oneReservation ? "yes" : "NO") << '\n';

  out << "Access (cuMemGetAccess):";
  std::vector<int> allDevices(static_cast<std::size_t>(deviceCount));
  std::iota(allDevices.begin(), allDevices.end(), 0);
  const std::vector<vmm::DeviceAccessView> accessViews = vmm::readDeviceAccess(range, allDevices);
  ms::JsonArray access;
  for (const vmm::DeviceAccessView& view : accessViews) {
    const std::string text = view.flags ? vmm::accessFlagsName(*view.flags) : view.failure;
    out << (view.device > 0 ? "," : "") << " device " << view.device << " " << text;
    access.add(text);
  }
  out << '\n';
  const std::vector<std::string> accessIssues =
      vmm::accessProblems(range.mappingDevices(), accessViews);
  result.problems.insert(result.problems.end(), accessIssues.begin(), accessIssues.end());
  out << "Every mapping device (" << vmm::formatDeviceList(range.mappingDevices())
      << ") has read-write access: " << (accessIssues.empty() ? "yes" : "NO") << '\n';
  json.set("stripesSeenByDriver", rows)
      .set("accessByDevice", access)
      .set("mappingDevicesReadWrite", accessIssues.empty());
  return result;
}

// --------------------------------------------------------------------- step 7: mapping cost

struct CostRow {
  int stripes = 0;
  std::uint64_t bytes = 0;  // the rounded size that was built
  vmm::StepTimes times;     // medians, ms
  double unmapFreeMs = 0;   // median, ms
};

double median(std::vector<double> values) {
  return ms::summarizeTimings(std::move(values)).medianMs;
}

// Builds and frees a range of @p bytes with @p stripes stripes kCostRepetitions times and keeps
// the median host time of every step: they are synchronous driver calls, so a host clock is the
// right instrument (CUDA events would see nothing).
CostRow measureMappingCost(const Setup& setup, std::uint64_t bytes, int stripes) {
  std::vector<double> reserve, create, map, release, setAccess, unmapFree;
  CostRow row;
  row.stripes = stripes;
  for (int repetition = 0; repetition < kCostRepetitions; ++repetition) {
    vmm::StepTimes times;
    vmm::StripedRangeRequest request = requestFor(setup, bytes);
    request.stripes = stripes;
    request.times = &times;
    vmm::StripedVmmRange range(request);
    row.bytes = range.size();
    const auto start = std::chrono::steady_clock::now();
    range.release();
    unmapFree.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    reserve.push_back(times.reserveMs);
    create.push_back(times.createMs);
    map.push_back(times.mapMs);
    release.push_back(times.releaseMs);
    setAccess.push_back(times.setAccessMs);
  }
  row.times = {median(reserve), median(create), median(map), median(release), median(setAccess)};
  row.unmapFreeMs = median(unmapFree);
  return row;
}

void reportMappingCost(const Setup& setup, std::uint64_t bytes, std::ostream& out,
                       ms::JsonObject& json) {
  out << "Mapping cost (host time, median of " << kCostRepetitions << " builds of "
      << ms::formatBytes(bytes) << ", ms per GiB):\n"
      << "  stripes   reserve    create       map   release  set-access  unmap+free     total\n";
  ms::JsonArray rows;
  for (const int stripes : kCostStripeCounts) {
    const CostRow row = measureMappingCost(setup, bytes, stripes);
    const auto perGiB = [&](double ms) { return vmm::millisecondsPerGiB(ms, row.bytes); };
    const double total = row.times.reserveMs + row.times.createMs + row.times.mapMs +
                         row.times.releaseMs + row.times.setAccessMs + row.unmapFreeMs;
    out << std::fixed << std::setprecision(3) << "  " << std::setw(7) << stripes << std::setw(10)
        << perGiB(row.times.reserveMs) << std::setw(10) << perGiB(row.times.createMs)
        << std::setw(10) << perGiB(row.times.mapMs) << std::setw(10) << perGiB(row.times.releaseMs)
        << std::setw(12) << perGiB(row.times.setAccessMs) << std::setw(12)
        << perGiB(row.unmapFreeMs) << std::setw(10) << perGiB(total) << '\n';
    ms::JsonObject item;
    item.set("stripes", stripes)
        .set("bytes", row.bytes)
        .set("reserveMsPerGiB", perGiB(row.times.reserveMs))
        .set("createMsPerGiB", perGiB(row.times.createMs))
        .set("mapMsPerGiB", perGiB(row.times.mapMs))
        .set("releaseMsPerGiB", perGiB(row.times.releaseMs))
        .set("setAccessMsPerGiB", perGiB(row.times.setAccessMs))
        .set("unmapFreeMsPerGiB", perGiB(row.unmapFreeMs))
        .set("totalMsPerGiB", perGiB(total));
    rows.addRaw(item.dump());
  }
  json.set("mappingCost", rows);
}

// ------------------------------------------------------------------------ --rollback-test mode

// A device context that stays alive while we read its free memory: the chosen device uses the
// sample's context, every other backing device its retained primary context. Retaining happens
// once, before any baseline is taken, so that creating a context never shows up as a difference.
class FreeMemoryProbe {
 public:
  FreeMemoryProbe(const std::vector<int>& devices, int currentOrdinal) : devices_(devices) {
    for (const int ordinal : devices_) {
      if (ordinal == currentOrdinal) {
        slots_.push_back(-1);
        continue;
      }
      CUdevice device = 0;
      ms::check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
      slots_.push_back(static_cast<int>(others_.size()));
      others_.emplace_back(device);
    }
  }

  // Free bytes per device, in the order of the constructor's list.
  std::vector<std::uint64_t> read() const {
    std::vector<std::uint64_t> freeBytes;
    for (const int slot : slots_) {
      std::size_t free = 0, total = 0;
      if (slot < 0) {
        ms::check(cuMemGetInfo(&free, &total), "cuMemGetInfo");
      } else {
        ms::check(cuCtxPushCurrent(others_[static_cast<std::size_t>(slot)].get()),
                  "cuCtxPushCurrent");
        const CUresult result = cuMemGetInfo(&free, &total);
        CUcontext popped = nullptr;
        ms::check(cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
        ms::check(result, "cuMemGetInfo");
      }
      freeBytes.push_back(free);
    }
    return freeBytes;
  }

  const std::vector<int>& devices() const noexcept { return devices_; }

 private:
  std::vector<int> devices_;
  std::vector<int> slots_;  // -1: current context; else index into others_
  std::vector<ms::PrimaryContext> others_;
};

std::string signedBytes(std::uint64_t before, std::uint64_t after) {
  return after >= before ? "+" + ms::formatBytes(after - before)
                         : "-" + ms::formatBytes(before - after);
}

ms::Verdict runRollbackTest(const Options& options, const Setup& setup, ms::Report& report) {
  std::ostream& out = report.out();
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  // Two ranges' worth: the failed build and the reuse never coexist, but the margin is cheap.
  const std::uint64_t bytes =
      ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, freeBytes, 2, sizeof(float));
  vmm::StripedRangeRequest request = requestFor(setup, bytes);
  const FreeMemoryProbe probe(setup.roles.backing, setup.ordinal);

  // Control: a complete build must be visible in cuMemGetInfo, else the test below would prove
  // nothing. It also lets the driver create whatever bookkeeping it keeps after a first mapping,
  // so that the baselines below are not disturbed by it.
  const std::vector<std::uint64_t> idle = probe.read();
  std::vector<std::uint64_t> held;
  vmm::StripeLayout layout;
  {
    vmm::StripedVmmRange control(request);
    held = probe.read();
    layout = control.layout();
    control.release();
  }
  out << "Rollback test: ranges of " << ms::formatBytes(layout.roundedBytes) << " in "
      << layout.stripes.size() << " stripes of " << ms::formatBytes(layout.stripeBytes)
      << ", granularity " << ms::formatBytes(layout.granularity) << '\n';
  bool passed = true;
  for (std::size_t i = 0; i < probe.devices().size(); ++i) {
    std::uint64_t expected = 0;
    for (const vmm::Stripe& stripe : layout.stripes) {
      if (stripe.device == probe.devices()[i])
        expected += stripe.bytes;
    }
    const bool visible = idle[i] >= held[i] && idle[i] - held[i] >= expected;
    out << "  control: a complete range takes "
        << (idle[i] >= held[i] ? ms::formatBytes(idle[i] - held[i]) : "nothing")
        << " of free memory on device " << probe.devices()[i]
        << " (its stripes there: " << ms::formatBytes(expected) << ")"
        << (visible ? "" : "  <-- cuMemGetInfo misses it") << '\n';
    passed = passed && visible;
  }
  if (!passed) {
    out << "cuMemGetInfo does not show the range's memory, so it cannot prove a rollback\n";
    return ms::Verdict::Fail;
  }

  const std::vector<vmm::FaultInjection> scenarios =
      setup.fault ? std::vector<vmm::FaultInjection>{*setup.fault}
                  : vmm::rollbackScenarios(setup.stripes);
  out << "  inject      free memory after (per backing device)   addresses reserved again\n";
  ms::JsonArray results;
  for (const vmm::FaultInjection& fault : scenarios) {
    const std::vector<std::uint64_t> before = probe.read();
    request.fault = fault;
    request.addressHint = 0;
    std::optional<vmm::VmmStepError> caught;
    try {
      vmm::StripedVmmRange range(request);
    } catch (const vmm::VmmStepError& error) {
      caught = error;
    }
    const std::vector<std::uint64_t> after = probe.read();

    // 1. The error: injected, at the requested step and stripe, and saying so.
    std::vector<std::string> problems;
    const std::string name = vmm::formatFaultInjection(fault);
    const int expectedStripe = vmm::isPerStripeStep(fault.step) ? fault.index : -1;
    if (!caught) {
      problems.push_back("the build succeeded although " + name + " was injected");
    } else {
      const std::string message = caught->what();
      const std::string stripeText =
          "stripe " + std::to_string(fault.index) + " of " + std::to_string(setup.stripes);
      if (!caught->injected() || caught->step() != fault.step ||
          caught->stripe() != expectedStripe) {
        problems.push_back("the error is not the injected one: " + message);
      }
      if (message.find(vmm::stepCallName(fault.step)) == std::string::npos ||
          (expectedStripe >= 0 && message.find(stripeText) == std::string::npos) ||
          message.find("rolled back") == std::string::npos) {
        problems.push_back("the message does not name the call, the stripe and the rollback: " +
                           message);
      }
      if ((fault.step == vmm::VmmStep::Reserve) != (caught->reservedBase() == 0)) {
        problems.push_back("the error reports reserved address " +
                           vmm::formatAddress(caught->reservedBase()));
      }
    }

    // 2. Free memory back to where it was on every backing device. The tolerance is one
    // granularity: the smallest thing a rollback could leak is one stripe, at least that big.
    std::string memoryText;
    for (std::size_t i = 0; i < before.size(); ++i) {
      const bool restored = vmm::freeMemoryRestored(before[i], after[i], layout.granularity);
      memoryText += (i > 0 ? ", " : "") + signedBytes(before[i], after[i]);
      if (!restored) {
        problems.push_back("device " + std::to_string(probe.devices()[i]) + " has " +
                           ms::formatBytes(before[i] - after[i]) + " less free memory");
      }
    }

    // 3. The addresses are free again: a complete range reserved with the failed build's base
    // as hint must get exactly that base (a leaked reservation would push it elsewhere).
    const CUdeviceptr oldBase = caught ? caught->reservedBase() : 0;
    request.fault.reset();
    request.addressHint = oldBase;
    std::string reuseText;
    {
      vmm::StripedVmmRange again(request);
      if (oldBase == 0) {
        reuseText = "yes, at " + vmm::formatAddress(again.get()) + " (no earlier reservation)";
      } else if (again.get() == oldBase) {
        reuseText = "yes, the same " + vmm::formatAddress(oldBase);
      } else {
        reuseText =
            "NO: hint " + vmm::formatAddress(oldBase) + ", got " + vmm::formatAddress(again.get());
        problems.push_back("the failed build's addresses " + vmm::formatAddress(oldBase) +
                           " could not be reserved again");
      }
      again.release();
    }

    out << "  " << std::left << std::setw(10) << name << "  " << std::setw(40) << memoryText << " "
        << reuseText << std::right << '\n';
    if (caught)
      out << "      error: " << caught->what() << '\n';
    for (const std::string& problem : problems)
      out << "      FAILED: " << problem << '\n';
    passed = passed && problems.empty();

    ms::JsonObject item;
    item.set("inject", name)
        .set("error", caught ? caught->what() : "")
        .set("freeMemoryChange", memoryText)
        .set("reuse", reuseText)
        .set("passed", problems.empty());
    results.addRaw(item.dump());
  }
  report.json()
      .set("mode", "rollback-test")
      .set("bytes", layout.roundedBytes)
      .set("stripes", setup.stripes)
      .set("granularity", layout.granularity)
      .set("scenarios", results);
  return passed ? ms::Verdict::Pass : ms::Verdict::Fail;
}

// ------------------------------------------------------------------------------- the sample

ms::Verdict runVectorAddMMAP(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  Setup setup;
  // Checked before any GPU work so that a typo costs nothing.
  if (!options.injectFailure.empty())
    setup.fault = vmm::parseFaultInjection(options.injectFailure);

  // 1. Driver, device, and the capability this sample needs.
  ms::initDriver();
  setup.device = ms::selectDevice(options.common.device);
  setup.ordinal = ms::deviceOrdinal(setup.device);  // a CUdevice is a handle, not an ordinal
  out << "Device " << setup.ordinal << ": " << ms::deviceName(setup.device) << '\n';
  if (ms::deviceAttribute(setup.device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) ==
      0) {
    throw ms::WaivedError("device " + std::to_string(setup.ordinal) + " (" +
                          ms::deviceName(setup.device) +
                          ") does not support virtual memory management "
                          "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
  }

  // 2. Backing and mapping devices, stripes, granularity.
  setup.topology = vmm::queryDeviceTopology();
  setup.roles =
      vmm::resolveDeviceRoles(setup.ordinal, options.backing, options.mapping, setup.topology);
  setup.stripes = vmm::resolveStripeCount(options.stripes, setup.roles.backing.size());
  if (setup.fault)
    vmm::validateFaultInjection(*setup.fault, setup.stripes);
  setup.granularity = vmm::stripedGranularity(setup.roles.backing, setup.roles.mapping);
  out << "Backing devices: " << vmm::formatDeviceList(setup.roles.backing)
      << "   mapping devices: " << vmm::formatDeviceList(setup.roles.mapping)
      << "   stripes: " << setup.stripes << "   granularity: " << ms::formatBytes(setup.granularity)
      << " (largest minimum of those devices)\n";
  ms::JsonObject& json = report.json();
  json.set("device", setup.ordinal)
      .set("deviceName", ms::deviceName(setup.device))
      .set("backingDevices", jsonDevices(setup.roles.backing))
      .set("mappingDevices", jsonDevices(setup.roles.mapping))
      .set("stripes", setup.stripes)
      .set("granularity", setup.granularity);

  // 3. Context; module and kernel.
  ms::Context context(setup.device);
  const std::string fatbinPath = ms::locateFatbin(ms::kVectorAddFatbin);
  ms::Module module(fatbinPath);
  const CUfunction kernel = module.function(ms::kVectorAddKernel);
  out << "Kernels: " << fatbinPath << '\n';

  if (options.rollbackTest)
    return runRollbackTest(options, setup, report);

  // 4. Three striped ranges. Six buffers of this size exist at the peak (the three cuMemAlloc
  // reference buffers of step 7), so the default size is chosen for six.
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const std::uint64_t bytes =
      ms::chooseBufferBytes(options.sizeBytes, kDefaultBytes, freeBytes, 6, sizeof(float));
  const std::size_t count = bytes / sizeof(float);
  const vmm::StripeLayout plan =
      vmm::planStripes(bytes, setup.granularity, setup.stripes, setup.roles.backing);
  if (3 * plan.roundedBytes + 3 * bytes > freeBytes) {
    throw ms::UsageError("--stripes " + std::to_string(setup.stripes) +
                         " rounds each vector up to " + ms::formatBytes(plan.roundedBytes) +
                         "; three of those and three " + ms::formatBytes(bytes) +
                         " reference buffers do not fit in the " + ms::formatBytes(freeBytes) +
                         " free; use fewer stripes or a smaller --size");
  }
  out << "Vectors: " << count << " floats (" << ms::formatBytes(bytes) << ") each\n";

  vmm::StripedRangeRequest request = requestFor(setup, bytes);
  request.fault = setup.fault;  // test only: --inject-failure makes this first build fail
  vmm::StripedVmmRange a(request);
  request.fault.reset();
  vmm::StripedVmmRange b(request), c(request);

  // 5. The layout, and what the driver reports about it.
  out << "Layout of A (B and C are the same at " << vmm::formatAddress(b.get()) << " and "
      << vmm::formatAddress(c.get()) << "):\n"
      << vmm::formatLayoutTable(a.layout(), a.get());
  const DriverView driverView = describePointer(a, setup.topology.deviceCount(), out, json);
  ms::JsonArray layoutJson;
  for (const vmm::Stripe& stripe : a.layout().stripes) {
    ms::JsonObject item;
    item.set("device", stripe.device).set("offset", stripe.offset).set("bytes", stripe.bytes);
    layoutJson.addRaw(item.dump());
  }

  // 6. Inputs from pinned host memory, kernel, result back: as in 01.
  ms::PinnedHostBuffer hostA(bytes), hostB(bytes), hostC(bytes);
  ms::fillVectorAddInputs(hostA.as<float>(), hostB.as<float>(), count, 2024);
  ms::Stream stream;
  ms::check(cuMemcpyHtoDAsync(a.get(), hostA.get(), bytes, stream.get()), "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b.get(), hostB.get(), bytes, stream.get()), "cuMemcpyHtoDAsync");

  const unsigned int grid = ms::residentGridSize(kernel, setup.device, ms::kVectorAddBlockSize);
  ms::launchVectorAdd(kernel, grid, a.get(), b.get(), c.get(), count, stream.get());
  ms::check(cuMemcpyDtoHAsync(hostC.get(), c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
  stream.synchronize();

  // Exact verification.
  const ms::VectorAddCheck firstCheck =
      ms::checkVectorAdd(hostA.as<float>(), hostB.as<float>(), hostC.as<float>(), count);

  // 7. Bandwidth: the same kernel on VMM ranges and on cuMemAlloc buffers of the same size, in
  // interleaved rounds (clocks and temperature drift during a run; each side keeps its best
  // median). Both results are checked once more, so the timed launches are verified too.
  const int warmup = options.common.warmup;
  const int iterations = options.common.iterations;
  ms::TimingStats onVmm{}, onMemAlloc{};
  ms::VectorAddCheck timedCheck, referenceCheck;
  {
    ms::DeviceBuffer refA(bytes), refB(bytes), refC(bytes);
    ms::check(cuMemcpyDtoDAsync(refA.get(), a.get(), bytes, stream.get()), "cuMemcpyDtoDAsync");
    ms::check(cuMemcpyDtoDAsync(refB.get(), b.get(), bytes, stream.get()), "cuMemcpyDtoDAsync");
    for (int round = 0; round < kBandwidthRounds; ++round) {
      const ms::TimingStats vmmRound = ms::timeOnStream(stream.get(), warmup, iterations, [&] {
        ms::launchVectorAdd(kernel, grid, a.get(), b.get(), c.get(), count, stream.get());
      });
      const ms::TimingStats allocRound = ms::timeOnStream(stream.get(), warmup, iterations, [&] {
        ms::launchVectorAdd(kernel, grid, refA.get(), refB.get(), refC.get(), count, stream.get());
      });
      if (round == 0 || vmmRound.medianMs < onVmm.medianMs)
        onVmm = vmmRound;
      if (round == 0 || allocRound.medianMs < onMemAlloc.medianMs)
        onMemAlloc = allocRound;
    }
    ms::check(cuMemcpyDtoHAsync(hostC.get(), c.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
    stream.synchronize();
    timedCheck = ms::checkVectorAdd(hostA.as<float>(), hostB.as<float>(), hostC.as<float>(), count);
    ms::check(cuMemcpyDtoHAsync(hostC.get(), refC.get(), bytes, stream.get()), "cuMemcpyDtoHAsync");
    stream.synchronize();
    referenceCheck =
        ms::checkVectorAdd(hostA.as<float>(), hostB.as<float>(), hostC.as<float>(), count);
  }
  const ms::VectorAddCheck& verified = firstCheck.mismatches > 0   ? firstCheck
                                       : timedCheck.mismatches > 0 ? timedCheck
                                                                   : referenceCheck;

  const double vmmGBps = ms::gigabytesPerSecond(3.0 * static_cast<double>(bytes), onVmm.medianMs);
  const double allocGBps =
      ms::gigabytesPerSecond(3.0 * static_cast<double>(bytes), onMemAlloc.medianMs);
  const double peakGBps = ms::theoreticalPeakGBps(setup.device);
  out << std::fixed << std::setprecision(1);
  out << "Kernel  on VMM range  " << std::setw(8) << vmmGBps << " GB/s  (median "
      << std::setprecision(3) << onVmm.medianMs << " ms, reads A and B, writes C)\n";
  out << std::setprecision(1) << "Kernel  on cuMemAlloc " << std::setw(8) << allocGBps
      << " GB/s  (median " << std::setprecision(3) << onMemAlloc.medianMs
      << " ms, same kernel, same size, same run)\n";
  out << std::setprecision(1) << "Peak    theoretical   " << std::setw(8) << peakGBps
      << " GB/s  (memory clock x 2 x bus width)\n";
  // Stripes on other GPUs are read and written over the peer link: then the ratio measures the
  // link (see 05_p2pMemMap), not the mapping.
  const auto remoteStripes =
      std::count_if(a.layout().stripes.begin(), a.layout().stripes.end(),
                    [&setup](const vmm::Stripe& stripe) { return stripe.device != setup.ordinal; });
  const std::string expectation =
      remoteStripes == 0
          ? "expected about 1: a mapping costs nothing once built"
          : std::to_string(remoteStripes) + " of " + std::to_string(a.layout().stripes.size()) +
                " stripes live on other GPUs, so the peer link bounds it";
  out << std::setprecision(3) << "Ratio   VMM / cuMemAlloc = " << vmmGBps / allocGBps << " ("
      << expectation << "), VMM / peak = " << vmmGBps / peakGBps << '\n';

  if (verified.mismatches > 0)
    out << ms::describeMismatch(verified) << '\n';
  for (const std::string& problem : driverView.problems)
    out << "FAILED: " << problem << '\n';

  reportMappingCost(setup, bytes, out, json);

  json.set("bytesPerVector", static_cast<std::uint64_t>(bytes))
      .set("reservedBytesPerVector", a.size())
      .set("stripeBytes", a.layout().stripeBytes)
      .set("layout", layoutJson)
      .set("oneReservation", driverView.oneReservation)
      .set("elements", static_cast<std::uint64_t>(count))
      .set("iterations", iterations)
      .set("vmmKernelMedianMs", onVmm.medianMs)
      .set("vmmKernelGBps", vmmGBps)
      .set("cuMemAllocKernelMedianMs", onMemAlloc.medianMs)
      .set("cuMemAllocKernelGBps", allocGBps)
      .set("vmmOverCuMemAlloc", vmmGBps / allocGBps)
      .set("stripesOnOtherDevices", static_cast<long long>(remoteStripes))
      .set("theoreticalPeakGBps", peakGBps)
      .set("vmmOverPeak", vmmGBps / peakGBps)
      .set("mismatches", static_cast<std::uint64_t>(verified.mismatches));
  ms::JsonArray problems;
  for (const std::string& problem : driverView.problems)
    problems.add(problem);
  json.set("driverViewProblems", problems);
  // 8. Cleanup: c, b, a are unmapped and their addresses freed by their destructors.
  return verified.mismatches == 0 && driverView.problems.empty() ? ms::Verdict::Pass
                                                                 : ms::Verdict::Fail;
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
  commandLine.addFlag("rollback-test",
                      "TEST MODE: instead of adding vectors, make each build step fail in turn and "
                      "check that free memory comes back and the addresses can be reserved again",
                      options.rollbackTest);
  commandLine.addString("inject-failure",
                        "TEST ONLY: make one build call fail without calling it: reserve, "
                        "create:K, map:K, release:K or access (K = stripe). Alone: the run fails "
                        "with that error. With --rollback-test: only this failure is tested",
                        options.injectFailure, "STEP");
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runVectorAddMMAP(options, report); });
}
