// Where the memMapIPC sample's last worker runs (peer_choice.hpp): on another GPU that can import
// the parent's memory, manages virtual memory, and whose compute mode admits the worker's
// context; else beside the others, with the reason. The machines are faked as plain data: a
// second GPU in compute mode PROHIBITED (no context at all: the worker's cuCtxCreate would fail
// and the run with it) or EXCLUSIVE_PROCESS (another process may hold its one context) is left
// out, and the run says why; the cross-GPU import is optional.
#include <gtest/gtest.h>

#include <cuda.h>

#include <vector>

#include "peer_choice.hpp"

namespace ipc = memsamples::ipc;

namespace {

/// A device that can access the parent's memory and manages virtual memory, in @p mode.
ipc::PeerCandidate peer(int ordinal, int mode = CU_COMPUTEMODE_DEFAULT) {
  return ipc::PeerCandidate{ordinal, true, true, mode};
}

}  // namespace

TEST(PeerChoice, ASecondGpuThatCanImportIsChosen) {
  const ipc::PeerChoice choice = ipc::choosePeer(0, {peer(1)}, 2);
  EXPECT_EQ(choice.ordinal, 1);
  EXPECT_EQ(choice.whyNot, "");
}

TEST(PeerChoice, ASecondGpuInComputeModeProhibitedIsLeftOutWithTheReason) {
  const ipc::PeerChoice choice = ipc::choosePeer(0, {peer(1, CU_COMPUTEMODE_PROHIBITED)}, 2);
  EXPECT_EQ(choice.ordinal, -1);
  EXPECT_EQ(choice.whyNot,
            "device 1 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created (the cross-GPU import is optional: left out)");
}

TEST(PeerChoice, ASecondGpuInComputeModeExclusiveProcessIsLeftOutWithTheReason) {
  const ipc::PeerChoice choice = ipc::choosePeer(1, {peer(0, CU_COMPUTEMODE_EXCLUSIVE_PROCESS)}, 3);
  EXPECT_EQ(choice.ordinal, -1);
  EXPECT_EQ(choice.whyNot.rfind("device 0 is in compute mode EXCLUSIVE_PROCESS "
                                "(CU_COMPUTEMODE_EXCLUSIVE_PROCESS): one process at a time",
                                0),
            0u)
      << choice.whyNot;
  EXPECT_NE(choice.whyNot.find("(the cross-GPU import is optional: left out)"), std::string::npos);
}

TEST(PeerChoice, TheNextUsableGpuIsChosenPastARefusingOne) {
  const ipc::PeerChoice choice = ipc::choosePeer(
      0, {peer(1, CU_COMPUTEMODE_PROHIBITED), peer(2, CU_COMPUTEMODE_EXCLUSIVE_PROCESS), peer(3)},
      2);
  EXPECT_EQ(choice.ordinal, 3);
}

TEST(PeerChoice, EveryRefusingGpuIsNamed) {
  const ipc::PeerChoice choice = ipc::choosePeer(
      2, {peer(0, CU_COMPUTEMODE_PROHIBITED), ipc::PeerCandidate{1, true, false, 0}}, 2);
  EXPECT_EQ(choice.ordinal, -1);
  EXPECT_EQ(choice.whyNot,
            "device 0 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can "
            "be created; device 1 can access device 2 but has no virtual memory management "
            "(the cross-GPU import is optional: left out)");
}

TEST(PeerChoice, NoGpuThatCanAccessOrOneWorkerOnly) {
  EXPECT_EQ(ipc::choosePeer(0, {}, 2).whyNot, "no other GPU can access device 0");
  EXPECT_EQ(ipc::choosePeer(0, {ipc::PeerCandidate{1, false, true, 0}}, 2).whyNot,
            "no other GPU can access device 0");
  const ipc::PeerChoice one = ipc::choosePeer(0, {peer(1)}, 1);
  EXPECT_EQ(one.ordinal, -1);
  EXPECT_EQ(one.whyNot, "one worker only; needs 2 with a second GPU");
}
