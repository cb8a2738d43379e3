/**
 * @file numaHostAlloc.cpp
 * @brief Host memory on the NUMA node nearest the GPU: bound with mbind before first
 *        touch, verified, registered with CUDA and used; next to the CUDA-native
 *        cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA) and the cuMemHostAlloc reference.
 *
 * On a machine with several CPU sockets, host memory behind the socket the GPU is
 * attached to is one interconnect hop closer than the rest; the GPU reads and writes it
 * faster. Linux places a page when it is first touched, so the placement has to be
 * decided *before* that.
 *
 * Bad input (a size that cannot fit, `--strict` with `--no-bind`, a strict binding to a
 * `--node` that cannot hold the vectors) is refused first, with no GPU, before anything
 * could be waived (checkInput()).
 *
 * 1. **cuInit**, a device, and the **topology**: the driver's
 *    CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID and the kernel's sysfs `numa_node` give the nearest
 *    host node with memory.
 * 2. **cuCtxCreate**, and what the measurements run on: the kernel, a device vector,
 *    a stream.
 * 3. **Decide**, then **mmap**, **mbind** while no page exists, **madvise** twice
 *    (MADV_HUGEPAGE, MADV_DONTFORK), and what each errno means: a warning or an error
 *    (numa_binding.cpp).
 * 4. **First touch**, with **move_pages** before and after it: where did the pages land?
 * 5. **cuMemHostRegister** and **cuMemHostGetDevicePointer**; the placement once more,
 *    and the placement report.
 * 6. **Use**: copies both ways and a zero-copy VecAdd through the device pointer.
 * 7. **cuMemHostUnregister**, then **munmap**: unregister before the pages go.
 * 8. **The CUDA-native path** (host_numa_allocation.cpp):
 *    **cuMemGetAllocationGranularity**, **cuMemAddressReserve**, **cuMemCreate** with a
 *    HOST_NUMA location, **cuMemMap**, **cuMemRelease** at once, **cuMemSetAccess** for
 *    the device *and* the CPU, use, **cuMemUnmap**, **cuMemAddressFree**.
 * 9. **The reference**: **cuMemHostAlloc**(CU_MEMHOSTALLOC_DEVICEMAP), placed by the
 *    driver.
 * 10. **Compared** (numaHostAlloc_measure.cpp): GB/s and ratios to cuMemHostAlloc, and
 *     with two or more nodes with memory, nearest vs remote. The owners release the
 *     stream, the device vector, the module and the context, on every path.
 *
 * A default run uses 64 MiB vectors and should take about a second; `--full` measures 1 GiB
 * vectors, the benchmark behind the course's plot (docs/refresh_data.sh).
 */
#include <numaif.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "host_numa_allocation.hpp"
#include "memsamples.hpp"
#include "numaHostAlloc_measure.hpp"
#include "numa_binding.hpp"

namespace ms = memsamples;        // Common: check, owners, options, timing
namespace mn = memsamples::numa;  // this folder's binding rules: numa_binding.hpp

namespace {

// The default bytes per vector: a learner's first run should take about a second, and
// the ratios hold (64 MiB copies run at the link's speed). `--full`: the benchmark behind the
// course's plot. Every host range holds three vectors: A, B and C.
constexpr std::uint64_t kDefaultBytes = 64ull << 20;
constexpr std::uint64_t kFullBytes = 1ull << 30;
constexpr int kVectors = 3;

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  bool noBind = false;
  bool strict = false;
  bool full = false;
  long long node = -1;  // -1: the node nearest the GPU
};

// Bad input is refused before any GPU work, so that it is an error (exit 1) on every
// machine, never a waiver: three vectors per host source, one source at a time, within
// MemAvailable and any container's memory limit; a strict binding to a --node that
// cannot hold them is bad input too. Returns the bytes per host vector that fit.
std::uint64_t checkInput(const Options& options, const mn::BindPolicy& policy) {
  const std::uint64_t defaultBytes = options.full ? kFullBytes : kDefaultBytes;
  return mn::sizeHostVectors(options.sizeBytes, defaultBytes, kVectors, policy,
                             options.node);
}

