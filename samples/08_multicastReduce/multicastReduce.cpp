/**
 * @file multicastReduce.cpp
 * @brief One address for every GPU's copy of a buffer: a multicast object, a broadcast
 *        (multimem.st) and an all-reduce (multimem.ld_reduce) summed in the NVSwitch.
 *
 * Not yet run on multicast hardware: the only two-GPU machine this project can use turns
 * NVLink multicast off, so this code has been built and reviewed, never executed there.
 *
 * A multicast object joins one allocation on each GPU of a team. Mapped like memory, it
 * gives each GPU a *multicast address*: a store through it reaches every copy, and a
 * load-reduce through it returns the sum of every copy, computed by the NVSwitch (NVLS).
 * A `--size` that no machine could hold is refused first (validateSize()), before any
 * device is asked anything. Steps 3 to 8 are the core:
 *
 * 1. Who can take part: **cuInit**, then findTeam() asks every device for multicast
 *    support, compute capability 9.0 or newer, cooperative launches, a compute mode that
 *    admits a context and peer access to every other member; fewer than two such GPUs,
 *    or NVLink multicast turned off (NCCL_NVLS_ENABLE=0 and the like), is WAIVED before
 *    any multicast call.
 * 2. The team (multicast_team.cpp): each member's primary context, stream and kernels,
 *    the buffer's size, and the broadcast's source on the root; a GPU nobody named that
 *    is busy or short of memory is left out, with the reason.
 * 3. The multicast object: **cuMulticastGetGranularity**, the size rounded up,
 *    **cuMulticastCreate**, and **cuMulticastAddDevice** for *every* member before any
 *    memory is bound (a bind blocks until the team is complete).
 * 4. Per member: **cuMemCreate** of its copy, a unicast mapping of the copy for every
 *    member, **cuMulticastBindMem** of the copy to the object (with `--bind-by-address`,
 *    **cuMulticastBindAddr** of its mapped address), and a multicast mapping of the
 *    object for this GPU (**cuMemAddressReserve**, **cuMemMap**, **cuMemSetAccess** for
 *    each mapping).
 * 5. Broadcast: the root stores a source through its multicast address
 *    (**cuLaunchKernel**); every copy is checked against the source.
 * 6. All-reduce, in place: every member sums its share across the team and stores it
 *    into every copy, one kernel on every GPU at once (**cuLaunchCooperativeKernel**)
 *    between two team barriers; every copy is checked against the exact sum.
 * 7. Measured (multicastReduce_measure.cpp): the same all-reduce with peer loads and
 *    with the copy engine, and a one-way peer copy as the link reference.
 * 8. The teardown, each step for every member before the next, each answer checked:
 *    **cuMulticastUnbind**, **cuMemUnmap**, **cuMemRelease**, **cuMemAddressFree**.
 *
 * A result of a multicast call, or of either cuMemMap, that describes the system rather
 * than the sample (no multicast resources left, the fabric's software not running, not
 * permitted or not supported here) waives the run naming the call: checkOrWaive(). The
 * kernels' team barrier follows the pattern NVIDIA documents for multicast objects; the
 * README says what the PTX memory model does and does not promise about it.
 */

#include <cstddef>

#include "memsamples.hpp"
#include "multicast_plan.hpp"
#include "multicast_team.hpp"

namespace ms = memsamples;             // Common: check, owners, options, runSample
namespace mc = memsamples::multicast;  // this folder: the team, its rules and owners

