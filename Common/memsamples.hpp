/**
 * @file memsamples.hpp
 * @brief The one helper header every CUDA Memory Sample includes.
 *
 * It holds what every sample needs and no sample teaches; the driver calls of a technique are
 * written in the sample that teaches it, where a reader looks for them:
 *
 * - **Outcome and errors.** Failures are C++ exceptions that travel up to runSample(), the only
 *   place that prints them and turns them into an exit code (0 PASS, 1 FAIL, 2 WAIVED). No helper
 *   calls `exit()`, so every RAII owner on the way up releases its GPU resource first.
 * - **Driver-call checking.** `check(cuMemAlloc(...), "cuMemAlloc")` names the call, `file:line`,
 *   the CUresult name and string; checkDriverInit() turns "no usable driver" (none, no GPU, or one
 *   older than the toolkit) into WAIVED.
 * - **Owners, not creators.** DriverHandle and its aliases (OwnedContext, OwnedDeviceMemory...)
 *   release a handle that the sample created with its own driver call: `check(cuMemAlloc(
 *   buffer.out(), bytes), "cuMemAlloc")`. Nothing here allocates a sample's memory for it. The
 *   two exceptions are scaffolding for programs with several devices, a lesson of no sample:
 *   PrimaryContext (retains a device's primary context) and ScopedContext (pushes one).
 * - **Command line** parsing shared by all samples (`--device`, `--size` with K/M/G suffixes,
 *   `--iterations`, `--json`, `--quiet`) with range checks and one clear line per mistake.
 * - **Device selection** (`--device N` or the device with the most SMs x clock), **fatbin lookup**
 *   (next to the executable, never relative to the current directory), **timing** with CUDA
 *   events (median after warm-up), the vector-add inputs and their exact check, and a small
 *   **JSON** result writer.
 *
 * Functions whose names describe pure logic (parsing, paths, statistics, JSON) never touch the
 * driver and are unit tested on machines without a GPU.
 */
#pragma once

#include <cuda.h>

#include "memsamples_weak_driver.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// Everything shared by the CUDA Memory Samples.
namespace memsamples {

// ------------------------------------------------------------------------------------------------
/// @name Outcome, exit codes and errors
/// @{

/// Process exit codes, shared with CTest (`SKIP_RETURN_CODE 2`).
enum ExitCode : int {
  kExitPass = 0,    ///< The sample ran and its results were verified.
  kExitFail = 1,    ///< Wrong result, failed call or bad command line.
  kExitWaived = 2,  ///< This machine cannot run the sample; the reason is printed.
};

/// A mistake on the command line. runSample() prints it with a usage hint; exit code 1.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// This machine cannot run the sample (no driver, no device, a missing capability). Exit code 2.
class WaivedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A CUDA driver call that failed. what() names the call, where it was made and why it failed.
class CudaError : public std::runtime_error {
 public:
  /// @param result the CUresult the call returned (never CUDA_SUCCESS).
  /// @param message the full, printable description.
  CudaError(CUresult result, const std::string& message)
      : std::runtime_error(message), result_(result) {}
  /// The CUresult the failing call returned.
  CUresult result() const noexcept { return result_; }

 private:
  CUresult result_;
};

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)": the name and description of a CUresult. Works
/// before cuInit() and for values the driver does not know.
std::string describeResult(CUresult result);

/// The text of a failed call: "cuMemAlloc failed at vectorAddDrv.cpp:97: <description>", with
/// the folders stripped from @p file.
std::string formatCallFailure(std::string_view call, std::string_view file, int line,
                              std::string_view description);

/**
 * Throws CudaError when @p result is not CUDA_SUCCESS.
 *
 * Usage: `check(cuMemAlloc(&ptr, bytes), "cuMemAlloc");`. The caller's file and line are filled in
 * by the compiler (the same builtins that implement C++20's std::source_location), so no macro is
 * needed. The message reads `cuMemAlloc failed at vectorAddDrv.cpp:97: CUDA_ERROR_... (...)`.
 *
 * @param result what the driver call returned.
 * @param call the name of the call as the reader should see it.
 * @param file the caller's source file (filled in by the compiler).
 * @param line the caller's line (filled in by the compiler).
 */
void check(CUresult result, const char* call, const char* file = __builtin_FILE(),
           int line = __builtin_LINE());

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Command line
/// @{

/**
 * Parses a size such as `4096`, `64K`, `256M`, `1G` or `1GiB` into bytes.
 *
 * Suffixes are binary (K = 1024, also T). Case does not matter; a trailing `B` or `iB` is allowed.
 * @param text the value as typed.
 * @param what names the option in the message, e.g. "--size".
 * @param min smallest accepted byte count (0 is refused whenever min > 0).
 * @param max largest accepted byte count.
 * @throws UsageError for anything else, for values outside [@p min, @p max] and on overflow.
 */
