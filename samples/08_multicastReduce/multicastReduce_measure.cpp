// Step 7 of the multicastReduce lesson: the multicast all-reduce against two references on the
// same buffers (peer loads over NVLink, copy engine + a local add) and the link itself, timed as
// the team's time, and the report (Team::measureAndReport(), declared in multicast_team.hpp).
#include <algorithm>
#include <deque>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "multicast_team.hpp"

namespace memsamples::multicast {
namespace {

/// Peer_allreduce_kernel's first argument: every member's unicast address, as the kernel's
/// `struct PeerCopies { float4* copy[8]; }` lays them out.
struct PeerCopies {
  CUdeviceptr copy[kMaxTeam] = {};
};
static_assert(sizeof(CUdeviceptr) == sizeof(void*), "a device pointer is a pointer");

/// Zeroes the data part of every copy (not the barrier counters), so that repeated in-place
/// all-reduces during timing add zeros instead of growing without bound.
void zeroData(const Team& team) {
  for (const Member& member : team.members) {
    const ScopedContext current(member.context);
    check(cuMemsetD32Async(member.unicast, 0, team.layout.dataBytes / sizeof(float),
                           member.stream),
          "cuMemsetD32Async");
    check(cuStreamSynchronize(member.stream), "cuStreamSynchronize");
  }
}

/// Events that make one repetition the team's: member 0 starts everyone and waits for everyone.
class TeamEvents {
 public:
  explicit TeamEvents(const Team& team) : team_(team), start_(team.members[0].context) {
    for (std::size_t g = 0; g < team.members.size(); ++g) {
      const ScopedContext current(team.members[g].context);
      done_.emplace_back(team.members[g].context);
      check(cuEventCreate(g == 0 ? start_.out() : done_[g].out(), CU_EVENT_DISABLE_TIMING),
            "cuEventCreate");
    }
  }
  /// Enqueues @p work of every member between the fan-out and the fan-in.
  void enqueue(const MemberWork& work) const {
    const std::vector<Member>& members = team_.members;
    check(cuEventRecord(start_.get(), members[0].stream), "cuEventRecord");
    for (std::size_t g = 0; g < members.size(); ++g) {
      const ScopedContext current(members[g].context);
      if (g > 0)  // an event of another device: the stream waits for it on the GPU
        check(cuStreamWaitEvent(members[g].stream, start_.get(), 0), "cuStreamWaitEvent");
      work(g);
    }
    for (std::size_t g = 1; g < members.size(); ++g) {
      {
        const ScopedContext current(members[g].context);
        check(cuEventRecord(done_[g].get(), members[g].stream), "cuEventRecord");
      }
      check(cuStreamWaitEvent(members[0].stream, done_[g].get(), 0), "cuStreamWaitEvent");
    }
  }

 private:
  const Team& team_;
  ContextEvent start_;              // recorded on member 0's stream
  std::vector<ContextEvent> done_;  // done_[g]: member g's work has ended (g > 0)
};

TimingStats timeTeam(const Team& team, const TeamEvents& events, const MemberWork& work,
                     const CommonOptions& options) {
  zeroData(team);
  const ScopedContext current(team.members[0].context);  // timeOnStream's events: member 0's
  return timeOnStream(team.members[0].stream, options.warmup, options.iterations,
                      [&] { events.enqueue(work); });
}

void launch(CUfunction kernel, const Team& team, std::size_t g, void** args) {
  check(cuLaunchKernel(kernel, team.grid, 1, 1, team.block, 1, 1, 0, team.members[g].stream,
                       args, nullptr),
        "cuLaunchKernel");
}

std::string gbps(double bytes, const TimingStats& timing) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << gigabytesPerSecond(bytes, timing.medianMs);
  return text.str();
}

}  // namespace

Verdict Team::measureAndReport(const MemberWork& multicast, const Mismatch& broadcast,
                               const Mismatch& multicastSums) {
  TimingStats linkCopy;
  const std::vector<PathResult> paths = measureAllReduce(multicast, multicastSums, linkCopy);
  synchronizeAll();
  return reportRun(broadcast, paths, linkCopy);
}

