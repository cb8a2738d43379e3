/**
 * @file multicastReduce_measure.hpp
 * @brief The multicastReduce lesson's scaffolding and measurements: filling and checking every
 *        GPU's copy, the two reference all-reduces (peer loads, copy engine + add), the same-run
 *        link reference, the timings and the report. The multicast technique itself is in
 *        multicastReduce.cpp and multicast_team.cpp.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "multicast_plan.hpp"
#include "multicast_team.hpp"

namespace memsamples::multicast {

/// The kernels of multicast_kernel.fatbin, loaded in one member's context.
struct Kernels {
  CUfunction broadcast = nullptr;   ///< Multimem_broadcast_kernel
  CUfunction allReduce = nullptr;   ///< Multimem_allreduce_kernel
  CUfunction peerReduce = nullptr;  ///< Peer_allreduce_kernel
  CUfunction addParts = nullptr;    ///< Add_parts_kernel
};

/// The team as the measurements see it: one entry per member in every vector.
struct TeamRun {
  std::vector<Member> members;    ///< Devices, contexts, unicast and multicast addresses.
  std::vector<CUstream> streams;  ///< One stream per member, in its context.
  std::vector<Kernels> kernels;   ///< The kernels, per member.
  std::vector<Share> shares;      ///< Each member's share of the buffer, in float4.
  BufferLayout layout;            ///< The buffer's layout.
  unsigned int grid = 0;          ///< Blocks of every all-reduce launch (the same on each GPU).
  unsigned int block = 0;         ///< Threads per block.
};

/// Enqueues one member's part of an all-reduce on its stream (its context is current).
using MemberWork = std::function<void(std::size_t member)>;

/// Writes member g's inputs (inputValue(g, i)) into its copy, for every member, and waits.
/// @p host is scratch of at least layout.dataBytes.
void uploadInputs(const TeamRun& team, std::vector<float>& host);

/// Reads every member's copy back and compares it with @p expected(i); the first mismatch found.
Mismatch checkCopies(const TeamRun& team, std::vector<float>& host,
                     const std::function<float(std::uint64_t)>& expected);

/// Enqueues @p work of every member (each within its context) and waits for all of them.
void runOnTeam(const TeamRun& team, const MemberWork& work);

/// How one all-reduce path did.
struct PathResult {
  std::string name;    ///< e.g. "multicast (multimem.ld_reduce + multimem.st)".
  Mismatch check;      ///< Every copy against the exact sum, after one run.
  TimingStats timing;  ///< One all-reduce of every member, start on member 0 to all done.
};

/**
 * Runs the two reference all-reduces once each on fresh inputs and checks them, then times the
 * three paths on the same buffers (multicast given by the lesson as @p multicast, whose check
 * is @p multicastCheck) and a one-way peer copy of one share as the link reference.
 * Every timed repetition starts on member 0's stream and fans out to the others with an event,
 * and member 0 waits for every other member's done event, so it is the team's time.
 */
std::vector<PathResult> measureAllReduce(const TeamRun& team, const MemberWork& multicast,
                                         const Mismatch& multicastCheck,
                                         const CommonOptions& options, std::vector<float>& host,
                                         TimingStats& linkCopy);

/**
 * Prints the team, the broadcast's and the paths' checks, algorithm and bus bandwidth, the ratios
 * to the multicast path, and the link reference; the same in JSON.
 * @return Pass when the broadcast and every path are exact.
 */
Verdict reportRun(const TeamRun& team, int root, const Mismatch& broadcast,
                  const std::vector<PathResult>& paths, const TimingStats& linkCopy,
                  std::ostream& out, JsonObject& json);

}  // namespace memsamples::multicast