std::uint64_t parseSize(std::string_view text, std::string_view what, std::uint64_t min = 1,
                        std::uint64_t max = UINT64_MAX);

/// Parses a decimal integer in [@p min, @p max]. @throws UsageError naming @p what.
long long parseInteger(std::string_view text, std::string_view what, long long min, long long max);

/// Splits @p text at every comma, keeping empty items ("a,,b" gives "a", "", "b"; "" gives one
/// empty item) so that each list parser reports an empty entry in its own words.
std::vector<std::string_view> splitCommaList(std::string_view text);

/// Parses a comma-separated list of integers in [@p min, @p max], e.g. `0,1,3`; no duplicates.
std::vector<int> parseIntegerList(std::string_view text, std::string_view what, int min, int max);

/// "1.00 GiB", "64.0 MiB", "512 B": a byte count for people.
std::string formatBytes(std::uint64_t bytes);

/**
 * The bytes per buffer a sample uses, for @p buffers buffers that must fit in @p freeBytes.
 *
 * With a @p requested size: it must be a multiple of @p elementBytes and all buffers must fit in
 * free memory, else UsageError (a sample never over-subscribes the device, managed memory
 * included, because that can hang a shared GPU). Without one: @p defaultBytes, reduced when the
 * buffers would take more than 80 % of free memory, rounded down to a multiple of 2 MiB.
 * @param requested the `--size` value, if given.
 * @param defaultBytes the sample's benchmark size.
 * @param freeBytes memory available for the buffers.
 * @param buffers how many buffers of that size the sample allocates.
 * @param elementBytes the size of one element; sizes must be multiples of it.
 * @param where names the memory in messages: "the device" or "the host".
 * @throws UsageError or std::runtime_error (not even one element fits).
 */
std::uint64_t chooseBufferBytes(const std::optional<std::uint64_t>& requested,
                                std::uint64_t defaultBytes, std::uint64_t freeBytes, int buffers,
                                std::uint64_t elementBytes, std::string_view where = "the device");

/// Host memory this process can still take, and the limit that decided it.
struct HostMemory {
  std::uint64_t availableBytes = 0;  ///< the tighter of the limits below
  /// Names that limit for messages: "the host (MemAvailable)", or "the host (the memory limit
  /// of cgroup <path>)" when a container's or service's limit is tighter.
  std::string limitedBy;
};

/// "MemAvailable" of a meminfo text (the format of /proc/meminfo) in bytes; none when the line is
/// absent or malformed.
std::optional<std::uint64_t> memAvailableBytes(std::string_view meminfoText);

/**
 * What this process may still allocate on the host: the tighter of the kernel's MemAvailable and
 * the memory cgroup's headroom.
 *
 * MemAvailable alone is wrong inside a container or a systemd service with a memory limit: it
 * counts the whole machine, and pinning past the cgroup's limit gets the process killed by the
 * OOM killer rather than refused. The headroom is `memory.max - memory.current` (cgroup v2) or
 * `memory.limit_in_bytes - memory.usage_in_bytes` (v1), plus the inactive page cache that
 * memory.stat reports (`inactive_file`, v1 `total_inactive_file`): the usage counts page cache,
 * which a busy container fills up to its limit and the kernel drops before it kills anyone. The
 * smallest over the process's cgroup and every ancestor that the mount shows, because a parent's
 * limit binds its children too. A limit file that cannot be read is no limit; without
 * /proc/meminfo the free pages (sysconf) stand in for MemAvailable.
 * @param root "" for this machine, or a fake tree holding proc/meminfo, proc/self/cgroup and
 *        sys/fs/cgroup/... (unit tests).
 */
HostMemory hostMemoryAvailable(const std::string& root = "");

/**
 * chooseBufferBytes() against host memory: @p hostBuffers buffers of the size already fitted to
 * the device (@p bytes) must also fit in @p host, because pinned (and managed) buffers take host
 * memory that the device's free memory says nothing about.
 * @return @p bytes, or less when no `--size` was given and host memory is the tighter limit.
 * @throws UsageError when the requested size does not fit in host memory, std::runtime_error
 *         when not even one element does.
 */
std::uint64_t fitHostMemory(const std::optional<std::uint64_t>& requested, std::uint64_t bytes,
                            int hostBuffers, std::uint64_t elementBytes,
                            const HostMemory& host = hostMemoryAvailable());

/// The options every sample accepts.
struct CommonOptions {
  std::optional<long long> device;  ///< `--device N`; validated against the device count later.
  int iterations = 20;              ///< Timed repetitions; the median is reported.
  int warmup = 3;                   ///< Untimed repetitions before timing.
  std::string jsonPath;             ///< `--json FILE` or `-` (stdout); empty: no JSON.
  bool quiet = false;               ///< Only the verdict is printed.
};

/**
 * A small declarative command-line parser.
 *
 * Options are spelled `--name value`, `--name=value` or, as in cuda-samples, `-name=value`.
 * Every mistake (unknown option, missing or malformed value, value out of range, stray argument)
 * throws UsageError with one line that names the option. Not thread-safe; use it from main().
 */
