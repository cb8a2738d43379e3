// The binding rules: which mbind mode, which fallback, which warning or error, and the madvise
// advice. Pure functions, every branch.
//
// This file includes the kernel's <linux/mempolicy.h> (and not libnuma's <numaif.h>, which
// defines the same names as macros) to check the library's constants against the kernel's.
#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>

#include <cerrno>

#include "memsamples.hpp"
#include "numa_binding.hpp"

namespace mn = memsamples::numa;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

mn::NumaFacts facts(memsamples::NodeMemory::Status status, std::uint64_t total, std::uint64_t free,
                    std::string detail = {}) {
  mn::NumaFacts result;
  result.available = true;
  result.maxNode = 1;
  result.target.status = status;
  result.target.totalBytes = total;
  result.target.freeBytes = free;
  result.target.detail = std::move(detail);
  return result;
}

mn::NumaFacts plenty() {
  return facts(memsamples::NodeMemory::Status::Present, 64 * kMiB, 32 * kMiB);
}

const mn::BindPolicy kSoft{true, false};
const mn::BindPolicy kStrict{true, true};

}  // namespace

TEST(Policy, ConstantsMatchTheKernel) {
  EXPECT_EQ(mn::kMpolStaticNodes, MPOL_F_STATIC_NODES);
}

TEST(Policy, StrictIsBindSoftIsPreferredBothWithStaticNodes) {
  const mn::BindDecision strict = mn::chooseMbindMode(kStrict, 0, kMiB, plenty());
  EXPECT_TRUE(strict.callMbind);
  EXPECT_EQ(strict.mode, MPOL_BIND | MPOL_F_STATIC_NODES);
  EXPECT_TRUE(strict.warning.empty());
  EXPECT_TRUE(strict.error.empty());

  const mn::BindDecision soft = mn::chooseMbindMode(kSoft, 1, kMiB, plenty());
  EXPECT_TRUE(soft.callMbind);
  EXPECT_EQ(soft.mode, MPOL_PREFERRED | MPOL_F_STATIC_NODES);
  EXPECT_TRUE(soft.warning.empty());
  EXPECT_TRUE(soft.error.empty());

  EXPECT_EQ(mn::describeMbindMode(strict.mode), "MPOL_BIND | MPOL_F_STATIC_NODES");
  EXPECT_EQ(mn::describeMbindMode(soft.mode), "MPOL_PREFERRED | MPOL_F_STATIC_NODES");
  EXPECT_EQ(mn::describeMbindMode(MPOL_INTERLEAVE), "MPOL_INTERLEAVE");
  EXPECT_EQ(mn::describeMbindMode(0), "none");
  EXPECT_EQ(mn::describeMbindMode(9), "mode 9");
}

TEST(Policy, ASingleNodeMachineIsNotAnError) {
  mn::NumaFacts single = plenty();
  single.maxNode = 0;
  EXPECT_TRUE(mn::chooseMbindMode(kStrict, 0, kMiB, single).callMbind);
  EXPECT_TRUE(mn::chooseMbindMode(kSoft, 0, kMiB, single).callMbind);
}

TEST(Policy, NoBindMeansNoCallAndNoWarning) {
  for (const bool strict : {false, true}) {
    const mn::BindDecision decision =
        mn::chooseMbindMode(mn::BindPolicy{false, strict}, 0, kMiB, mn::NumaFacts{});
    EXPECT_FALSE(decision.callMbind);
    EXPECT_TRUE(decision.warning.empty());
    EXPECT_TRUE(decision.error.empty());
    EXPECT_EQ(decision.unboundReason, "binding was not requested");
  }
}