namespace {

/// The lesson: the multicast object's whole life, from granularity to the last release.
ms::Verdict runMulticastReduce(const mc::Options& options, ms::Report& report) {
  // Bad input first: a --size that no machine could hold is a usage error, reported
  // before the devices are asked anything, so never a waiver.
  mc::validateSize(options.sizeBytes);

  // 1. Who can take part: every device's capabilities, and the switches that turn
  // multicast off, may waive the run, all of it before any multicast call.
  ms::checkDriverInit(cuInit(0));
  const mc::TeamChoice choice = mc::findTeam(options);

  // 2. The team: each member's context, stream and kernels, and the size of the buffer.
  mc::Team team(choice, options, report);
  const std::size_t n = team.members.size();

  // The owners in `memory` (multicast_owners.hpp) take what the core makes, one call at
  // a time (own(), or bound() for a binding), and release it only if an exception leaves
  // early. On the good path the core empties each owner with release(), which returns
  // what the releasing call needs (for a binding, its device), and makes that call.
  mc::TeamMemory& memory = team.memory;

  //! [core]
  // 3. The multicast object: granularity, size, then every member added before any bind.
  CUmulticastObjectProp prop = {};  // handleTypes 0: one process, nothing to export
  prop.numDevices = static_cast<unsigned int>(n);
  prop.size = team.layout.dataBytes;  // for now: the final size depends on the answers
  std::size_t minimum = 0;
  std::size_t recommended = 0;
  mc::checkOrWaive(cuMulticastGetGranularity(&minimum, &prop, CU_MULTICAST_GRANULARITY_MINIMUM),
                   "cuMulticastGetGranularity");
  mc::checkOrWaive(cuMulticastGetGranularity(&recommended, &prop,
                                             CU_MULTICAST_GRANULARITY_RECOMMENDED),
                   "cuMulticastGetGranularity");
  const std::size_t bytes = team.roundToGranularity(minimum, recommended);  // prints it
  prop.size = bytes;  // data + counters, rounded up; now in team.layout with the offsets
  mc::checkOrWaive(cuMulticastCreate(memory.object.out(), &prop), "cuMulticastCreate");
  for (const mc::Member& member : team.members)
    mc::checkOrWaive(cuMulticastAddDevice(memory.object.get(), member.device),
                     "cuMulticastAddDevice");

  // 4. Per member: its copy, mapped for every member, bound to the object, and the
  // object mapped for this GPU; each step owned at once.
  for (mc::Member& member : team.members) {
    const ms::ScopedContext current(member.context);
    mc::OwnedAllocationHandle& copy = memory.copies.emplace_back();
    ms::check(cuMemCreate(copy.out(), bytes, &member.allocation, 0), "cuMemCreate");
    // The unicast mapping: this copy alone, for every member (checks, peer loads).
    ms::check(cuMemAddressReserve(&member.unicast, bytes, team.layout.granularity, 0, 0),
              "cuMemAddressReserve");  // 0, 0: no fixed address, no flags
    memory.ranges.emplace_back().own(member.unicast, bytes);
    mc::checkOrWaive(cuMemMap(member.unicast, bytes, 0, copy.get(), 0), "cuMemMap");
    memory.mappings.emplace_back().own(member.unicast, bytes);
    ms::check(cuMemSetAccess(member.unicast, bytes, team.everyMember.data(), n), "cuMemSetAccess");
    // The copy joins the object at offset 0 of both: by its handle, or (--bind-by-address)
    // by its mapped address, all that a program holding only a pointer has.
    if (options.bindByAddress)
      mc::checkOrWaive(cuMulticastBindAddr(memory.object.get(), 0, member.unicast, bytes, 0),
                       "cuMulticastBindAddr");  // flags 0
    else
      mc::checkOrWaive(cuMulticastBindMem(memory.object.get(), 0, copy.get(), 0, bytes, 0),
                       "cuMulticastBindMem");  // flags 0
    memory.bindings.emplace_back().bound(memory.object.get(), member.device, bytes);
    // The multicast mapping: the object, mapped like memory; member.access: this GPU.
    ms::check(cuMemAddressReserve(&member.multicast, bytes, team.layout.granularity, 0, 0),
              "cuMemAddressReserve");  // 0, 0: no fixed address, no flags
    memory.ranges.emplace_back().own(member.multicast, bytes);
    mc::checkOrWaive(cuMemMap(member.multicast, bytes, 0, memory.object.get(), 0), "cuMemMap");
    memory.mappings.emplace_back().own(member.multicast, bytes);
    ms::check(cuMemSetAccess(member.multicast, bytes, &member.access, 1), "cuMemSetAccess");
  }

  // 5. Broadcast: the root stores the source through its multicast address, once. Team
  // keeps the root's context pushed while it lives, so that context is current here.
  const mc::Member& root = team.members[team.root];
  CUdeviceptr target = root.multicast;
  CUdeviceptr source = team.source;
  unsigned long long vectors = team.vectors;
  void* broadcastArgs[] = {&target, &source, &vectors};
  ms::check(cuLaunchKernel(root.kernels.broadcast, team.grid, 1, 1, team.block, 1, 1, 0,
                           root.stream, broadcastArgs, nullptr),
            "cuLaunchKernel");  // grid and block in x, y, z; 0 bytes of shared memory
  ms::check(cuStreamSynchronize(root.stream), "cuStreamSynchronize");
  const mc::Mismatch broadcast = team.checkCopies(mc::Expect::broadcastSource);

  // 6. All-reduce: member g sums its share across the team into every copy.
  unsigned int allReducesSoFar = 0;  // run k's barriers wait for n(2k+1), n(2k+2)
  const mc::MemberWork multicastAllReduce = [&](std::size_t g) {
    const mc::Member& self = team.members[g];
    CUdeviceptr data = self.multicast;
    unsigned long long first = team.shares[g].first;
    unsigned long long count = team.shares[g].count;
    CUdeviceptr countersMc = self.multicast + team.layout.counterOffset;  // all copies
    CUdeviceptr countersUc = self.unicast + team.layout.counterOffset;    // this copy
    unsigned int teamSize = static_cast<unsigned int>(n);
    unsigned int earlierRuns = allReducesSoFar;  // each run adds 2n to every counter
    void* args[] = {&data, &first, &count, &countersMc, &countersUc, &teamSize, &earlierRuns};
    ms::check(cuLaunchCooperativeKernel(self.kernels.allReduce, team.grid, 1, 1,
                                        team.block, 1, 1, 0, self.stream, args),
              "cuLaunchCooperativeKernel");  // the same grid, block and shared memory
    allReducesSoFar += g + 1 == n ? 1 : 0;   // called for g = 0..n-1 in order, once each
  };
  team.prepareAllReduce();             // counters at zero, member g's inputs in its copy
  team.runOnTeam(multicastAllReduce);  // launches on every GPU, then waits for all
  const mc::Mismatch reduced = team.checkCopies(mc::Expect::exactSum);

  // 7. Measured: the all-reduce with peer loads, with the copy engine, and the link.
  const ms::Verdict verdict = team.measureAndReport(multicastAllReduce, broadcast, reduced);

  // 8. The teardown, each step for every member before the next (every stream is idle).
  for (mc::MulticastBinding& binding : memory.bindings)
    ms::check(cuMulticastUnbind(memory.object.get(), binding.release(), 0, bytes),
              "cuMulticastUnbind");  // release(): the device; offset 0, size as bound
  for (mc::Mapping& mapping : memory.mappings) {
    ms::check(cuMemUnmap(mapping.get(), bytes), "cuMemUnmap");
    mapping.release();  // only now: a failed unmap is still the owner's to undo
  }
  for (mc::OwnedAllocationHandle& copy : memory.copies)
    ms::check(cuMemRelease(copy.release()), "cuMemRelease");
  ms::check(cuMemRelease(memory.object.release()), "cuMemRelease");
  for (mc::AddressRange& range : memory.ranges)
    ms::check(cuMemAddressFree(range.release(), bytes), "cuMemAddressFree");
  //! [core]

  return verdict;
}

}  // namespace

/// Parses the options and runs the lesson under runSample(), which owns output and exit
/// codes (0 PASS, 1 FAIL, 2 WAIVED).
int main(int argc, char** argv) {
  mc::Options options;

  ms::CommandLine commandLine(
      "multicastReduce",
      "Binds one buffer per GPU to a multicast object, broadcasts with multimem.st and "
      "all-reduces with multimem.ld_reduce (summed in the NVLink switch), checks every "
      "copy, and compares with peer loads and the copy engine.");
  mc::addOptions(commandLine, options);

  const auto lesson = [&](ms::Report& report) {
    return runMulticastReduce(options, report);
  };
  return ms::runSample(commandLine, options.common, argc, argv, lesson);
}