class CommandLine {
 public:
  /// @param program the sample's name, used in usage and error lines.
  /// @param summary one sentence saying what the sample does, printed by `--help`.
  CommandLine(std::string program, std::string summary);

  /// Registers `--device`, `--json`, `--quiet` and, for a sample that measures (@p timed),
  /// `--iterations` and `--warmup` into @p options.
  void addCommonOptions(CommonOptions& options, bool timed = true);
  /// A switch without value.
  void addFlag(std::string name, std::string help, bool& target);
  /// An integer option in [@p min, @p max].
  void addInteger(std::string name, std::string help, long long& target, long long min,
                  long long max);
  /// An int option in [@p min, @p max].
  void addInteger(std::string name, std::string help, int& target, int min, int max);
  /// A byte size with optional K/M/G suffix in [@p min, @p max].
  void addSize(std::string name, std::string help, std::optional<std::uint64_t>& target,
               std::uint64_t min = 1, std::uint64_t max = UINT64_MAX);
  /// A non-empty free-form string; @p valueName is how `--help` calls the value (FILE, DIR...).
  void addString(std::string name, std::string help, std::string& target,
                 std::string valueName = "TEXT");
  /// A comma-separated list of integers in [@p min, @p max], e.g. device ordinals.
  void addIntegerList(std::string name, std::string help, std::vector<int>& target, int min,
                      int max);

  /**
   * Parses the arguments into the registered targets.
   * @return false when `--help` was given (the usage has then been printed to stdout).
   * @throws UsageError on the first mistake.
   */
  bool parse(int argc, const char* const* argv);
  /// Same as above for a vector of arguments (without the program name); used by tests.
  bool parse(const std::vector<std::string>& args);

  /// The text `--help` prints.
  std::string usage() const;
  /// The sample's name.
  const std::string& program() const noexcept { return program_; }

 private:
  struct Option {
    std::string name;
    std::string valueName;  // empty for flags
    std::string help;
    std::function<void(std::string_view value)> apply;
  };
  const Option* find(std::string_view name) const;

  std::string program_;
  std::string summary_;
  std::vector<Option> options_;
};

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Devices
/// @{

/// What makes a device "fast" for the default choice: multiprocessors x clock.
struct DeviceScore {
  int multiprocessors = 0;  ///< CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  int clockKHz = 0;         ///< CU_DEVICE_ATTRIBUTE_CLOCK_RATE
};

/// Index of the device with the largest multiprocessors x clock; ties go to the lower ordinal.
/// @throws std::invalid_argument when @p devices is empty.
int pickFastestDevice(const std::vector<DeviceScore>& devices);

/// Checks a `--device` value against the number of devices.
/// @throws UsageError naming the value and how many devices exist.
int validateDeviceOrdinal(long long requested, int deviceCount);

/**
 * True for the cuInit() results that mean "this machine cannot run CUDA programs" rather than
 * "the program is wrong": no device, a stub or mismatched driver library, an unsupported
 * forward-compatibility setup, or a device that is busy or unavailable.
 */
bool isUnusableDriverResult(CUresult result);

/// "12.4" for 12040: a version as cuDriverGetVersion and CUDA_VERSION give it (1000 x major +
/// 10 x minor) the way NVIDIA writes it.
std::string formatCudaVersion(int version);

/**
 * Why a driver that supports CUDA @p driverVersion cannot run a sample built with CUDA
 * @p builtVersion (both as cuDriverGetVersion gives them), or "" when it can: the driver must be at
 * least as new as the toolkit, because cuda.h binds the samples to that toolkit's entry points.
 */
std::string driverTooOldReason(int driverVersion, int builtVersion);

/**
 * Checks what `cuInit(0)` returned, as `check()` does, except that a machine without a usable
 * driver or device is not a failure of the sample: the results isUnusableDriverResult() accepts
 * become WaivedError (exit 2, "WAIVED: no usable CUDA device: ..."), and so does a driver older
 * than the toolkit the sample was built with (cuDriverGetVersion < CUDA_VERSION, see
 * driverTooOldReason()). Every sample calls it before any other driver entry point, so that on an
 * old driver none of the entry points it lacks is ever called. Usage: `checkDriverInit(cuInit(0));`
 * @throws WaivedError or CudaError.
 */
void checkDriverInit(CUresult initResult, const char* file = __builtin_FILE(),
                     int line = __builtin_LINE());

/// The requested device (validated), or the fastest one (cuDeviceGetCount, cuDeviceGet,
/// cuDeviceGetAttribute). Requires cuInit.
CUdevice selectDevice(const std::optional<long long>& requested);

/**
 * The ordinal of @p device, i.e. the N with cuDeviceGet(&device, N): what CUmemLocation::id,
 * cuDeviceCanAccessPeer's matrix and people mean by "device N". A CUdevice is an opaque handle,
 * so it is looked up rather than cast. @throws CudaError; std::invalid_argument if not found.
 */