TEST(Policy, NumaUnavailable) {
  const mn::NumaFacts none;  // available = false
  const std::string why =
      "NUMA is not available (no NUMA support in the kernel, or the memory-policy system calls "
      "are refused, e.g. by Docker's default seccomp profile without CAP_SYS_NICE)";
  const mn::BindDecision strict = mn::chooseMbindMode(kStrict, 0, kMiB, none);
  EXPECT_FALSE(strict.callMbind);
  EXPECT_EQ(strict.error, "cannot bind 1.00 MiB strictly: " + why);
  EXPECT_TRUE(strict.warning.empty());

  const mn::BindDecision soft = mn::chooseMbindMode(kSoft, 0, kMiB, none);
  EXPECT_FALSE(soft.callMbind);
  EXPECT_TRUE(soft.error.empty());
  EXPECT_EQ(soft.warning, "host memory not bound: " + why +
                              "; its pages will land wherever they are first "
                              "touched");
  EXPECT_EQ(soft.unboundReason, why);
}

TEST(Policy, NoNodeKnown) {
  EXPECT_EQ(mn::chooseMbindMode(kStrict, -1, kMiB, plenty()).error,
            "cannot bind 1.00 MiB strictly: no host NUMA node is known for this GPU");
  EXPECT_EQ(mn::chooseMbindMode(kSoft, -1, kMiB, plenty()).warning,
            "host memory not bound: no host NUMA node is known for this GPU; its pages will land "
            "wherever they are first touched");
}

TEST(Policy, NodeThatDoesNotExist) {
  const mn::NumaFacts missing =
      facts(memsamples::NodeMemory::Status::DoesNotExist, 0, 0, "numa_max_node() is 1");
  EXPECT_EQ(mn::chooseMbindMode(kStrict, 7, 2 * kMiB, missing).error,
            "cannot bind 2.00 MiB strictly: node 7 does not exist (numa_max_node() is 1)");
  const mn::BindDecision soft = mn::chooseMbindMode(kSoft, 7, 2 * kMiB, missing);
  EXPECT_FALSE(soft.callMbind);
  EXPECT_EQ(soft.warning,
            "host memory not bound: node 7 does not exist (numa_max_node() is 1); its pages "
            "will land wherever they are first touched");
  // Without a detail there are no empty brackets.
  EXPECT_EQ(mn::chooseMbindMode(kStrict, 7, kMiB,
                                facts(memsamples::NodeMemory::Status::DoesNotExist, 0, 0))
                .error,
            "cannot bind 1.00 MiB strictly: node 7 does not exist");
}

TEST(Policy, NodeWithoutMemory) {
  const mn::NumaFacts empty = facts(memsamples::NodeMemory::Status::Present, 0, 0);
  EXPECT_EQ(mn::chooseMbindMode(kStrict, 1, kMiB, empty).error,
            "cannot bind 1.00 MiB strictly: node 1 has no memory");
  EXPECT_EQ(mn::chooseMbindMode(kSoft, 1, kMiB, empty).warning,
            "host memory not bound: node 1 has no memory; its pages will land wherever they are "
            "first touched");
}

TEST(Policy, CapacityStrictIsAnErrorSoftIsAWarning) {
  const mn::NumaFacts tight = facts(memsamples::NodeMemory::Status::Present, 64 * kMiB, kMiB);
  const mn::BindDecision strict = mn::chooseMbindMode(kStrict, 1, 2 * kMiB, tight);
  EXPECT_FALSE(strict.callMbind);
  EXPECT_EQ(strict.error,
            "cannot bind strictly: node 1 has 1.00 MiB free, less than the 2.00 MiB requested");

  const mn::BindDecision soft = mn::chooseMbindMode(kSoft, 1, 2 * kMiB, tight);
  EXPECT_TRUE(soft.callMbind);
  EXPECT_EQ(soft.mode, MPOL_PREFERRED | MPOL_F_STATIC_NODES);
  EXPECT_TRUE(soft.error.empty());
  EXPECT_EQ(soft.warning,
            "node 1 has 1.00 MiB free, less than the 2.00 MiB requested; binding with "
            "MPOL_PREFERRED anyway, the pages that do not fit will come from other nodes");

  // Exactly the free amount fits.
  EXPECT_TRUE(mn::chooseMbindMode(kStrict, 1, kMiB, tight).callMbind);
}