std::vector<PathResult> Team::measureAllReduce(const MemberWork& multicast,
                                               const Mismatch& multicastSums,
                                               TimingStats& linkCopy) {
  const Team& team = *this;
  const CommonOptions& options = options_.common;
  const std::size_t n = team.members.size();
  auto teamSize = static_cast<unsigned int>(n);

  // Peer loads: member g reads its share from every copy over NVLink, adds, writes every copy.
  PeerCopies copies;
  for (std::size_t g = 0; g < n; ++g)
    copies.copy[g] = team.members[g].unicast;
  const MemberWork peerLoads = [&](std::size_t g) {
    unsigned long long first = team.shares[g].first, count = team.shares[g].count;
    void* args[] = {&copies, &teamSize, &first, &count};
    launch(team.members[g].kernels.peerReduce, team, g, args);
  };

  // Copy engine + local add: member g copies its share of every other copy into scratch, adds
  // them to its own, and copies the sum back into every other copy.
  std::uint64_t largestShare = 0;
  for (const Share& share : team.shares)
    largestShare = std::max(largestShare, share.count);
  std::vector<OwnedDeviceMemory> scratch(n);
  for (std::size_t g = 0; g < n; ++g) {
    const ScopedContext current(team.members[g].context);
    check(cuMemAlloc(scratch[g].out(), (n - 1) * largestShare * kVectorBytes), "cuMemAlloc");
  }
  std::deque<DrainOnExit> drains;  // on an error: no copy still runs when scratch is freed
  for (std::size_t g = 0; g < n; ++g)
    drains.emplace_back(team.members[g].stream);
  const MemberWork copyEngine = [&](std::size_t g) {
    const Member& self = team.members[g];
    const std::size_t offset = team.shares[g].first * kVectorBytes;
    const std::size_t bytes = team.shares[g].count * kVectorBytes;
    if (bytes == 0)  // a share can be empty when the buffer has fewer float4 than GPUs
      return;
    unsigned int parts = 0;
    for (std::size_t h = 0; h < n; ++h) {
      if (h == g)
        continue;
      check(cuMemcpyPeerAsync(scratch[g].get() + parts++ * bytes, self.context,
                              team.members[h].unicast + offset, team.members[h].context, bytes,
                              team.members[g].stream),
            "cuMemcpyPeerAsync");
    }
    CUdeviceptr dst = self.unicast + offset, src = scratch[g].get();
    unsigned long long count = team.shares[g].count;
    void* args[] = {&dst, &src, &parts, &count};
    launch(team.members[g].kernels.addParts, team, g, args);
    for (std::size_t h = 0; h < n; ++h) {
      if (h != g)
        check(cuMemcpyPeerAsync(team.members[h].unicast + offset, team.members[h].context, dst,
                                self.context, bytes, team.members[g].stream),
              "cuMemcpyPeerAsync");
    }
  };

  std::vector<PathResult> paths(3);
  paths[0].name = "multicast (multimem.ld_reduce + st)";
  paths[0].check = multicastSums;
  paths[1].name = "peer loads over NVLink";
  paths[2].name = "copy engine + local add";
  const MemberWork* works[] = {&multicast, &peerLoads, &copyEngine};
  for (std::size_t p = 1; p < 3; ++p) {  // the multicast path was checked by the lesson
    uploadInputs();
    runOnTeam(*works[p]);
    paths[p].check = checkCopies(Expect::exactSum);
  }

  const TeamEvents events(team);
  for (std::size_t p = 0; p < 3; ++p)
    paths[p].timing = timeTeam(team, events, *works[p], options);

  // The link itself, as 05_p2pMemMap measures it: member 0 reads one share from member 1.
  const ScopedContext current(team.members[0].context);
  const std::size_t linkBytes = team.shares[1].count * kVectorBytes;
  linkCopy = timeOnStream(team.members[0].stream, options.warmup, options.iterations, [&] {
    check(cuMemcpyPeerAsync(team.members[0].unicast, team.members[0].context,
                            team.members[1].unicast + team.shares[1].first * kVectorBytes,
                            team.members[1].context, linkBytes, team.members[0].stream),
          "cuMemcpyPeerAsync");
  });
  return paths;
}