int deviceOrdinal(CUdevice device);

/// cuDeviceGetAttribute() as a value. @throws CudaError.
int deviceAttribute(CUdevice device, CUdevice_attribute attribute);

/// The device's name, e.g. "NVIDIA H200".
std::string deviceName(CUdevice device);

/**
 * A PCI bus id as sysfs names the device's folder: lower-case hex, the domain widened to 4 digits
 * only ("0000:3B:00.0" and "00000000:3b:00.0" both become "0000:3b:00.0"); white space around it
 * is ignored.
 * @throws std::invalid_argument naming the text when it is not `domain:bus:device.function`.
 */
std::string sysfsPciName(std::string_view busId);

/// What sysfs says about the host NUMA node of a PCI device.
struct PciNumaNode {
  int node = -1;        ///< The node, or -1: unknown (no NUMA, a VM, or unreadable).
  std::string path;     ///< `<root>/bus/pci/devices/<bdf>/numa_node`; empty for a bad bus id.
  std::string problem;  ///< Why node is -1 when the id or the file was unusable; else empty.
};

/**
 * Reads `<sysfsRoot>/bus/pci/devices/<bdf>/numa_node` for the device with PCI bus id @p busId
 * (as cuDeviceGetPCIBusId gives it). The kernel writes -1 when it does not know the node; the
 * file must hold one integer from -1 to 1023 (white space around it allowed), and anything else,
 * like a malformed bus id, is reported in `problem` rather than thrown.
 * @param sysfsRoot "/sys", or a fake tree in tests.
 * @param busId the PCI bus id, in any case, with a 4- or 8-digit domain.
 */
PciNumaNode readPciNumaNode(const std::string& sysfsRoot, std::string_view busId);

/**
 * Parses a kernel list of ids such as "0", "0-3" or "0-1,4,6-7" (the format of
 * `/sys/devices/system/node/online`) into the ids, in order.
 * @throws std::invalid_argument for anything else, and for ids above 65535.
 */
std::vector<int> parseIdList(std::string_view list);

/// The online host NUMA nodes from `<sysfsRoot>/devices/system/node/online`; empty when the
/// file is missing (a kernel without NUMA support) or malformed.
std::vector<int> onlineHostNumaNodes(const std::string& sysfsRoot);

/**
 * The id of a CU_MEM_LOCATION_TYPE_HOST_NUMA location for the node the driver reports in
 * CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: that node, or 0 where the attribute is negative. cuda.h: the
 * attribute is -1 "when system does not support NUMA", and on such systems the location id
 * "must be set to 0"; -1 next to host-NUMA VMM support is therefore valid, not a contradiction.
 */
int hostNumaLocationId(int hostNumaIdAttribute);

/**
 * The VMM granularity to size and align an allocation of @p bytes with: @p recommended
 * (CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, the driver's choice for speed) once @p bytes fills at
 * least one such unit, else @p minimum (CU_MEM_ALLOC_GRANULARITY_MINIMUM, what cuMemCreate and
 * cuMemMap require), so a small allocation is not padded to a large unit. A @p recommended that
 * is 0 or not a multiple of @p minimum cannot serve and is passed over.
 * @throws std::invalid_argument for a @p minimum of 0.
 */
std::size_t allocationGranularity(std::size_t bytes, std::size_t minimum, std::size_t recommended);

/// What the driver says about the devices of this machine, as plain data: a sample reads it
/// once (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cuDeviceCanAccessPeer) and
/// plans with it, so every machine shape can be tested without a GPU.
struct DeviceTopology {
  /// Per device ordinal: CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED != 0.
  std::vector<bool> vmmSupported;
  /// canAccessPeer[a][b]: cuDeviceCanAccessPeer(a, b), device a can access device b's memory.
  /// The diagonal is true. Not necessarily symmetric.
  std::vector<std::vector<bool>> canAccessPeer;
  /// Number of devices (the size of vmmSupported).
  int deviceCount() const noexcept { return static_cast<int>(vmmSupported.size()); }
  /// @throws std::invalid_argument unless canAccessPeer is deviceCount() x deviceCount().
  void checkShape() const;
};

/// Theoretical DRAM bandwidth in GB/s (1 GB = 1e9 B) from memory clock (kHz) and bus width:
/// clock x 2 transfers per clock (DDR) x bus width / 8.
double peakBandwidthGBps(int memoryClockKHz, int busWidthBits);

/// peakBandwidthGBps() from the device's attributes.
double theoreticalPeakGBps(CUdevice device);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Owners of driver objects
/// Each owns exactly one object, is movable and not copyable, and releases it in its destructor.
/// The sample writes the call that creates the object; the owner only takes over its release:
/// `OwnedDeviceMemory a; check(cuMemAlloc(a.out(), bytes), "cuMemAlloc");`.
/// @{