TEST(Policy, UnknownNodeMemorySkipsTheCapacityCheck) {
  const mn::NumaFacts unknown = facts(memsamples::NodeMemory::Status::Unknown, 0, 0, "unreadable");
  const mn::BindDecision decision = mn::chooseMbindMode(kStrict, 0, 64 * kMiB, unknown);
  EXPECT_TRUE(decision.callMbind);
  EXPECT_TRUE(decision.warning.empty());
  EXPECT_TRUE(decision.error.empty());
}

TEST(MbindFailure, EpermIsAWarningEvenWhenStrict) {
  const mn::BindAnswer soft = mn::classifyMbindFailure(EPERM, kSoft, 0);
  EXPECT_FALSE(soft.fatal);
  EXPECT_EQ(soft.state, mn::BindState::BlockedBySeccomp);
  EXPECT_EQ(soft.message,
            "mbind to node 0 was refused with EPERM (a seccomp filter blocks it); the memory "
            "stays unbound");
  const mn::BindAnswer strict = mn::classifyMbindFailure(EPERM, kStrict, 0);
  EXPECT_FALSE(strict.fatal);
  EXPECT_EQ(strict.state, mn::BindState::BlockedBySeccomp);
  EXPECT_EQ(strict.message, soft.message + ", and every page is checked after first touch");
}

TEST(MbindFailure, OtherErrorsAreFatalOnlyWhenStrict) {
  const mn::BindAnswer strict = mn::classifyMbindFailure(EINVAL, kStrict, 3);
  EXPECT_TRUE(strict.fatal);
  EXPECT_NE(strict.state, mn::BindState::BlockedBySeccomp);
  EXPECT_EQ(strict.message, "mbind to node 3 failed: Invalid argument (EINVAL)");
  const mn::BindAnswer soft = mn::classifyMbindFailure(ENOMEM, kSoft, 3);
  EXPECT_FALSE(soft.fatal);
  EXPECT_EQ(soft.state, mn::BindState::FellBack);
  EXPECT_EQ(soft.message,
            "mbind to node 3 failed: Cannot allocate memory (ENOMEM); the memory stays unbound");
  EXPECT_NE(mn::classifyMbindFailure(4000, kStrict, 0).message.find("(errno 4000)"),
            std::string::npos);
}

TEST(Advice, SeparateNumbersNotFlags) {
  // The bug this guards against: advice values are numbers, so OR-ing them loses one.
  EXPECT_EQ(MADV_HUGEPAGE | MADV_DONTFORK, MADV_HUGEPAGE);
  EXPECT_EQ(mn::madviseAdvice(kMiB, 2 * kMiB), std::vector<int>{MADV_DONTFORK});
  EXPECT_EQ(mn::madviseAdvice(2 * kMiB - 1, 2 * kMiB), std::vector<int>{MADV_DONTFORK});
  EXPECT_EQ(mn::madviseAdvice(2 * kMiB, 2 * kMiB),
            (std::vector<int>{MADV_HUGEPAGE, MADV_DONTFORK}));
  // 64 KiB pages: the huge page is 512 MiB, and a smaller range gets no huge-page advice.
  EXPECT_EQ(mn::madviseAdvice(64 * kMiB, 512 * kMiB), std::vector<int>{MADV_DONTFORK});
  EXPECT_EQ(mn::madviseAdvice(512 * kMiB, 512 * kMiB),
            (std::vector<int>{MADV_HUGEPAGE, MADV_DONTFORK}));
  // No transparent huge pages in this kernel: the advice would only be refused.
  EXPECT_EQ(mn::madviseAdvice(512 * kMiB, 0), std::vector<int>{MADV_DONTFORK});
  EXPECT_EQ(mn::adviceName(MADV_HUGEPAGE), "MADV_HUGEPAGE");
  EXPECT_EQ(mn::adviceName(MADV_DONTFORK), "MADV_DONTFORK");
  EXPECT_EQ(mn::adviceName(MADV_NORMAL), "advice 0");
}

