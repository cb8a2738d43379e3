/**
 * @file memsamples.hpp
 * @brief The one header a lesson includes: what every sample needs and no sample teaches.
 *
 * In the order a lesson meets them: errors and check() (a failed driver call becomes an exception
 * that names it; runSample() alone turns it into output and an exit code: 0 PASS, 1 FAIL,
 * 2 WAIVED), owners that release what the lesson's own calls created, the command line, device
 * selection and driver checks, the fatbin lookup, timing, and sizing within free memory. The
 * machinery behind it is in Common/support/, one small header each (the README's "Layout" lists
 * them), with the weak driver imports the build adds to every file (weak_driver.hpp). Every
 * function may also throw std::bad_alloc; comments name the rest.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/json.hpp"  // JsonObject: what Report::json() gives a sample to fill

/// Everything shared by the CUDA Memory Samples.
namespace memsamples {

// --- Outcome and errors --------------------------------------------------------------------------

/// Process exit codes, shared with CTest (`SKIP_RETURN_CODE 2`).
enum ExitCode : int {
  kExitPass = 0,    ///< The sample ran and its results were verified.
  kExitFail = 1,    ///< Wrong result, failed call or bad command line.
  kExitWaived = 2,  ///< This machine cannot run the sample; the reason is printed.
};

/// A mistake on the command line: runSample() prints what() with a usage hint and exits with 1.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// This machine cannot run the sample (no driver, no device, a missing capability): runSample()
/// prints "WAIVED: " and what() and exits with 2.
class WaivedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A CUDA driver call that failed; what() names the call, where it was made and why it failed.
class CudaError : public std::runtime_error {
 public:
  /// Carries @p result, what the call returned (not CUDA_SUCCESS), and the printable @p message.
  CudaError(CUresult result, const std::string& message)
      : std::runtime_error(message), result_(result) {}
  CUresult result() const noexcept { return result_; }  ///< What the failing call returned.

 private:
  CUresult result_;
};

/// The name and description of @p result, e.g. "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", also
/// before cuInit() and for values the driver does not know. Throws nothing.
std::string describeResult(CUresult result);

/// The text of a failed call: "cuMemAlloc failed at vectorAddDrv.cpp:82: <description>", with
/// the folders stripped from @p file. Throws nothing.
std::string formatCallFailure(std::string_view call, std::string_view file, int line,
                              std::string_view description);

/// Throws CudaError unless @p result is CUDA_SUCCESS: `check(cuMemAlloc(&p, n), "cuMemAlloc");`
/// throws "cuMemAlloc failed at vectorAddDrv.cpp:82: " and describeResult(). The compiler fills in
/// @p file and @p line (GCC's and Clang's builtins, as default arguments): no macro is needed.
void check(CUresult result, const char* call, const char* file = __builtin_FILE(),
           int line = __builtin_LINE());

/// check() for `checkDriverInit(cuInit(0));`, the first call: WaivedError where the machine cannot
/// run CUDA (no device; a stub, mismatched or unavailable driver) or the driver's major version is
/// older than the toolkit's (naming both; older minors: requireEntryPoint()), else CudaError.
void checkDriverInit(CUresult initResult, const char* file = __builtin_FILE(),
                     int line = __builtin_LINE());

// --- Owners of driver objects --------------------------------------------------------------------
// An owner releases on the error paths: `OwnedDeviceMemory a; check(cuMemAlloc(a.out(), n), ...);`
// The good path releases explicitly and checks: `check(cuMemFree(a.release()), "cuMemFree");`.

/// Owns one @p Handle (value-initialised means "nothing") and frees it with @p Release (e.g.
/// cuStreamDestroy) when destroyed, ignoring the answer: while an error unwinds, a second message
/// would hide the first. Movable (the source is left empty), not copyable; no member throws.
template <typename Handle, CUresult (*Release)(Handle)>
class DriverHandle {
 public:
  DriverHandle() = default;                                           ///< An empty owner.
  explicit DriverHandle(Handle handle) noexcept : handle_(handle) {}  ///< Owns @p handle.
  ~DriverHandle() { reset(); }  ///< Releases the handle, if any.
  /// Takes over @p other's handle; @p other is left empty.
  DriverHandle(DriverHandle&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  /// Takes over @p other's handle and releases the one it held; @p other is left empty.
  DriverHandle& operator=(DriverHandle&& other) noexcept {
    DriverHandle taken(std::move(other));  // a self-move gives the handle straight back
    std::swap(handle_, taken.handle_);
    return *this;
  }
  DriverHandle(const DriverHandle&) = delete;
  DriverHandle& operator=(const DriverHandle&) = delete;

  Handle get() const noexcept { return handle_; }  ///< The handle, still owned (or "nothing").
  /// Releases the current handle, then returns where a creating call writes the new one.
  Handle* out() noexcept {
    reset();
    return &handle_;
  }
  /// Gives the handle up unreleased, for the good path's checked release; the owner is empty.
  Handle release() noexcept { return std::exchange(handle_, Handle{}); }
  /// Releases the handle now (answer ignored); the owner becomes empty.
  void reset() noexcept {
    if (handle_ != Handle{})
      Release(std::exchange(handle_, Handle{}));
  }

 private:
  Handle handle_{};
};

/// Waits for a stream's work (answer ignored), then returns cuStreamDestroy's answer: alone, it
/// returns while queued work still runs, which must finish before the memory it uses is freed.
CUresult drainAndDestroyStream(CUstream stream) noexcept;

using OwnedContext = DriverHandle<CUcontext, cuCtxDestroy>;  ///< cuCtxCreate -> cuCtxDestroy
using OwnedModule = DriverHandle<CUmodule, cuModuleUnload>;  ///< cuModuleLoadData -> cuModuleUnload
/// cuStreamCreate -> drainAndDestroyStream(). Declare it after the memory its work uses.
using OwnedStream = DriverHandle<CUstream, drainAndDestroyStream>;
using OwnedEvent = DriverHandle<CUevent, cuEventDestroy>;  ///< cuEventCreate -> cuEventDestroy
using OwnedDeviceMemory = DriverHandle<CUdeviceptr, cuMemFree>;  ///< cuMemAlloc -> cuMemFree
/// Page-locked host memory: cuMemHostAlloc -> cuMemFreeHost.
using OwnedPinnedHostMemory = DriverHandle<void*, cuMemFreeHost>;
/// cuMemHostRegister -> cuMemHostUnregister; the memory stays the caller's and must outlive it.
using OwnedHostRegistration = DriverHandle<void*, cuMemHostUnregister>;

/// A DriverHandle of one context that calls @p Release with that context current (pushed, then
/// popped), whichever is current when it dies: some releases act on the current context, and
/// while an error unwinds that is often another device's. Only move-constructible; nothing throws.
template <typename Handle, CUresult (*Release)(Handle)>
class InContext {
 public:
  /// An empty owner for a handle of @p context, which must outlive the handle.
  explicit InContext(CUcontext context) noexcept : context_(context) {}
  ~InContext() { reset(); }                         ///< Releases the handle in its context.
  InContext(InContext&& other) noexcept = default;  ///< Takes @p other's handle.
  InContext& operator=(InContext&&) = delete;

  Handle get() const noexcept { return handle_.get(); }  ///< The handle, still owned.
  /// Releases the current handle, then returns where a creating call writes the new one.
  Handle* out() noexcept {
    reset();
    return handle_.out();
  }
  /// Gives the handle up unreleased, for a checked release in the caller's context.
  Handle release() noexcept { return handle_.release(); }
  /// Releases the handle now, in its context (answers ignored); the owner becomes empty.
  void reset() noexcept {
    if (handle_.get() == Handle{})
      return;
    const bool pushed = cuCtxPushCurrent(context_) == CUDA_SUCCESS;
    handle_.reset();
    if (pushed) {
      CUcontext popped = nullptr;
      (void)cuCtxPopCurrent(&popped);
    }
  }

 private:
  CUcontext context_;
  DriverHandle<Handle, Release> handle_;  // the release itself; copies are refused by it
};

using ContextMemory = InContext<CUdeviceptr, cuMemFree>;    ///< cuMemAlloc memory of one context.
using ContextEvent = InContext<CUevent, cuEventDestroy>;    ///< An event of one context.
using ContextModule = InContext<CUmodule, cuModuleUnload>;  ///< A module of one context.
using ContextStream = InContext<CUstream, drainAndDestroyStream>;  ///< A stream of one context.

/// Waits for a stream when the scope ends, on every path (answer ignored). Declared right after
/// the owners of the memory its work uses, it dies first: no error frees memory under a kernel.
class DrainOnExit {
 public:
  explicit DrainOnExit(CUstream stream) noexcept : stream_(stream) {}  ///< @p stream outlives it.
  ~DrainOnExit() { (void)cuStreamSynchronize(stream_); }  ///< Waits for the stream's work.
  DrainOnExit(const DrainOnExit&) = delete;
  DrainOnExit& operator=(const DrainOnExit&) = delete;

 private:
  CUstream stream_;
};

/// A device's primary context (the one the whole process shares, the runtime API included),
/// retained while this object lives (cuDevicePrimaryCtxRetain, needs cuInit(); released with
/// cuDevicePrimaryCtxRelease): a context for a second device, not created, not made current.
class PrimaryContext {
 public:
  explicit PrimaryContext(CUdevice device);  ///< @throws CudaError, WaivedError (compute mode)
  ~PrimaryContext() { reset(); }             ///< Releases the retain (answer ignored).
  PrimaryContext(PrimaryContext&& other) noexcept;  ///< Takes the retain; @p other is left empty.
  PrimaryContext& operator=(PrimaryContext&& other) noexcept;  ///< Releases, then takes @p other's.
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

  CUcontext get() const noexcept { return context_; }  ///< The context, or nullptr when empty.
  std::optional<CUdevice> device() const noexcept { return device_; }  ///< Its device, if any.
  /// Makes it current here (cuCtxSetCurrent). @throws CudaError; std::logic_error when empty.
  void makeCurrent() const;
  void reset() noexcept;  ///< Releases the retain now (answer ignored); the object is then empty.

 private:
  std::optional<CUdevice> device_;  // set exactly while a retain is held
  CUcontext context_ = nullptr;
};

/// Makes a context current for a scope: cuCtxPushCurrent now, cuCtxPopCurrent when the scope
/// ends, so the context that was current before is current again on every path.
class ScopedContext {
 public:
  explicit ScopedContext(CUcontext context);  ///< Pushes @p context. @throws CudaError.
  ~ScopedContext();                           ///< Pops it again (answer ignored).
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
};

// --- Command line and running a sample -----------------------------------------------------------

/// The options every sample accepts; CommandLine::addCommonOptions() registers them.
struct CommonOptions {
  std::optional<long long> device;  ///< `--device N`; selectDevice() checks it against the count.
  int iterations = 20;              ///< `--iterations`: timed repetitions; the median is reported.
  int warmup = 3;                   ///< `--warmup`: untimed repetitions before timing.
  std::string jsonPath;             ///< `--json FILE` or `-` (stdout); empty: no JSON.
  bool quiet = false;               ///< `--quiet`: only the verdict is printed.
};

/// The command-line parser (not thread-safe: use it from main()): `--name value`, `--name=value`
/// or, as in cuda-samples, `-name=value`; each add...() registers an option that writes into a
/// target, which must outlive the parser. Value parsers: support/cli.hpp.
class CommandLine {
 public:
  /// Needs the sample's @p program name and a one-sentence @p summary for `--help`.
  CommandLine(std::string program, std::string summary);
  ~CommandLine();  ///< Forgets the registered options (not copyable); targets keep their values.

  /// Registers `--device`, `--json`, `--quiet` and, if @p timed, `--iterations` and `--warmup`.
  void addCommonOptions(CommonOptions& options, bool timed = true);
  /// Registers a switch without a value that sets @p target to true.
  void addFlag(std::string name, std::string help, bool& target);
  /// Registers an integer option that accepts values in [@p min, @p max].
  void addInteger(std::string name, std::string help, long long& target, long long min,
                  long long max);
  /// Registers an int option that accepts values in [@p min, @p max].
  void addInteger(std::string name, std::string help, int& target, int min, int max);
  /// Registers a byte size (4096, 64K, 1G...) in [@p min, @p max], a multiple of @p multipleOf.
  void addSize(std::string name, std::string help, std::optional<std::uint64_t>& target,
               std::uint64_t min = 1, std::uint64_t max = UINT64_MAX, std::uint64_t multipleOf = 1);
  /// Registers a non-empty free-form string; @p valueName is how `--help` calls the value.
  void addString(std::string name, std::string help, std::string& target,
                 std::string valueName = "TEXT");
  /// Registers a comma-separated list of distinct integers in [@p min, @p max], e.g. devices.
  void addIntegerList(std::string name, std::string help, std::vector<int>& target, int min,
                      int max);

  /// Parses @p argv (program name first) into the targets. It returns false for `--help` (the
  /// usage is then printed to stdout), and throws UsageError naming the first mistake.
  bool parse(int argc, const char* const* argv);
  bool parse(const std::vector<std::string>& args);  ///< parse() without the program name.
  std::string usage() const;  ///< The text `--help` prints: the summary and every option.
  const std::string& program() const noexcept;  ///< The sample's name, as constructed.

 private:
  struct Registry;  // the registered options (support/cli.cpp)
  std::unique_ptr<Registry> registry_;
};

/// What a sample body reports into: human text (respecting `--quiet`, and moved to stderr when
/// the JSON goes to stdout) and the JSON result object.
class Report {
 public:
  /// Needs where human text goes: a stream that outlives the Report, or nullptr for `--quiet`.
  explicit Report(std::ostream* humanText) : humanText_(humanText) {}
  std::ostream& out();  ///< The human summary's stream; under `--quiet` one that discards all.
  /// The JSON result the body fills: `report.json().set("gbps", 4244.1)`. runSample() wraps it
  /// with "sample" and "verdict" and writes it where `--json` says.
  JsonObject& json() noexcept { return json_; }

 private:
  std::ostream* humanText_;
  JsonObject json_;
};

/// What a sample body returns when it ran to the end.
enum class Verdict { Pass, Fail };

/// Parses the command line, opens the `--json` destination before any GPU work, runs @p body and
/// maps its outcome to output and main()'s exit code: Pass -> "Result = PASS", 0; Fail -> "Result
/// = FAIL", 1; UsageError -> the message and a usage hint, 1; WaivedError, or a CudaError saying
/// CUDA_ERROR_DEVICE_UNAVAILABLE where a device's compute mode explains it (EXCLUSIVE_PROCESS or
/// PROHIBITED, asked after checkDriverInit(); see deviceUnavailableExplanation()) -> "WAIVED:
/// <reason>", 2; other exceptions, that one on devices in DEFAULT mode included -> "<program>:
/// error: <what>", 1. `--json` gets the verdict and reason too.
int runSample(CommandLine& commandLine, const CommonOptions& options, int argc,
              const char* const* argv, const std::function<Verdict(Report&)>& body);

// --- Devices and kernels -------------------------------------------------------------------------

/// Who makes contexts on the sample's device, which its compute mode may forbid (`nvidia-smi -c`).
enum class DeviceUse {
  OneProcess,        ///< This process only: any mode but PROHIBITED (no context at all).
  SeveralProcesses,  ///< Other processes too (07's workers): not EXCLUSIVE_PROCESS either.
};

/// The device `--device` asked for, or else the one with the most SMs x clock among those whose
/// compute mode allows @p use. Needs cuInit(). @throws WaivedError when there is no such device
/// (naming each mode); UsageError when @p requested is out of range; CudaError.
CUdevice selectDevice(const std::optional<long long>& requested,
                      DeviceUse use = DeviceUse::OneProcess);

void requireEntryPoint(bool present, const char* name);  ///< The check behind the one below.
/// Before the first call of an entry point added in a later minor release of the toolkit's major
/// version: `requireEntryPoint(cuFoo, "cuFoo");` waives (WaivedError naming it and both CUDA
/// versions) where its weak import is null. Needs cuInit(). CudaError.
template <typename Function>
void requireEntryPoint(Function* entryPoint, const char* name) {
  requireEntryPoint(entryPoint != nullptr, name);
}

/// The N of cuDeviceGet(&device, N), as CUmemLocation::id and people say "device N" (a CUdevice
/// is opaque). @throws CudaError; std::invalid_argument when no ordinal gives @p device.
int deviceOrdinal(CUdevice device);

/// cuDeviceGetAttribute() as a value. Needs cuInit(). @throws CudaError.
int deviceAttribute(CUdevice device, CUdevice_attribute attribute);

/// The device's name, e.g. "NVIDIA H200". Needs cuInit(). @throws CudaError.
std::string deviceName(CUdevice device);

/// The path of fatbin @p fileName: in $CUDA_MEMORY_SAMPLES_FATBIN_DIR, next to the executable or
/// in the install layout, never the current directory. @throws std::runtime_error listing them.
std::string locateFatbin(const std::string& fileName);

/// The whole content of the file at @p path, e.g. a fatbin for cuModuleLoadData.
/// @throws std::runtime_error naming the path and the reason when it cannot be read or is empty.
std::vector<char> readBinaryFile(const std::string& path);

// --- Timing and sizing ---------------------------------------------------------------------------

/// A summary of repeated timings, in milliseconds.
struct TimingStats {
  double medianMs = 0;  ///< Middle value (mean of the two middle ones for an even count).
  double minMs = 0;     ///< Fastest repetition.
  double maxMs = 0;     ///< Slowest repetition.
  int samples = 0;      ///< How many repetitions were timed.
};

/// Times @p work (which must only enqueue GPU work on @p stream) with CUDA events: @p warmup
/// untimed runs, then @p iterations (1 or more) between two events each, queued behind a host
/// function that holds the stream until 32 are queued, so the host's launch time never counts
/// (stderr says where launches block the host). @throws CudaError; what @p work throws.
TimingStats timeOnStream(CUstream stream, int warmup, int iterations,
                         const std::function<void()>& work);

/// @p bytes moved in @p milliseconds as GB/s, with 1 GB = 1e9 bytes; NaN when @p milliseconds
/// is not positive. Throws nothing.
double gigabytesPerSecond(double bytes, double milliseconds);

/// The blocks for @p items at @p itemsPerBlock a block: the quotient rounded up, clamped to
/// [1, 2^31 - 1] (a grid-stride loop covers the rest). @throws std::invalid_argument when
/// @p itemsPerBlock is 0.
unsigned int blocksToCover(std::uint64_t items, std::uint64_t itemsPerBlock);

/// A grid that fills @p device for a grid-stride kernel: the blocks of @p threadsPerBlock that
/// one SM holds at once (at least 1) x the SMs. Needs cuInit(). @throws CudaError.
unsigned int residentGridSize(CUfunction kernel, CUdevice device, int threadsPerBlock);

/// A byte count for people: "512 B", "64.0 MiB", "1.00 GiB". Throws nothing.
std::string formatBytes(std::uint64_t bytes);

/// The bytes per buffer for @p buffers buffers in @p freeBytes of memory that messages call
/// @p where: the @p requested `--size`, or else @p defaultBytes cut to 80 % of @p freeBytes shared,
/// rounded down to 2 MiB (a managed over-subscription can stall every process on a shared GPU).
/// @throws UsageError when @p requested is no multiple of @p elementBytes or too big;
/// std::runtime_error when that share is below one element (less than 2 MiB per buffer).
std::uint64_t chooseBufferBytes(const std::optional<std::uint64_t>& requested,
                                std::uint64_t defaultBytes, std::uint64_t freeBytes, int buffers,
                                std::uint64_t elementBytes, std::string_view where = "the device");

/// chooseBufferBytes() for @p hostBuffers pinned or managed buffers of @p bytes (fitted to the
/// device) in the host memory this process may take (MemAvailable, cgroup limits): @p requested,
/// or @p bytes cut to what fits. Throws as chooseBufferBytes() does, naming the limit.
std::uint64_t fitHostMemory(const std::optional<std::uint64_t>& requested, std::uint64_t bytes,
                            int hostBuffers, std::uint64_t elementBytes);

}  // namespace memsamples