Verdict Team::reportRun(const Mismatch& broadcast, const std::vector<PathResult>& paths,
                        const TimingStats& linkCopy) {
  const Team& team = *this;
  const int rootOrdinal = team.members[team.root].ordinal;
  std::ostream& out = report_.out();
  JsonObject& json = report_.json();
  const int n = static_cast<int>(team.members.size());
  const double bytes = static_cast<double>(team.layout.dataBytes);
  const double factor = allReduceBusFactor(n);
  const double linkBytes = static_cast<double>(team.shares[1].count * kVectorBytes);
  bool pass = broadcast.count == 0;

  out << "Broadcast from device " << rootOrdinal
      << " (multimem.st), every GPU's copy: " << describe(broadcast) << '\n';
  out << "All-reduce of " << formatBytes(team.layout.dataBytes) << " on " << n
      << " GPUs, in place; median of " << paths[0].timing.samples << " (team time: start on "
      << "device " << team.members[0].ordinal << " until every GPU is done)\n";
  out << "  path                                   result       ms   algbw GB/s   busbw GB/s"
         "   multicast is\n";
  JsonArray jsonPaths;
  for (const PathResult& path : paths) {
    pass = pass && path.check.count == 0;
    const double algbw = gigabytesPerSecond(bytes, path.timing.medianMs);
    const double timeRatio = path.timing.medianMs / paths[0].timing.medianMs;  // this / multicast
    out << "  " << std::left << std::setw(38) << path.name << ' ' << std::setw(8)
        << (path.check.count == 0 ? "exact" : "WRONG") << std::right << std::fixed
        << std::setprecision(3) << std::setw(9) << path.timing.medianMs << std::setprecision(1)
        << std::setw(13) << algbw << std::setw(13) << algbw * factor;
    if (&path != &paths[0])
      out << std::setprecision(2) << std::setw(10) << (timeRatio >= 1 ? timeRatio : 1 / timeRatio)
          << (timeRatio >= 1 ? "x faster" : "x slower");
    out << '\n';
    if (path.check.count != 0)
      out << "    " << path.name << ": " << describe(path.check) << '\n';
    JsonObject entry;
    entry.set("path", path.name)
        .set("exact", path.check.count == 0)
        .set("median_ms", path.timing.medianMs)
        .set("algbw_gbps", algbw)
        .set("busbw_gbps", algbw * factor)
        .set("time_vs_multicast", timeRatio);
    jsonPaths.addRaw(entry.dump());
  }
  out << "  algbw = bytes / time; busbw = algbw x 2(n-1)/n = algbw x " << std::setprecision(2)
      << factor << " (NCCL's convention: what each GPU sends and receives)\n";
  out << "  reference: one-way peer copy (cuMemcpyPeerAsync) of "
      << formatBytes(static_cast<std::uint64_t>(linkBytes)) << ", device "
      << team.members[1].ordinal << " -> " << team.members[0].ordinal << ": "
      << gbps(linkBytes, linkCopy) << " GB/s (the link 05_p2pMemMap measures)\n";
  if (paths[1].timing.medianMs < paths[0].timing.medianMs)
    out << "  note: the peer loads beat multicast here. Per GPU and link direction, multicast "
           "moves S(1 + 1/n) bytes, peer loads 2S(n-1)/n: "
        << std::setprecision(2) << (n + 1.0) / (2.0 * (n - 1)) << "x as many for multicast with "
        << n << " GPUs (README, \"Details\")\n";

  JsonArray devices;
  for (const Member& member : team.members)
    devices.add(member.ordinal);
  json.set("devices", devices)
      .set("root", rootOrdinal)
      .set("bytes", static_cast<std::uint64_t>(team.layout.dataBytes))
      .set("allocation_bytes", static_cast<std::uint64_t>(team.layout.allocationBytes))
      .set("granularity", static_cast<std::uint64_t>(team.layout.granularity))
      .set("broadcast_exact", broadcast.count == 0)
      .set("all_reduce", jsonPaths)
      .set("bus_factor", factor)
      .set("link_copy_gbps", gigabytesPerSecond(linkBytes, linkCopy.medianMs));
  return pass ? Verdict::Pass : Verdict::Fail;
}

}  // namespace memsamples::multicast