TEST(BindState, Names) {
  EXPECT_STREQ(mn::bindStateName(mn::BindState::Bound), "bound");
  EXPECT_STREQ(mn::bindStateName(mn::BindState::NotRequested), "not requested");
  EXPECT_STREQ(mn::bindStateName(mn::BindState::FellBack), "fell back (unbound)");
  EXPECT_STREQ(mn::bindStateName(mn::BindState::BlockedBySeccomp), "blocked by seccomp (unbound)");
}

TEST(Policy, WhyNodeCannotBeBoundIsTheDecisionsFirstCheck) {
  // The check a program runs before any GPU work (`--strict --node N`): it needs no size.
  EXPECT_EQ(mn::whyNodeCannotBeBound(0, plenty()), "");
  EXPECT_EQ(mn::whyNodeCannotBeBound(0, mn::NumaFacts{}).rfind("NUMA is not available (", 0), 0u);
  EXPECT_EQ(mn::whyNodeCannotBeBound(-1, plenty()), "no host NUMA node is known for this GPU");
  EXPECT_EQ(mn::whyNodeCannotBeBound(7, facts(memsamples::NodeMemory::Status::DoesNotExist, 0, 0,
                                              "numa_max_node() is 1")),
            "node 7 does not exist (numa_max_node() is 1)");
  EXPECT_EQ(mn::whyNodeCannotBeBound(1, facts(memsamples::NodeMemory::Status::Present, 0, 0)),
            "node 1 has no memory");
  // A shortage of free memory depends on the size: not this check's business.
  EXPECT_EQ(
      mn::whyNodeCannotBeBound(1, facts(memsamples::NodeMemory::Status::Present, 64 * kMiB, 0)),
      "");
  // The early refusal reads exactly like the decision's own.
  const mn::NumaFacts missing =
      facts(memsamples::NodeMemory::Status::DoesNotExist, 0, 0, "no node 7");
  EXPECT_EQ(mn::strictRefusal(48 * kMiB, mn::whyNodeCannotBeBound(7, missing)),
            mn::chooseMbindMode(kStrict, 7, 48 * kMiB, missing).error);
  EXPECT_EQ(mn::strictRefusal(48 * kMiB, "why"), "cannot bind 48.0 MiB strictly: why");
}

TEST(NodeMask, OneBitAndTheKernelsMaxnode) {
  constexpr unsigned long kBits = sizeof(unsigned long) * 8;
  const mn::NodeMask zero = mn::nodeMask(0);
  EXPECT_EQ(zero.words, std::vector<unsigned long>{1ul});
  EXPECT_EQ(zero.maxNode, kBits + 1);
  const mn::NodeMask three = mn::nodeMask(3);
  EXPECT_EQ(three.words, std::vector<unsigned long>{8ul});
  // Node 64 is bit 0 of the second word; the mask grows to hold it.
  const mn::NodeMask far = mn::nodeMask(static_cast<int>(kBits));
  EXPECT_EQ(far.words, (std::vector<unsigned long>{0ul, 1ul}));
  EXPECT_EQ(far.maxNode, 2 * kBits + 1);
  const mn::NodeMask last = mn::nodeMask(1023);
  EXPECT_EQ(last.words.size(), 1024 / kBits);
  EXPECT_EQ(last.words.back(), 1ul << (kBits - 1));
  EXPECT_THROW(mn::nodeMask(-1), std::invalid_argument);
}

namespace {

/// settleBinding() with the warnings it hands out collected.
struct Settled {
  mn::BindOutcome outcome;
  std::vector<std::string> warnings;
};

Settled settle(const mn::BindDecision& decision, int mbindError, const mn::BindPolicy& policy) {
  Settled settled;
  EXPECT_EQ(decision.policy.strict, policy.strict);  // the decision carries its policy and node
  EXPECT_EQ(decision.node, 2);
  settled.outcome = mn::settleBinding(decision, {mbindError, 0, 0},
                                      [&](const std::string& w) { settled.warnings.push_back(w); });
  return settled;
}

}  // namespace

