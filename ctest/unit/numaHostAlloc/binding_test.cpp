// NumaBoundHostRange on the real kernel: mbind before first touch, the policy the kernel
// recorded, where the pages landed, the madvise flags, fallbacks with exactly one warning, and
// ownership (move, unmap).
#include <gtest/gtest.h>
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>

#include "memsamples.hpp"
#include "numa_binding.hpp"
#include "numa_test_support.hpp"

namespace mn = memsamples::numa;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

/// Collects the warnings a range reports.
struct Warnings {
  std::vector<std::string> lines;
  mn::WarningSink sink() {
    return [this](const std::string& text) { lines.push_back(text); };
  }
};

std::size_t pageSize() {
  return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

/// The VmFlags line of /proc/self/smaps for the mapping that contains @p address.
std::string vmFlagsOf(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    std::uintptr_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = start <= target && target < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0)
      return line.substr(8) + " ";
  }
  return {};
}

bool hasFlag(const std::string& flags, const char* flag) {
  return flags.find(std::string(" ") + flag + " ") != std::string::npos;
}

/// True when [address, address + bytes) is not mapped in this process (mincore says ENOMEM).
bool unmapped(const void* address, std::size_t bytes) {
  std::vector<unsigned char> residency((bytes + pageSize() - 1) / pageSize());
  return mincore(const_cast<void*>(address), bytes, residency.data()) != 0 && errno == ENOMEM;
}

/// Writes a pattern into the range and reads it back: the memory is usable.
bool usable(const mn::NumaBoundHostRange& range) {
  auto* bytes = static_cast<unsigned char*>(range.data());
  for (std::size_t i = 0; i < range.size(); i += 997)
    bytes[i] = static_cast<unsigned char>(i);
  for (std::size_t i = 0; i < range.size(); i += 997) {
    if (bytes[i] != static_cast<unsigned char>(i))
      return false;
  }
  return true;
}

class RealBinding : public testing::Test {
 protected:
  void SetUp() override {
    const std::string why = numatest::whyRealBindingIsUnavailable();
    if (!why.empty())
      GTEST_SKIP() << why;
  }
};

}  // namespace

TEST_F(RealBinding, StrictBindToNode0) {
  Warnings warnings;
  mn::NumaBoundHostRange range(kMiB, 0, mn::BindPolicy{true, true}, warnings.sink());
  EXPECT_TRUE(warnings.lines.empty());
  EXPECT_EQ(range.outcome().state, mn::BindState::Bound);
  EXPECT_EQ(range.outcome().mode, MPOL_BIND | mn::kMpolStaticNodes);
  EXPECT_TRUE(range.outcome().unboundReason.empty());

  // The kernel recorded the policy on the mapping itself.
  int mode = -1;
  unsigned long mask[16] = {};
  ASSERT_EQ(get_mempolicy(&mode, mask, sizeof mask * 8, range.data(), MPOL_F_ADDR), 0)
      << std::strerror(errno);
  EXPECT_EQ(mode, MPOL_BIND | mn::kMpolStaticNodes);
  EXPECT_EQ(mask[0], 1ul);

  // Bound before first touch: no page exists yet.
  const memsamples::PagePlacement before = range.placement();
  ASSERT_TRUE(before.known()) << before.error;
  EXPECT_EQ(before.pages, kMiB / pageSize());
  EXPECT_EQ(before.notPresent, before.pages);

  range.firstTouch();  // strict: verifies, throws on a stray page
  const memsamples::PagePlacement after = range.placement();
  EXPECT_TRUE(after.allOn(0)) << after.summary();
  EXPECT_EQ(after.method, "move_pages");
  EXPECT_EQ(after.notPresent, 0u);
  EXPECT_TRUE(usable(range));
}

TEST_F(RealBinding, SoftBindToNode0) {
  Warnings warnings;
  mn::NumaBoundHostRange range(3 * kMiB + 5, 0, mn::BindPolicy{}, warnings.sink());
  EXPECT_TRUE(warnings.lines.empty());
  EXPECT_EQ(range.outcome().state, mn::BindState::Bound);
  EXPECT_EQ(range.outcome().mode, MPOL_PREFERRED | mn::kMpolStaticNodes);
  int mode = -1;
  unsigned long mask[16] = {};
  ASSERT_EQ(get_mempolicy(&mode, mask, sizeof mask * 8, range.data(), MPOL_F_ADDR), 0);
  EXPECT_EQ(mode, MPOL_PREFERRED | mn::kMpolStaticNodes);
  range.firstTouch();
  const memsamples::PagePlacement placement = range.placement();
  EXPECT_TRUE(placement.allOn(0)) << placement.summary();
  EXPECT_EQ(placement.pages, range.mappedBytes() / pageSize());
  EXPECT_TRUE(usable(range));
  EXPECT_EQ(mn::describeBinding(range.size(), range.mappedBytes(), 0, range.outcome()),
            "3.00 MiB (mapped 4.00 MiB) for node 0, bound with MPOL_PREFERRED | "
            "MPOL_F_STATIC_NODES; advice: MADV_HUGEPAGE MADV_DONTFORK");
}