ms::Verdict runNumaHostAlloc(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  // Warnings are printed at once and kept for the JSON: the rules only report them.
  ms::JsonArray warnings;
  const mn::WarningSink warn = [&warnings](const std::string& text) {
    std::cerr << "numaHostAlloc: warning: " << text << '\n';
    warnings.add(text);
  };
  const mn::BindPolicy policy{!options.noBind, options.strict};

  // [before-the-core]
  // Bad input first: an error on every machine, before anything could be waived.
  const std::uint64_t hostVectorBytes = checkInput(options, policy);

  // 1. The driver, a device, and the host node nearest it.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);

  // The node nearest the GPU, from the driver's answer and the kernel's
  // (numaHostAlloc_measure.cpp). GPU memory that is a NUMA node of its own (coherent
  // Grace-class systems) is never taken for host memory.
  const Topology topology = probeTopology(device, options.node, policy, report);

  // 2. A context, and what every host source is measured with: the VecAdd kernel, one
  // device vector (the copies' other end), and a stream.
  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  const Workload work =
      prepareWorkload(device, options.sizeBytes, hostVectorBytes, options.common, out);
  // [before-the-core]
  std::vector<SourceResult> results;
  mn::PlacementReport placement;

  // Each host source lives in a block of its own: its owners end with the block.
  out << "\n[1] mmap + mbind before first touch + cuMemHostRegister\n";
  {
    // [decide]
    // 3. Decide, then map and bind. Decide before anything exists, so that a refusal
    // leaves nothing behind: strict or soft; a node that is missing, empty, full or GPU
    // memory; policy calls refused by a container's seccomp filter (numa_binding.cpp).
    const mn::BindPlan plan =
        mn::planBinding(policy, topology.target, work.hostBytes, topology.nodes);
    // bytes: what is bound, touched and registered; reserved (below): what mmap gets,
    // bytes plus the alignment margin.
    const std::size_t bytes = plan.layout.mappedBytes;
    // [decide]

    //! [core]
    // mmap only reserves addresses: no physical page exists until the first touch.
    // From one huge page up, the range gets one huge page of extra addresses so that
    // it can start on a huge-page boundary; the margins are never touched.
    const std::size_t reserved = plan.layout.reservedBytes;
    const int protection = PROT_READ | PROT_WRITE;
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS;
    void* const mapping = mmap(nullptr, reserved, protection, flags, -1, 0);
    if (mapping == MAP_FAILED)
      throw std::system_error(errno, std::generic_category(), "mmap");
    // The owner unmaps on an error path; the good path unmaps below.
    mn::OwnedMapping ownedMapping(mapping, reserved);
    const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(mapping);
    const std::size_t align = plan.layout.alignment;
    char* const host = reinterpret_cast<char*>((first + align - 1) & ~(align - 1));

    // Bound while no page exists, so nothing has to move. One bit per node; the kernel
    // reads maxNode - 1 bits. plan.mode is MPOL_BIND (strict) or MPOL_PREFERRED (soft),
    // each with MPOL_F_STATIC_NODES.
    const unsigned long* const mask = plan.mask.words.data();
    int mbindError = 0;
    if (plan.callMbind && mbind(host, bytes, plan.mode, mask, plan.mask.maxNode, 0) != 0)
      mbindError = errno;

    // Advice numbers, not flags: MADV_HUGEPAGE (14) | MADV_DONTFORK (10) would ask for
    // 14 only. DONTFORK keeps a forked child from sharing the pinned pages.
    const int hugePageError = madvise(host, bytes, MADV_HUGEPAGE) == 0 ? 0 : errno;
    const int dontForkError = madvise(host, bytes, MADV_DONTFORK) == 0 ? 0 : errno;

    // What each errno means: EPERM from mbind (a seccomp filter) is a warning, even
    // with --strict, and every page is checked after the first touch; another errno fails
    // a strict binding. Refused advice costs speed, not correctness: a warning.
    const mn::CallErrors errors{mbindError, hugePageError, dontForkError};
    const mn::BindOutcome binding = mn::settleBinding(plan, errors, warn);

    // 4. First touch: one byte per page creates it, on the node the policy picks.
    // move_pages with no target nodes moves nothing: it writes each page's node into
    // `status`, or -ENOENT for a page that does not exist yet.
    mn::PlacementLog log;
    for (std::size_t offset = 0; offset < bytes; offset += plan.pageBytes)
      log.pages.push_back(host + offset);
    const auto wherePagesAre = [&log]() {
      mn::PageNodes answer;
      answer.status.resize(log.pages.size());
      void** const pages = log.pages.data();
      if (move_pages(0, log.pages.size(), pages, nullptr, answer.status.data(), 0) != 0)
        answer.error = errno;
      return answer;
    };
    log.beforeTouch = wherePagesAre();
    for (void* const page : log.pages)
      *static_cast<char*>(page) = 0;
    log.touched = wherePagesAre();

    // 5. Pinned, and mapped for the device: DEVICEMAP gives the range an address a
    // kernel can use. Pinning may migrate pages first (out of ZONE_MOVABLE): look
    // again. Under --strict every page must stay on the node.
    ms::check(cuMemHostRegister(host, bytes, CU_MEMHOSTREGISTER_DEVICEMAP),
              "cuMemHostRegister");
    ms::OwnedHostRegistration registration(host);  // unregisters on an error path
    // On an error path: waits for the stream before the owners unregister and unmap.
    const ms::DrainOnExit drain(work.stream.get());
    CUdeviceptr devicePointer = 0;
    ms::check(cuMemHostGetDevicePointer(&devicePointer, host, 0),
              "cuMemHostGetDevicePointer");
    log.pinned = wherePagesAre();
    placement = mn::reportPlacement(plan, binding, log, out);

    // 6. Use: copies to and from the device, and a kernel that reads and writes the
    // range in place through the device pointer.
    const HostVectors vectors{host, devicePointer, work.stride};
    results.push_back(measureSource("mbind + cuMemHostRegister", vectors, work, out, ""));

    // 7. Unregister before the pages go; unmapping drops the memory policy too.
    ms::check(cuMemHostUnregister(registration.release()), "cuMemHostUnregister");
    if (munmap(ownedMapping.release(), reserved) != 0)
      throw std::system_error(errno, std::generic_category(), "munmap");
    //! [core]
  }

  // 8. The CUDA-native path, where the driver offers it: the driver puts pinned pages
  // on the node itself, with no mbind (host_numa_allocation.cpp; README: Going deeper).
  out << "\n[2] cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA) + cuMemMap + "
      << "cuMemSetAccess\n";
  if (!topology.hostNumaVmm) {
    out << "  skipped: "
        << "CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0\n";
  } else {
    const mn::HostNumaVmmNode& vmm = topology.vmmNode;
    const std::string why = vmm.reason.empty() ? "" : " (" + vmm.reason + ")";
    const auto use = [&](const HostNumaRange& range) {
      const ms::DrainOnExit drain(work.stream.get());
      out << "  node " << vmm.node << why << ", " << (range.size >> 20) << " MiB, "
          << "granularity " << (range.granularity >> 10) << " KiB (minimum "
          << (range.minimumGranularity >> 10) << " KiB, recommended "
          << (range.recommendedGranularity >> 10) << " KiB)\n";

      // The driver chose the pages; whether the kernel can report them depends on how
      // the driver maps them into the process: information, not a check.
      char* const host = reinterpret_cast<char*>(range.address);
      const HostVectors vectors{host, range.address, work.stride};
      const std::string label = "placement as the kernel reports it";
      results.push_back(measureSource("cuMemCreate(HOST_NUMA)", vectors, work, out, label));
    };
    useHostNumaAllocation(topology.ordinal, vmm.node, work.hostBytes, use);
  }

  // 9. The reference: cuMemHostAlloc, placed by the driver.
  {
    out << "\n[3] cuMemHostAlloc (reference)\n";
    ms::OwnedPinnedHostMemory pinned;
    const unsigned int flags = CU_MEMHOSTALLOC_DEVICEMAP;
    ms::check(cuMemHostAlloc(pinned.out(), work.hostBytes, flags), "cuMemHostAlloc");
    const ms::DrainOnExit drain(work.stream.get());
    CUdeviceptr devicePointer = 0;
    ms::check(cuMemHostGetDevicePointer(&devicePointer, pinned.get(), 0),
              "cuMemHostGetDevicePointer");

    char* const host = static_cast<char*>(pinned.get());
    const HostVectors vectors{host, devicePointer, work.stride};
    results.push_back(
        measureSource("cuMemHostAlloc (reference)", vectors, work, out, "placement"));
    ms::check(cuMemFreeHost(pinned.release()), "cuMemFreeHost");
  }

  // 10. The comparison, nearest vs remote nodes and the data checks
  // (numaHostAlloc_measure.cpp). The owners then release the stream (after its work),
  // the device vector, the module and the context.
  const bool dataOk =
      finishRun(results, topology, work, placement.json, warn, warnings, report);
  return dataOk && placement.ok ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit
/// codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "numaHostAlloc",
      "Binds host memory to the NUMA node nearest the GPU with mbind before first "
      "touch, checks where the pages landed, registers it with CUDA and compares its "
      "bandwidth with cuMemCreate(HOST_NUMA) and cuMemHostAlloc.");
  commandLine.addCommonOptions(options.common);

  commandLine.addSize("size",
                      "bytes per vector, a multiple of 4, at most 1T (default 64M, with "
                      "--full 1G; less if memory is short); each host source holds three",
                      options.sizeBytes, 1, 1ull << 40, sizeof(float));  // at most 1T
  commandLine.addFlag("full",
                      "the benchmark behind the course's plot: 1G per vector (about 15 s on "
                      "an H100; the default run, seconds)",
                      options.full);
  commandLine.addFlag("strict",
                      "MPOL_BIND: every page on the node or an error (default: "
                      "MPOL_PREFERRED)",
                      options.strict);
  commandLine.addFlag("no-bind", "do not bind the host memory (no mbind call)",
                      options.noBind);
  commandLine.addInteger("node",
                         "bind to this NUMA node instead of the one nearest the GPU",
                         options.node, 0, 1023);

  const auto body = [&](ms::Report& report) {
    return runNumaHostAlloc(options, report);
  };
  return ms::runSample(commandLine, options.common, argc, argv, body);
}