/**
 * Owns one driver handle and releases it with @p Release when destroyed.
 *
 * The building block of the owners below and of the samples' own (a VMM range, a host
 * registration...). Moving transfers ownership and leaves the source empty. The destructor
 * ignores @p Release's answer on purpose: it also runs during unwinding, when the first error is
 * already on its way to the user and a second message would only hide it.
 *
 * @tparam Handle a driver handle type whose value-initialised state means "nothing".
 * @tparam Release the driver call that frees it, e.g. cuStreamDestroy.
 */
template <typename Handle, CUresult (*Release)(Handle)>
class DriverHandle {
 public:
  DriverHandle() = default;
  /// Takes ownership of @p handle.
  explicit DriverHandle(Handle handle) noexcept : handle_(handle) {}
  ~DriverHandle() { reset(); }
  /// Takes over @p other's handle; @p other is left empty.
  DriverHandle(DriverHandle&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  /// Releases the current handle and takes over @p other's.
  DriverHandle& operator=(DriverHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  DriverHandle(const DriverHandle&) = delete;
  DriverHandle& operator=(const DriverHandle&) = delete;

  /// The raw handle (still owned).
  Handle get() const noexcept { return handle_; }
  /// Where a driver call writes a new handle; releases the current one first.
  Handle* out() noexcept {
    reset();
    return &handle_;
  }
  /// Gives the handle up without releasing it, for the good path's explicit release whose answer
  /// is checked, as in `check(cuMemFree(a.release()), "cuMemFree")`; the owner becomes empty.
  Handle release() noexcept { return std::exchange(handle_, Handle{}); }
  /// Releases the handle now; the owner becomes empty.
  void reset() noexcept {
    if (handle_ != Handle{})
      Release(std::exchange(handle_, Handle{}));
  }

 private:
  Handle handle_{};
};

/// A context from cuCtxCreate, destroyed with cuCtxDestroy.
using OwnedContext = DriverHandle<CUcontext, cuCtxDestroy>;
/// A module from cuModuleLoadData, unloaded with cuModuleUnload.
using OwnedModule = DriverHandle<CUmodule, cuModuleUnload>;
/// How OwnedStream releases: cuStreamSynchronize, then cuStreamDestroy, whose answer is returned.
/// cuStreamDestroy alone returns while queued work still runs; when an error unwinds a sample,
/// that work must finish before the owners declared earlier free the memory it uses.
CUresult drainAndDestroyStream(CUstream stream) noexcept;
/// A stream from cuStreamCreate; its queued work is waited for, then it is destroyed. Declare it
/// after the memory its work uses, so that it is released first.
using OwnedStream = DriverHandle<CUstream, drainAndDestroyStream>;
/// An event from cuEventCreate, destroyed with cuEventDestroy.
using OwnedEvent = DriverHandle<CUevent, cuEventDestroy>;
/// Device memory from cuMemAlloc, freed with cuMemFree.
using OwnedDeviceMemory = DriverHandle<CUdeviceptr, cuMemFree>;
/// Page-locked host memory from cuMemHostAlloc, freed with cuMemFreeHost.
using OwnedPinnedHostMemory = DriverHandle<void*, cuMemFreeHost>;
/// A cuMemHostRegister registration of the caller's host memory, undone with
/// cuMemHostUnregister (the memory itself stays the caller's and must outlive the owner).
using OwnedHostRegistration = DriverHandle<void*, cuMemHostUnregister>;

/**
 * Owns one driver handle of one context and releases it with @p Release while that context is
 * current, whichever context is current when the owner dies. With several GPUs, some releases
 * act on the current context (cuModuleUnload unloads "from the current context"), and the context
 * on top of the stack while an exception unwinds is often another device's. Movable, not copyable.
 * @tparam Handle the driver handle type (its value-initialised state means "nothing").
 * @tparam Release the driver call that frees it.
 */
template <typename Handle, CUresult (*Release)(Handle)>
class InContext {
 public:
  /// An empty owner for a handle of @p context.
  explicit InContext(CUcontext context) noexcept : context_(context) {}
  ~InContext() { reset(); }
  /// Takes over @p other's handle; @p other is left empty.
  InContext(InContext&& other) noexcept = default;
  InContext& operator=(InContext&&) = delete;

  /// The handle (still owned).
  Handle get() const noexcept { return handle_.get(); }
  /// Where the creating call writes the handle; releases the current one first.
  Handle* out() noexcept {
    reset();
    return handle_.out();
  }
  /// Gives the handle up without releasing it, for a call that frees it in the caller's context
  /// and whose answer is checked; the owner becomes empty.
  Handle release() noexcept { return handle_.release(); }
  /// Releases the handle now, in its context (the driver's answer is ignored, as in every
  /// destructor here: a second error would only hide the first). The owner becomes empty.
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

/// cuMemAlloc memory of one context, freed with cuMemFree in that context.
using ContextMemory = InContext<CUdeviceptr, cuMemFree>;
/// An event of one context (cuEventCreate), destroyed with cuEventDestroy in that context.
using ContextEvent = InContext<CUevent, cuEventDestroy>;
/// A module of one context (cuModuleLoadData), unloaded with cuModuleUnload in that context.
using ContextModule = InContext<CUmodule, cuModuleUnload>;
/// A stream of one context (cuStreamCreate): its work is waited for, then it is destroyed.
using ContextStream = InContext<CUstream, drainAndDestroyStream>;

/**
 * Waits for a stream when the scope ends, on every path (cuStreamSynchronize, answer ignored:
 * a failure of queued work is reported where the program waits for it). Declare it right after
 * the owners of memory that work queued on @p stream uses: it is destroyed first, so an error
 * that unwinds the scope never frees memory under a running copy or kernel.
 */
class DrainOnExit {
 public:
  /// Remembers @p stream; it must outlive this object.
  explicit DrainOnExit(CUstream stream) noexcept : stream_(stream) {}
  ~DrainOnExit() { (void)cuStreamSynchronize(stream_); }
  DrainOnExit(const DrainOnExit&) = delete;
  DrainOnExit& operator=(const DrainOnExit&) = delete;

 private:
  CUstream stream_;
};

/**
 * The primary context of a device, retained for this object's lifetime
 * (cuDevicePrimaryCtxRetain / cuDevicePrimaryCtxRelease).
 *
 * Every device has one primary context, shared by everything in the process that retains it
 * (the runtime API uses it too); it is destroyed when the last retain is released. Retaining does
 * not make it current: call makeCurrent(), or push it for a scope. Use it rather than Context to
 * reach a second device without creating a context of your own, e.g. to read its free memory.
 *
 * Not built on DriverHandle: the release call takes the device, not the context, and device 0 is
 * a valid CUdevice that equals the value-initialised "nothing". Moving transfers the retain and
 * leaves the source empty (get() returns nullptr).
 */
class PrimaryContext {
 public:
  /// Retains the primary context of @p device. @throws CudaError.
  explicit PrimaryContext(CUdevice device);
  /// Releases the retain; the driver's answer is ignored, as in DriverHandle.
  ~PrimaryContext() { reset(); }
  /// Takes over @p other's retain; @p other is left empty.
  PrimaryContext(PrimaryContext&& other) noexcept
      : device_(std::exchange(other.device_, std::nullopt)),
        context_(std::exchange(other.context_, nullptr)) {}
  /// Releases the current retain, then takes over @p other's; @p other is left empty.
  PrimaryContext& operator=(PrimaryContext&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = std::exchange(other.device_, std::nullopt);
      context_ = std::exchange(other.context_, nullptr);
    }
    return *this;
  }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

  /// The context (still retained), or nullptr when empty.
  CUcontext get() const noexcept { return context_; }
  /// The device whose primary context this is, or nullopt when empty.
  std::optional<CUdevice> device() const noexcept { return device_; }
  /// Makes the context current on the calling thread (cuCtxSetCurrent).
  /// @throws CudaError; std::logic_error when empty (moved from).
  void makeCurrent() const;
  /// Releases the retain now (cuDevicePrimaryCtxRelease, answer ignored); the owner becomes empty.
  void reset() noexcept;

 private:
  std::optional<CUdevice> device_;  // set exactly while a retain is held
  CUcontext context_ = nullptr;
};

/**
 * Makes a context current for a scope: cuCtxPushCurrent on construction, cuCtxPopCurrent on
 * destruction, so the context that was current before is current again on every path. For
 * programs with several contexts (one per GPU): driver calls act on the current context.
 */
class ScopedContext {
 public:
  /// Pushes @p context onto this thread's context stack. @throws CudaError.
  explicit ScopedContext(CUcontext context);
  /// Pops it again (the result is ignored, as in every destructor here).
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
};

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Environment
/// @{

/// Looks up an environment variable by name: processEnvironment() in a sample, a table in a test;
/// nullptr when it is not set.
using EnvironmentLookup = std::function<const char*(const char*)>;

/// This process's environment (std::getenv).
const char* processEnvironment(const char* name);

/// Whether every kernel launch waits until the kernel has run (CUDA_LAUNCH_BLOCKING=1). Then a
/// stream held back by the host holds the host too (timeOnStream() times without its gate), and
/// kernels that must run at the same time on several GPUs never do (08_multicastReduce waives).
bool launchesBlockTheHost(const EnvironmentLookup& lookup = processEnvironment);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Fatbin lookup
/// @{

/// Name of the environment variable that names a folder to search for fatbins first.
inline constexpr const char* kFatbinDirVariable = "CUDA_MEMORY_SAMPLES_FATBIN_DIR";

/**
 * The places a fatbin is looked for, in order:
 * 1. @p overrideDir, when not empty (the explicit choice wins over anything found implicitly);
 * 2. the executable's own folder (the build tree, and installs that keep both in one folder);
 * 3. the install layout: `<exe folder>/../share/cuda-memory-samples/` (with the default
 *    CMAKE_INSTALL_BINDIR and MEMSAMPLES_FATBIN_INSTALL_DIR; the relative path is fixed at
 *    configure time).
 * The current directory is never searched: a sample must behave the same wherever it is run from.
 * @param fileName the fatbin's file name, e.g. "vectorAdd_kernel.fatbin".
 * @param exePath the resolved executable path (symlinks followed).
 * @param overrideDir a folder to search first, or empty.
 */
std::vector<std::string> fatbinCandidates(const std::string& fileName, const std::string& exePath,
                                          const std::string& overrideDir);

/// The first existing file among fatbinCandidates().
/// @throws std::runtime_error listing every path tried.
std::string findFatbin(const std::string& fileName, const std::string& exePath,
                       const std::string& overrideDir);

/// The running executable's path with symlinks resolved (/proc/self/exe).
std::string executablePath();

/// findFatbin() for this executable and the CUDA_MEMORY_SAMPLES_FATBIN_DIR override.
std::string locateFatbin(const std::string& fileName);

/**
 * The whole content of the file at @p path, e.g. a fatbin for cuModuleLoadData.
 * @throws std::runtime_error naming the path and the reason when it cannot be read or is empty.
 */
std::vector<char> readBinaryFile(const std::string& path);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Measuring
/// @{

/// Summary of repeated timings, in milliseconds.
struct TimingStats {
  double medianMs = 0;  ///< Middle value (mean of the two middle ones for an even count).
  double minMs = 0;     ///< Fastest repetition.
  double maxMs = 0;     ///< Slowest repetition.
  int samples = 0;      ///< How many repetitions were timed.
};

/// Median, min and max of @p timesMs. @throws std::invalid_argument when empty.
TimingStats summarizeTimings(std::vector<double> timesMs);

/**
 * Times @p work on @p stream with CUDA events: @p warmup untimed runs, then @p iterations runs
 * each between two events, and waits for the stream.
 *
 * The timed runs are queued behind a gate, 32 at a time (a host function, cuLaunchHostFunc, that
 * holds the stream until the host has queued them), so the GPU runs them back to back: the time
 * the host needs to queue a launch never enters the measurement, even for work shorter than that.
 * @p work must only enqueue its GPU work on @p stream, never wait for it. Where launches block
 * the host until they have run (CUDA_LAUNCH_BLOCKING=1, compute-sanitizer), holding the stream
 * would hold the host: there the runs are timed without a gate (the gate gives up after 1 s
 * when the host is stuck behind it) and a note on stderr says so.
 */
TimingStats timeOnStream(CUstream stream, int warmup, int iterations,
                         const std::function<void()>& work);

/// Bytes per second in GB/s, with 1 GB = 1e9 bytes.
double gigabytesPerSecond(double bytes, double milliseconds);

/// Occupancy-sized grid for a grid-stride kernel: enough resident blocks to fill every SM
/// (cuOccupancyMaxActiveBlocksPerMultiprocessor x multiprocessors).
unsigned int residentGridSize(CUfunction kernel, CUdevice device, int threadsPerBlock);

/**
 * The blocks a kernel needs to give every one of @p items its own slot when each block takes
 * @p itemsPerBlock: the ceiling of the division, at least 1 (a launch needs a block), at most
 * 2^31 - 1 (the largest gridDim.x); a grid-stride loop in the kernel covers what the cap leaves.
 * @throws std::invalid_argument when @p itemsPerBlock is 0.
 */
unsigned int blocksToCover(std::uint64_t items, std::uint64_t itemsPerBlock);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name JSON results
/// @{

/// @p text as a JSON string literal, quotes included; control characters become \\u00XX.
std::string jsonQuote(std::string_view text);

/// A JSON number; NaN and infinities (which JSON cannot express) become null.
std::string jsonNumber(double value);

/// A JSON array built element by element. Elements keep their order.
class JsonArray {
 public:
  JsonArray& add(double value);            ///< Appends a number.
  JsonArray& add(long long value);         ///< Appends an integer.
  JsonArray& add(int value);               ///< Appends an integer.
  JsonArray& add(std::uint64_t value);     ///< Appends an unsigned integer.
  JsonArray& add(bool value);              ///< Appends true or false.
  JsonArray& add(std::string_view value);  ///< Appends a string.
  JsonArray& add(const char* value);       ///< Appends a string.
  JsonArray& addRaw(std::string json);     ///< Appends an already serialized value.
  /// The array as compact JSON text.
  std::string dump() const;
  /// True when nothing was added.
  bool empty() const noexcept { return items_.empty(); }

 private:
  std::vector<std::string> items_;
};

/// A JSON object built member by member. Members keep their order; setting a key twice replaces.
class JsonObject {
 public:
  JsonObject& set(std::string_view key, double value);             ///< A number.
  JsonObject& set(std::string_view key, long long value);          ///< An integer.
  JsonObject& set(std::string_view key, int value);                ///< An integer.
  JsonObject& set(std::string_view key, std::uint64_t value);      ///< An unsigned integer.
  JsonObject& set(std::string_view key, bool value);               ///< true or false.
  JsonObject& set(std::string_view key, std::string_view value);   ///< A string.
  JsonObject& set(std::string_view key, const char* value);        ///< A string.
  JsonObject& set(std::string_view key, const JsonObject& value);  ///< A nested object.
  JsonObject& set(std::string_view key, const JsonArray& value);   ///< An array.
  /// The object as compact JSON text.
  std::string dump() const;

 private:
  JsonObject& setRaw(std::string_view key, std::string json);
  std::vector<std::pair<std::string, std::string>> members_;
};

/// @}

// ------------------------------------------------------------------------------------------------
/// @name The vector-add workload shared by the samples
/// Every sample moves data through the same kernel, `VecAdd_kernel` in vectorAdd_kernel.fatbin,
/// so that its results are comparable across allocation techniques. Each sample launches it
/// itself; these are the host-side inputs and the exact check.
/// @{

/// A VecAdd_kernel launch as a sample set it up (C = A + B on device buffers), for its
/// measurements to repeat. The sample writes the launch itself; this only carries its settings.
struct VectorAddLaunch {
  CUfunction kernel = nullptr;  ///< `VecAdd_kernel`.
  unsigned int grid = 0;        ///< Blocks per launch.
  unsigned int block = 0;       ///< Threads per block.
  CUstream stream = nullptr;    ///< Where the launches and copies go.
  CUdeviceptr a = 0;            ///< Input A: count floats on the device.
  CUdeviceptr b = 0;            ///< Input B.
  CUdeviceptr c = 0;            ///< Output C = A + B.
  std::size_t count = 0;        ///< Elements per vector.
};

/**
 * Times @p launch (VecAdd_kernel over its a, b, c and count) on its stream with timeOnStream():
 * @p warmup untimed launches, then @p iterations timed ones.
 */
TimingStats timeVectorAdd(const VectorAddLaunch& launch, int warmup, int iterations);

/// Fills @p a and @p b with reproducible pseudo-random values in [-1, 1) derived from @p seed.
void fillVectorAddInputs(float* a, float* b, std::size_t count, std::uint32_t seed);

/// Result of comparing C with A + B element by element.
struct VectorAddCheck {
  std::size_t mismatches = 0;  ///< Elements where C != A + B.
  std::size_t firstBad = 0;    ///< Index of the first mismatch (valid when mismatches > 0).
  float expected = 0;          ///< A + B at firstBad.
  float actual = 0;            ///< C at firstBad.
};

/**
 * Counts the elements where @p c differs from @p a + @p b. The comparison is exact: a float
 * addition is correctly rounded on the GPU and the CPU alike (no FMA is involved), so any
 * difference is a real error, not rounding.
 */
VectorAddCheck checkVectorAdd(const float* a, const float* b, const float* c, std::size_t count);

/// "Mismatch at element 5: expected 1.25, got 0 (3 wrong in total)"; empty when all matched.
std::string describeMismatch(const VectorAddCheck& check);

/// @}

// ------------------------------------------------------------------------------------------------
/// @name Running a sample
/// @{

/**
 * What a sample body reports into: human text (respecting `--quiet`, and moved to stderr when the
 * JSON goes to stdout) and the JSON result object.
 */
class Report {
 public:
  /// @param humanText where human text goes; nullptr for `--quiet`.
  explicit Report(std::ostream* humanText) : humanText_(humanText) {}
  /// Stream for the human summary (a stream that discards everything under `--quiet`).
  std::ostream& out();
  /// The JSON result; runSample() adds "sample" and "verdict".
  JsonObject& json() noexcept { return json_; }

 private:
  std::ostream* humanText_;
  JsonObject json_;
};

/// What a sample body returns.
enum class Verdict { Pass, Fail };

/**
 * The single place where a sample's outcome becomes output and an exit code.
 *
 * Parses the command line (printing usage for `--help`), opens the `--json` destination before
 * any GPU work (so a bad path fails at once), runs @p body and maps its outcome:
 * Verdict::Pass -> "Result = PASS", 0; Verdict::Fail -> "Result = FAIL", 1; UsageError -> the
 * message and a usage hint, 1; WaivedError -> "WAIVED: <reason>", 2; any other exception ->
 * "<program>: error: <what>" and "Result = FAIL", 1. With `--json` the verdict (and the error or
 * waiver reason) is also written as one JSON object.
 */
int runSample(CommandLine& commandLine, const CommonOptions& options, int argc,
              const char* const* argv, const std::function<Verdict(Report&)>& body);

/// @}

}  // namespace memsamples