TEST_F(RealBinding, HugePageAndDontForkAreBothApplied) {
  Warnings warnings;
  mn::NumaBoundHostRange big(4 * kMiB, 0, mn::BindPolicy{}, warnings.sink());
  const std::size_t huge = memsamples::systemPageSizes().huge;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big.data()) % (huge > 0 ? huge : pageSize()), 0u);
  EXPECT_EQ(big.mappedBytes(), 4 * kMiB);
  EXPECT_TRUE(big.outcome().dontForkAdvised);
  const std::string flags = vmFlagsOf(big.data());
  ASSERT_FALSE(flags.empty());
  EXPECT_TRUE(hasFlag(flags, "dc")) << flags;  // VM_DONTCOPY: MADV_DONTFORK
  if (big.outcome().hugePagesAdvised) {
    EXPECT_TRUE(warnings.lines.empty());
    EXPECT_TRUE(hasFlag(flags, "hg")) << flags;  // VM_HUGEPAGE: MADV_HUGEPAGE
  } else {
    // A kernel without transparent huge pages refuses the advice: one warning, no failure.
    ASSERT_EQ(warnings.lines.size(), 1u);
    EXPECT_EQ(warnings.lines[0].rfind("madvise(MADV_HUGEPAGE) failed: ", 0), 0u);
  }

  Warnings smallWarnings;
  mn::NumaBoundHostRange small(kMiB, 0, mn::BindPolicy{}, smallWarnings.sink());
  EXPECT_TRUE(smallWarnings.lines.empty());
  EXPECT_FALSE(small.outcome().hugePagesAdvised);
  EXPECT_TRUE(small.outcome().dontForkAdvised);
  EXPECT_EQ(small.mappedBytes(), kMiB);
  const std::string smallFlags = vmFlagsOf(small.data());
  EXPECT_TRUE(hasFlag(smallFlags, "dc")) << smallFlags;
  EXPECT_FALSE(hasFlag(smallFlags, "hg")) << smallFlags;
}

TEST_F(RealBinding, DontForkKeepsTheRangeOutOfChildren) {
  mn::NumaBoundHostRange range(kMiB, 0, mn::BindPolicy{}, {});
  range.firstTouch();
  void* plain = mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(plain, MAP_FAILED);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit code: bit 0 = the bound range is missing, bit 1 = the plain mapping is missing.
    _exit((unmapped(range.data(), kMiB) ? 1 : 0) | (unmapped(plain, kMiB) ? 2 : 0));
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  munmap(plain, kMiB);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << "1 = only the MADV_DONTFORK range is absent in the child";
}

TEST_F(RealBinding, StrictBindToANodeThatDoesNotExistIsAnError) {
  Warnings warnings;
  try {
    mn::NumaBoundHostRange range(kMiB, 999, mn::BindPolicy{true, true}, warnings.sink());
    ADD_FAILURE() << "bound to node 999";
  } catch (const mn::NumaBindError& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot bind 1.00 MiB strictly: node 999 does not exist (numa_max_node() is " +
                  std::to_string(numa_max_node()) + ")");
  }
  EXPECT_TRUE(warnings.lines.empty());
}

TEST_F(RealBinding, SoftBindToANodeThatDoesNotExistFallsBackWithOneWarning) {
  Warnings warnings;
  mn::NumaBoundHostRange range(kMiB, 999, mn::BindPolicy{}, warnings.sink());
  ASSERT_EQ(warnings.lines.size(), 1u);
  EXPECT_EQ(warnings.lines[0],
            "host memory not bound: node 999 does not exist (numa_max_node() is " +
                std::to_string(numa_max_node()) +
                "); its pages will land wherever they are first touched");
  EXPECT_EQ(range.outcome().state, mn::BindState::FellBack);
  EXPECT_EQ(range.outcome().mode, 0);
  EXPECT_EQ(range.outcome().unboundReason,
            "node 999 does not exist (numa_max_node() is " + std::to_string(numa_max_node()) + ")");
  int mode = -1;
  unsigned long mask[16] = {};
  ASSERT_EQ(get_mempolicy(&mode, mask, sizeof mask * 8, range.data(), MPOL_F_ADDR), 0);
  EXPECT_EQ(mode, MPOL_DEFAULT);
  range.firstTouch();
  EXPECT_EQ(range.placement().notPresent, 0u);
  EXPECT_TRUE(usable(range));
  EXPECT_EQ(warnings.lines.size(), 1u);  // touching adds none
}

