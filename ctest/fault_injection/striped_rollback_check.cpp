/**
 * @file striped_rollback_check.cpp
 * @brief The GPU proof that a failed mapStripedRange() (02_vectorAddMMAP) leaves nothing behind:
 *        run under the memsamples_fail_nth_call preload, one driver call of the build fails, and
 *        afterwards the device's free memory is back. Whether the same addresses are granted
 *        again is printed as a note: the address given to cuMemAddressReserve is only a hint.
 *
 * Usage: `LD_PRELOAD=.../libmemsamples_fail_nth_call.so MEMSAMPLES_FAIL_CALL=cuMemMap:4 \`
 *        `memsamples_striped_rollback_check [--device N]`
 *
 * The sample's real code runs against the real driver; only the one call is made to fail. N counts
 * the calls of the checked build alone: the checker disarms the preload before its set-up (cuInit,
 * the context, a warm-up build) and arms it just before the build under test. Exit 0 when every
 * check holds, 1 otherwise (also without the preload: nothing would be tested), 2 (WAIVED) on a
 * machine without a driver or without VMM.
 */
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include "fail_nth_call.hpp"
#include "memsamples.hpp"
#include "run_plan.hpp"
#include "striped_vmm.hpp"

namespace ms = memsamples;
namespace vmm = memsamples::vmm;
namespace shim = memsamples::fail_nth_call;

namespace {

constexpr std::uint64_t kBytes = 64ull << 20;
constexpr int kStripes = 8;

// What the preload library exports; found at run time because the checker must not link it.
struct Preload {
  const unsigned long long* injected = nullptr;
  const unsigned long long* lastReserved = nullptr;
  void (*arm)() = nullptr;
  void (*disarm)() = nullptr;

  unsigned long long injectedCount() const { return __atomic_load_n(injected, __ATOMIC_SEQ_CST); }
  CUdeviceptr lastReservedBase() const { return __atomic_load_n(lastReserved, __ATOMIC_SEQ_CST); }
};

template <typename Pointer>
Pointer lookUp(const char* name) {
  void* address = dlsym(RTLD_DEFAULT, name);
  Pointer pointer = nullptr;
  static_assert(sizeof pointer == sizeof address, "a pointer must fit in a void*");
  std::memcpy(&pointer, &address, sizeof pointer);
  return pointer;
}

std::optional<Preload> findPreload() {
  Preload preload;
  preload.injected = lookUp<const unsigned long long*>(shim::kInjectedCount);
  preload.lastReserved = lookUp<const unsigned long long*>(shim::kLastReservedBase);
  preload.arm = lookUp<void (*)()>(shim::kArm);
  preload.disarm = lookUp<void (*)()>(shim::kDisarm);
  if (!preload.injected || !preload.lastReserved || !preload.arm || !preload.disarm)
    return std::nullopt;
  return preload;
}

// Disarms the preload when the checked build is over, however it ended.
class ArmedScope {
 public:
  explicit ArmedScope(const Preload& preload) : preload_(preload) { preload_.arm(); }
  ~ArmedScope() { preload_.disarm(); }
  ArmedScope(const ArmedScope&) = delete;
  ArmedScope& operator=(const ArmedScope&) = delete;

 private:
  const Preload& preload_;
};

// Prints one line per check and remembers whether all held.
class Checks {
 public:
  explicit Checks(ms::Report& report) : report_(report) {}
  void operator()(bool holds, const std::string& what) {
    report_.out() << (holds ? "  ok    " : "  FAIL  ") << what << "\n";
    allHold_ = allHold_ && holds;
  }
  bool allHold() const { return allHold_; }

 private:
  ms::Report& report_;
  bool allHold_ = true;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  ms::CommonOptions options;
  ms::CommandLine commandLine(
      "striped_rollback_check",
      "Builds a 64 MiB striped VMM range (8 stripes) while the fail_nth_call preload fails one "
      "driver call, then checks that the rollback left no memory and no address reservation.");
  commandLine.addCommonOptions(options, /*timed=*/false);