TEST(SettleBinding, MbindSucceeded) {
  const Settled bound = settle(mn::chooseMbindMode(kStrict, 2, kMiB, plenty()), 0, kStrict);
  EXPECT_EQ(bound.outcome.state, mn::BindState::Bound);
  EXPECT_EQ(bound.outcome.mode, MPOL_BIND | MPOL_F_STATIC_NODES);
  EXPECT_TRUE(bound.outcome.unboundReason.empty());
  EXPECT_TRUE(bound.warnings.empty());
  // A soft binding short of free memory is bound, with the decision's one warning.
  const mn::NumaFacts tight = facts(memsamples::NodeMemory::Status::Present, 64 * kMiB, kMiB);
  const Settled spilled = settle(mn::chooseMbindMode(kSoft, 2, 2 * kMiB, tight), 0, kSoft);
  EXPECT_EQ(spilled.outcome.state, mn::BindState::Bound);
  ASSERT_EQ(spilled.warnings.size(), 1u);
  EXPECT_NE(spilled.warnings[0].find("binding with MPOL_PREFERRED anyway"), std::string::npos);
}

TEST(SettleBinding, NoMbindCall) {
  const Settled notRequested =
      settle(mn::chooseMbindMode(mn::BindPolicy{false, false}, 2, kMiB, plenty()), 0,
             mn::BindPolicy{false, false});
  EXPECT_EQ(notRequested.outcome.state, mn::BindState::NotRequested);
  EXPECT_EQ(notRequested.outcome.mode, 0);
  EXPECT_EQ(notRequested.outcome.unboundReason, "binding was not requested");
  EXPECT_TRUE(notRequested.warnings.empty());

  const Settled fellBack = settle(mn::chooseMbindMode(kSoft, 2, kMiB, mn::NumaFacts{}), 0, kSoft);
  EXPECT_EQ(fellBack.outcome.state, mn::BindState::FellBack);
  EXPECT_EQ(fellBack.outcome.unboundReason.rfind("NUMA is not available", 0), 0u);
  ASSERT_EQ(fellBack.warnings.size(), 1u);
  EXPECT_EQ(fellBack.warnings[0].rfind("host memory not bound: NUMA is not available", 0), 0u);
}

TEST(SettleBinding, MbindFailedTheErrnoDecides) {
  const mn::BindDecision strictDecision = mn::chooseMbindMode(kStrict, 2, kMiB, plenty());
  const Settled blocked = settle(strictDecision, EPERM, kStrict);
  EXPECT_EQ(blocked.outcome.state, mn::BindState::BlockedBySeccomp);
  EXPECT_EQ(blocked.outcome.mode, 0);
  ASSERT_EQ(blocked.warnings.size(), 1u);
  EXPECT_EQ(blocked.warnings[0], mn::classifyMbindFailure(EPERM, kStrict, 2).message);
  EXPECT_EQ(blocked.outcome.unboundReason, blocked.warnings[0]);

  try {
    settle(strictDecision, EIO, kStrict);
    ADD_FAILURE() << "a strict binding survived EIO";
  } catch (const mn::NumaBindError& error) {
    EXPECT_STREQ(error.what(), "mbind to node 2 failed: Input/output error (EIO)");
  }

  // A soft failure replaces the decision's warning: one warning, the one that matters.
  const mn::NumaFacts tight = facts(memsamples::NodeMemory::Status::Present, 64 * kMiB, kMiB);
  const Settled soft = settle(mn::chooseMbindMode(kSoft, 2, 2 * kMiB, tight), EIO, kSoft);
  EXPECT_EQ(soft.outcome.state, mn::BindState::FellBack);
  ASSERT_EQ(soft.warnings.size(), 1u);
  EXPECT_EQ(soft.warnings[0],
            "mbind to node 2 failed: Input/output error (EIO); the memory stays unbound");
  // An empty sink is allowed.
  EXPECT_EQ(mn::settleBinding(strictDecision, {EPERM, 0, 0}, {}).state,
            mn::BindState::BlockedBySeccomp);
}