TEST_F(RealBinding, NoBindMeansNoPolicyAndNoWarning) {
  Warnings warnings;
  mn::NumaBoundHostRange range(kMiB, 0, mn::BindPolicy{false, false}, warnings.sink());
  EXPECT_TRUE(warnings.lines.empty());
  EXPECT_EQ(range.outcome().state, mn::BindState::NotRequested);
  EXPECT_EQ(range.outcome().unboundReason, "binding was not requested");
  EXPECT_TRUE(range.outcome().dontForkAdvised);
  int mode = -1;
  unsigned long mask[16] = {};
  ASSERT_EQ(get_mempolicy(&mode, mask, sizeof mask * 8, range.data(), MPOL_F_ADDR), 0);
  EXPECT_EQ(mode, MPOL_DEFAULT);
  EXPECT_TRUE(usable(range));
}

TEST_F(RealBinding, CapacityStrictRefusesSoftWarns) {
  const memsamples::NodeMemory node0 = mn::libnumaNodeMemory()(0);
  ASSERT_EQ(node0.status, memsamples::NodeMemory::Status::Present);
  // More than is free but less than the node has: mapping it (untouched) costs nothing.
  const std::uint64_t margin = node0.totalBytes - node0.freeBytes;
  if (margin < 512 * kMiB)
    GTEST_SKIP() << "node 0 is almost entirely free";
  const auto bytes = static_cast<std::size_t>(node0.freeBytes + margin / 2);

  try {
    mn::NumaBoundHostRange range(bytes, 0, mn::BindPolicy{true, true}, {});
    ADD_FAILURE() << "strict binding accepted more than node 0 has free";
  } catch (const mn::NumaBindError& error) {
    const std::string text = error.what();
    EXPECT_EQ(text.rfind("cannot bind strictly: node 0 has ", 0), 0u) << text;
    EXPECT_NE(text.find(" free, less than the " + memsamples::formatBytes(bytes) + " requested"),
              std::string::npos)
        << text;
  }

  Warnings warnings;
  mn::NumaBoundHostRange range;
  try {
    range = mn::NumaBoundHostRange(bytes, 0, mn::BindPolicy{}, warnings.sink());
  } catch (const mn::NumaBindError& error) {
    // Strict overcommit accounting (vm.overcommit_memory = 2) refuses the mapping itself.
    if (std::string(error.what()).rfind("mmap of ", 0) == 0)
      GTEST_SKIP() << error.what();
    throw;
  }
  EXPECT_EQ(range.outcome().state, mn::BindState::Bound);
  ASSERT_EQ(warnings.lines.size(), 1u);
  EXPECT_NE(warnings.lines[0].find("binding with MPOL_PREFERRED anyway"), std::string::npos)
      << warnings.lines[0];
}

TEST(Binding, ZeroBytesIsRejected) {
  try {
    mn::NumaBoundHostRange range(0, 0, mn::BindPolicy{}, {});
    ADD_FAILURE() << "accepted 0 bytes";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "NumaBoundHostRange: 0 bytes requested");
  }
}

TEST(Binding, MovingTransfersOwnershipAndDestructionUnmaps) {
  // No binding needed to test ownership: this runs everywhere.
  mn::NumaBoundHostRange first(kMiB, 0, mn::BindPolicy{false, false}, {});
  void* const address = first.data();
  ASSERT_NE(address, nullptr);
  EXPECT_FALSE(unmapped(address, kMiB));

  mn::NumaBoundHostRange second(std::move(first));
  EXPECT_EQ(first.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(first.size(), 0u);
  EXPECT_EQ(second.data(), address);
  EXPECT_EQ(second.size(), kMiB);

  {
    mn::NumaBoundHostRange third;
    EXPECT_EQ(third.data(), nullptr);
    third = std::move(second);
    EXPECT_EQ(third.data(), address);
    EXPECT_FALSE(unmapped(address, kMiB));
  }
  EXPECT_TRUE(unmapped(address, kMiB));

  // Move-assigning over a live range unmaps the old one at once (not when the source dies) and
  // leaves the source empty.
  mn::NumaBoundHostRange a(kMiB, 0, mn::BindPolicy{false, false}, {});
  mn::NumaBoundHostRange b(2 * kMiB, 0, mn::BindPolicy{false, false}, {});
  void* const oldA = a.data();
  void* const oldB = b.data();
  a = std::move(b);
  EXPECT_TRUE(unmapped(oldA, kMiB));
  EXPECT_EQ(a.data(), oldB);
  EXPECT_EQ(a.size(), 2 * kMiB);
  EXPECT_FALSE(unmapped(oldB, 2 * kMiB));
  EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.mappedBytes(), 0u);
  // Self-move keeps the range.
  mn::NumaBoundHostRange& alias = a;
  a = std::move(alias);
  EXPECT_EQ(a.data(), oldB);
  EXPECT_FALSE(unmapped(oldB, 2 * kMiB));
}