  return ms::runSample(commandLine, options, argc, argv, [&](ms::Report& report) {
    const std::optional<Preload> preload = findPreload();
    if (!preload) {
      throw std::runtime_error(
          "the fail_nth_call preload is not loaded, so no call would fail and nothing would be "
          "checked: run with LD_PRELOAD=<build>/ctest/libmemsamples_fail_nth_call.so " +
          std::string(shim::kCallVariable) + "=<cuFunction>:<N>");
    }
    preload->disarm();  // the set-up below is not what N counts
    const char* failCall = std::getenv(shim::kCallVariable);
    if (failCall == nullptr) {
      throw std::runtime_error(std::string(shim::kCallVariable) +
                               " is not set, so no call would fail; e.g. " + shim::kCallVariable +
                               "=cuMemMap:4");
    }
    const std::string call = std::string(failCall).substr(0, std::string(failCall).rfind(':'));
    const char* resultText = std::getenv(shim::kResultVariable);
    const CUresult expectedResult =
        resultText ? static_cast<CUresult>(std::atoi(resultText)) : CUDA_ERROR_OUT_OF_MEMORY;

    ms::checkDriverInit(cuInit(0));
    const CUdevice device = ms::selectDevice(options.device);
    const int ordinal = ms::deviceOrdinal(device);
    if (ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0)
      throw ms::WaivedError("device " + std::to_string(ordinal) +
                            " does not support virtual memory management");
    ms::OwnedContext context;
    ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");

    const vmm::Granularities granularities = vmm::stripedGranularities({ordinal}, {ordinal});
    const std::uint64_t granularity = granularities.minimum;
    // The layout mapStripedRange() builds for these arguments, for the messages below.
    const vmm::StripeLayout layout = vmm::planStripes(kBytes, granularities, kStripes, {ordinal});
    // The driver's first VMM calls allocate its own bookkeeping; a build before the measurement
    // keeps that out of the free-memory comparison.
    { const vmm::StripedVmmRange warmUp(kBytes, kStripes, {ordinal}, {ordinal}); }
    std::size_t freeBefore = 0, freeAfter = 0, total = 0;
    ms::check(cuMemGetInfo(&freeBefore, &total), "cuMemGetInfo");

    report.out() << "Building " << ms::formatBytes(layout.roundedBytes) << " in " << kStripes
                 << " stripes on device " << ordinal << " with " << shim::kCallVariable << "="
                 << failCall << "\n";
    std::optional<ms::CudaError> error;
    try {
      const ArmedScope armed(*preload);
      const vmm::StripedVmmRange range(kBytes, kStripes, {ordinal}, {ordinal});
    } catch (const ms::CudaError& thrown) {
      error = thrown;
    }
    Checks check(report);
    check(error.has_value(), "the build threw a CudaError");
    const std::string message = error ? error->what() : "";
    if (error)
      report.out() << "  error: " << message << "\n";
    check(message.rfind(call + " failed at striped_vmm.cpp:", 0) == 0,
          "the error names the injected call " + call + " and where the sample made it");
    check(error && error->result() == expectedResult,
          "the error carries the injected CUresult " +
              std::to_string(static_cast<int>(expectedResult)));
    // A failed reservation is thrown before anything exists, so there is nothing to roll back.
    if (call != "cuMemAddressReserve")
      check(contains(message, "rolled back"), "the error says what was rolled back");
    check(!contains(message, "rollback problems"), "every undo call succeeded");
    check(preload->injectedCount() == 1,
          "exactly one failure was injected (" + std::to_string(preload->injectedCount()) + ")");

    ms::check(cuMemGetInfo(&freeAfter, &total), "cuMemGetInfo");
    const std::uint64_t lost = freeBefore > freeAfter ? freeBefore - freeAfter : 0;
    check(lost < granularity, "free device memory is back (" + std::to_string(lost) +
                                  " bytes missing; less than the granularity, " +
                                  ms::formatBytes(granularity) + ", is allowed)");

    // The driver may place a reservation elsewhere than the address asked for even when nothing
    // leaked, so another address is no proof of a leak; the free memory above is the proof.
    const CUdeviceptr hint = preload->lastReservedBase();
    CUdeviceptr again = 0;
    ms::check(cuMemAddressReserve(&again, layout.roundedBytes, layout.granularity, hint, 0),
              "cuMemAddressReserve");
    ms::check(cuMemAddressFree(again, layout.roundedBytes), "cuMemAddressFree");
    report.out() << "  note  reserving again with the last range's address as a hint gave "
                 << (again == hint ? "that address" : "another address (not a failure)") << "\n";

    report.json()
        .set("failCall", failCall)
        .set("error", message)
        .set("freeBytesBefore", static_cast<std::uint64_t>(freeBefore))
        .set("freeBytesAfter", static_cast<std::uint64_t>(freeAfter))
        .set("reservedAgainAtTheHint", again == hint);
    return check.allHold() ? ms::Verdict::Pass : ms::Verdict::Fail;
  });
}