TEST(Advice, FailureTextAndRangeDescription) {
  EXPECT_EQ(mn::adviceFailure(MADV_HUGEPAGE, EINVAL),
            "madvise(MADV_HUGEPAGE) failed: Invalid argument (EINVAL); continuing without it");
  mn::BindOutcome outcome;
  outcome.state = mn::BindState::Bound;
  outcome.mode = MPOL_BIND | MPOL_F_STATIC_NODES;
  outcome.hugePagesAdvised = outcome.dontForkAdvised = true;
  EXPECT_EQ(mn::describeBinding(3 * kMiB, 4 * kMiB, 0, outcome),
            "3.00 MiB (mapped 4.00 MiB) for node 0, bound with MPOL_BIND | MPOL_F_STATIC_NODES; "
            "advice: MADV_HUGEPAGE MADV_DONTFORK");
  outcome.state = mn::BindState::BlockedBySeccomp;
  outcome.hugePagesAdvised = outcome.dontForkAdvised = false;
  EXPECT_EQ(mn::describeBinding(kMiB, kMiB, 1, outcome),
            "1.00 MiB (mapped 1.00 MiB) for node 1, blocked by seccomp (unbound); advice: none");
}

TEST(Errors, ErrnoAndNodeTexts) {
  // (errnoText is Common's: ctest/unit/common/numa_node_info_test.cpp, ErrnoText.TextAndName.)
  EXPECT_EQ(mn::nodeValueText(3), "3");
  EXPECT_EQ(mn::nodeValueText(-1), "-1 (unknown)");
  EXPECT_EQ(mn::nodeValueText(-7), "-1 (unknown)");
}

TEST(SizeHostVectors, RefusesWhatNoGpuCouldChangeBeforeAnyGpuWork) {
  try {
    mn::sizeHostVectors(4 * kMiB, kMiB, 3, mn::BindPolicy{false, true}, -1);
    ADD_FAILURE() << "--strict with --no-bind was accepted";
  } catch (const memsamples::UsageError& error) {
    EXPECT_STREQ(error.what(), "--strict and --no-bind contradict each other");
  }
  // A strict binding to a node that cannot exist: refused, naming the three vectors' size.
  try {
    mn::sizeHostVectors(16 * kMiB, kMiB, 3, kStrict, 1000);
    ADD_FAILURE() << "a strict binding to node 1000 was accepted";
  } catch (const mn::NumaBindError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("cannot bind 48.0 MiB strictly: ", 0), 0u)
        << error.what();
  }
  // Soft, or without --node: the size alone, the node is judged later.
  EXPECT_EQ(mn::sizeHostVectors(16 * kMiB, kMiB, 3, kSoft, 1000), 16 * kMiB);
  EXPECT_EQ(mn::sizeHostVectors(16 * kMiB, kMiB, 3, kStrict, -1), 16 * kMiB);
}

TEST(PlanBinding, DecidesAndLaysOutBeforeAnythingExists) {
  const memsamples::PageSizes pages{4096, 2 * kMiB};
  const mn::BindPlan unbound =
      mn::planBinding(mn::BindPolicy{false, false}, 0, 3 * kMiB, memsamples::NodeQueries{}, pages);
  EXPECT_FALSE(unbound.callMbind);
  EXPECT_TRUE(unbound.mask.words.empty());
  EXPECT_EQ(unbound.bytes, 3 * kMiB);
  EXPECT_EQ(unbound.layout.mappedBytes, 4 * kMiB);
  EXPECT_EQ(unbound.layout.reservedBytes, 6 * kMiB);
  EXPECT_EQ(unbound.pageBytes, 4096u);
  // No node known: a strict plan is an error, with nothing to undo.
  EXPECT_THROW(mn::planBinding(kStrict, -1, kMiB, memsamples::NodeQueries{}, pages),
               mn::NumaBindError);
}