TEST(Binding, OwnedMappingUnmapsWhatItWasGiven) {
  void* const mapping =
      mmap(nullptr, 2 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  {
    const mn::OwnedMapping owner(mapping, 2 * kMiB);
    EXPECT_FALSE(unmapped(mapping, 2 * kMiB));
  }
  EXPECT_TRUE(unmapped(mapping, 2 * kMiB));
  const mn::OwnedMapping nothing(nullptr, 0);  // owns nothing, unmaps nothing
}

TEST_F(RealBinding, TheLessonsPiecesBindAndCountLikeTheRange) {
  // The sequence numaHostAlloc.cpp writes out: decide, mmap, mbind with nodeMask(), hand the
  // errno to settleBinding(), touch, move_pages into placementFromStatus().
  const mn::BindPolicy strict{true, true};
  const mn::BindDecision decision = mn::chooseMbindMode(strict, 0, kMiB, mn::queryNumaFacts(0));
  ASSERT_TRUE(decision.callMbind) << decision.error;
  void* const mapping =
      mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  const mn::OwnedMapping owner(mapping, kMiB);
  const mn::NodeMask mask = mn::nodeMask(0);
  const int mbindError =
      mbind(mapping, kMiB, decision.mode, mask.words.data(), mask.maxNode, 0) == 0 ? 0 : errno;
  Warnings warnings;
  const mn::BindOutcome outcome = mn::settleBinding(decision, {mbindError, 0, 0}, warnings.sink());
  EXPECT_EQ(mbindError, 0) << std::strerror(mbindError);
  EXPECT_EQ(outcome.state, mn::BindState::Bound);
  EXPECT_TRUE(warnings.lines.empty());
  int mode = -1;
  unsigned long recorded[16] = {};
  ASSERT_EQ(get_mempolicy(&mode, recorded, sizeof recorded * 8, mapping, MPOL_F_ADDR), 0);
  EXPECT_EQ(mode, MPOL_BIND | mn::kMpolStaticNodes);
  EXPECT_EQ(recorded[0], 1ul);

  std::vector<void*> pages = memsamples::pageAddresses(mapping, kMiB);
  std::vector<int> status(pages.size());
  ASSERT_EQ(move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0), 0);
  EXPECT_EQ(memsamples::placementFromStatus(status).notPresent,
            pages.size());  // nothing touched yet
  for (std::size_t offset = 0; offset < kMiB; offset += pageSize())
    static_cast<char*>(mapping)[offset] = 0;
  ASSERT_EQ(move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0), 0);
  const memsamples::PagePlacement touched = memsamples::placementFromStatus(status);
  EXPECT_TRUE(touched.allOn(0)) << touched.summary();
  EXPECT_EQ(mn::strictBindingProblem(touched, 0, outcome.state), "");
  EXPECT_EQ(touched.summary(), memsamples::pagesPerNode(mapping, kMiB).summary());
}

TEST(BoundRangeLayout, FollowsThePageSizesItIsGiven) {
  // An unbound range needs no NUMA: only the layout is under test. A 1 MiB "huge page" stands in
  // for a kernel whose PMD size is not 2 MiB; a real 4 KiB-page kernel can map at 1 MiB.
  const mn::BindPolicy noBind{false, false};
  mn::NumaBoundHostRange range(3 * kMiB + 1, 0, noBind, {},
                               memsamples::PageSizes{pageSize(), kMiB});
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(range.data()) % kMiB, 0u);
  EXPECT_EQ(range.mappedBytes(), 4 * kMiB);
  // Below one huge page: base pages only, nothing rounded up to the huge page.
  mn::NumaBoundHostRange small(kMiB / 2 + 1, 0, noBind, {},
                               memsamples::PageSizes{pageSize(), 4 * kMiB});
  EXPECT_EQ(small.mappedBytes(), kMiB / 2 + pageSize());
  EXPECT_FALSE(small.outcome().hugePagesAdvised);
}
