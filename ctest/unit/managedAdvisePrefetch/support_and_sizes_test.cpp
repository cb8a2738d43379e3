// What the device must support, and how large the run's buffers may be.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <unistd.h>

#include "managed_logic.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace mm = memsamples::managed;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
const std::vector<int> kCounts = {16, 256, 4096};

mm::ManagedSupport h200() {
  mm::ManagedSupport support;
  support.managedMemory = 1;
  support.concurrentManagedAccess = 1;
  support.hostNumaId = 0;
  support.deviceCount = 1;
  return support;
}

template <typename Error, typename Call>
std::string errorOf(Call call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string sizeError(std::optional<std::uint64_t> vectorBytes, std::uint64_t rangeBytes,
                      std::uint64_t pageBytes = 4096) {
  return errorOf<ms::UsageError>([&] { mm::checkSizeOptions(vectorBytes, rangeBytes, pageBytes); });
}

}  // namespace

TEST(ManagedSupport, OneLineForPeople) {
  EXPECT_EQ(mm::describeSupport(h200()),
            "managed memory 1, concurrent managed access 1, pageable memory access 0, direct host "
            "access to GPU-resident managed memory 0, host NUMA id 0");
}

TEST(ManagedSupport, WaivedWithoutManagedMemoryOrConcurrentAccessAnywhere) {
  EXPECT_EQ(mm::waiverReason(h200(), 0), "");
  mm::ManagedSupport support = h200();
  support.managedMemory = 0;
  EXPECT_EQ(mm::waiverReason(support, 3),
            "device 3 cannot allocate managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 0)");
  const std::string noConcurrency =
      " has no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 0, e.g. "
      "Windows or an old GPU): prefetching to a GPU and cuMemPrefetchBatchAsync need it on every "
      "device";
  support = h200();
  support.concurrentManagedAccess = 0;
  support.firstDeviceWithoutConcurrentAccess = 0;
  EXPECT_EQ(mm::waiverReason(support, 2), "device 2" + noConcurrency);  // this device first
  support = h200();
  support.firstDeviceWithoutConcurrentAccess = 1;  // another device of the system lacks it
  EXPECT_EQ(mm::waiverReason(support, 0), "device 1" + noConcurrency);
}

TEST(SizeOptions, CheckedBeforeTheDriverIsAsked) {
  EXPECT_EQ(sizeError(std::nullopt, 64 << 10), "");
  EXPECT_EQ(sizeError(64 * kMiB, 4096), "");
  EXPECT_EQ(sizeError(kMiB + 2, 64 << 10),
            "--size 1048578 is not a multiple of 4 bytes (one element)");
  EXPECT_EQ(sizeError(kMiB, 6000),
            "--range-size 6000 is not a multiple of the host page size (4.00 KiB): the driver "
            "widens every range to whole pages, so the ranges would no longer be separate");
}

// A 64 KiB-page kernel (arm64, ppc64le), faked: a 4 KiB range would share its page with the next.
TEST(SizeOptions, RangesAreWholePagesOfTheHostPageSize) {
  constexpr std::uint64_t k64KiB = 64 << 10;
  EXPECT_EQ(sizeError(std::nullopt, 4096, k64KiB),
            "--range-size 4096 is not a multiple of the host page size (64.0 KiB): the driver "
            "widens every range to whole pages, so the ranges would no longer be separate");
  EXPECT_EQ(sizeError(std::nullopt, 3 * 4096, k64KiB).empty(), false);
  EXPECT_EQ(sizeError(std::nullopt, k64KiB, k64KiB), "");
  EXPECT_EQ(sizeError(std::nullopt, 2 * k64KiB, k64KiB), "");
  EXPECT_THROW(mm::checkSizeOptions(std::nullopt, k64KiB, 0), std::invalid_argument);
  // Without an injected size, the one this machine's kernel uses.
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(mm::hostPageBytes(), page);
  EXPECT_NO_THROW(mm::checkSizeOptions(std::nullopt, page));
  EXPECT_THROW(mm::checkSizeOptions(std::nullopt, page + 4), ms::UsageError);
}

// Which machine the demand-paging figures describe follows the two attributes.
TEST(ManagedSupport, PagingModelNamesTheKindOfMachine) {
  mm::ManagedSupport pcie = h200();
  EXPECT_FALSE(mm::coherentHostAccess(pcie));
  EXPECT_EQ(mm::pagingModel(pcie),
            "GPU behind PCIe, no coherent host access (host page tables 0, direct host access 0, "
            "e.g. x86 + H200): a GPU access to a host-resident page faults and the page migrates");
  mm::ManagedSupport coherent = h200();
  coherent.pageableMemoryAccess = 1;
  coherent.pageableUsesHostPageTables = 1;
  coherent.directManagedAccessFromHost = 1;
  EXPECT_TRUE(mm::coherentHostAccess(coherent));
  const std::string text = mm::pagingModel(coherent);
  EXPECT_EQ(text.rfind("coherent host link (host page tables 1, direct host access 1, e.g. Grace "
                       "Hopper): the GPU may use host-resident pages where they are",
                       0),
            0u)
      << text;
  for (int which = 0; which < 2; ++which) {  // either attribute alone is enough
    mm::ManagedSupport one = h200();
    (which == 0 ? one.pageableUsesHostPageTables : one.directManagedAccessFromHost) = 1;
    EXPECT_TRUE(mm::coherentHostAccess(one)) << which;
  }
}

namespace {
const ms::HostMemory kRoomyHost{2048 * kGiB, "the host (MemAvailable)"};
}  // namespace

TEST(ManagedSizes, DefaultFitsSixVectorsAndTheSpanInFreeMemory) {
  const mm::ManagedSizes sizes =
      mm::planManagedSizes(std::nullopt, kGiB, kMiB, 64 << 10, kCounts, 139 * kGiB, kRoomyHost);
  EXPECT_EQ(sizes.spanBytes, 4096u * 2 * (64 << 10));  // 512 MiB
  EXPECT_EQ(sizes.vectorBytes, kGiB);
  EXPECT_EQ(mm::describeSizes(sizes, 139 * kGiB, 140 * kGiB),
            "Vectors: 1.00 GiB each (3 managed + 3 cuMemAlloc), batch span 512 MiB; 139 GiB of "
            "140 GiB free");
  // Little free memory: the default shrinks so that six vectors take at most 80 % of the rest.
  const mm::ManagedSizes small =
      mm::planManagedSizes(std::nullopt, kGiB, kMiB, 64 << 10, {16}, 1200 * kMiB, kRoomyHost);
  EXPECT_EQ(small.spanBytes, 2 * kMiB);
  EXPECT_LE(6 * small.vectorBytes + small.spanBytes, 1200 * kMiB);
  EXPECT_GE(small.vectorBytes, kMiB);
}

TEST(ManagedSizes, RefusesWhatWouldOversubscribeTheDevice) {
  // The GPU test managedAdvisePrefetch.refusesOversubscription expects this text on the H200.
  const std::string tooLarge = errorOf<ms::UsageError>([] {
    mm::planManagedSizes(1ull << 40, kGiB, kMiB, 64 << 10, kCounts, 139 * kGiB, kRoomyHost);
  });
  EXPECT_EQ(tooLarge.rfind("--size 1.00 TiB needs 6 buffers but the device has only ", 0), 0u)
      << tooLarge;
  EXPECT_EQ(errorOf<ms::UsageError>([] {
              mm::planManagedSizes(kMiB, kGiB, kMiB, 2 * kMiB, {65536}, 139 * kGiB, kRoomyHost);
            }),
            "the batch benchmark span (65536 x 2 x 2.00 MiB = 256 GiB) would take half of the "
            "139 GiB free; lower --range-size or --batch-counts");
  // Too little free memory for six vectors of the smallest size the steps can cut.
  EXPECT_EQ(errorOf<std::runtime_error>([] {
              mm::planManagedSizes(std::nullopt, kGiB, kMiB, 4096, {1}, 4 * kMiB, kRoomyHost);
            }),
            "the device has only 3.99 MiB free, too little for 6 buffers");
  EXPECT_EQ(errorOf<std::runtime_error>([] {
              mm::planManagedSizes(std::nullopt, 512 << 10, kMiB, 4096, {1}, kGiB, kRoomyHost);
            }),
            "only 1.00 GiB of device memory is free: too little for six 1.00 MiB vectors");
  EXPECT_THROW(mm::planManagedSizes(std::nullopt, kGiB, kMiB, 4096, {}, kGiB, kRoomyHost),
               std::invalid_argument);
}

TEST(ManagedSizes, FourVectorsMustFitInHostMemoryToo) {
  // A container with 3 GiB left: A, B and C while their pages are on the host, plus the pinned
  // vector of the prefetch benchmark. The default shrinks to 80 % of that over four vectors.
  const ms::HostMemory container{3 * kGiB, "the host (the memory limit of cgroup /box)"};
  EXPECT_EQ(mm::planManagedSizes(std::nullopt, kGiB, kMiB, 64 << 10, kCounts, 139 * kGiB, container)
                .vectorBytes,
            614 * kMiB);
  EXPECT_EQ(errorOf<ms::UsageError>([&] {
              mm::planManagedSizes(kGiB, kGiB, kMiB, 64 << 10, kCounts, 139 * kGiB, container);
            }),
            "--size 1.00 GiB needs 4 buffers but the host (the memory limit of cgroup /box) has "
            "only 3.00 GiB free; choose at most 768 MiB");
  // Host memory too small for four vectors: refused, naming the limit.
  EXPECT_EQ(errorOf<std::runtime_error>([&] {
              mm::planManagedSizes(std::nullopt, kGiB, kMiB, 64 << 10, kCounts, 139 * kGiB,
                                   {4 * kMiB, container.limitedBy});
            }),
            "the host (the memory limit of cgroup /box) has only 4.00 MiB free, too little for 4 "
            "buffers");
  EXPECT_EQ(errorOf<std::runtime_error>([&] {
              mm::planManagedSizes(std::nullopt, kGiB, 8 * kMiB, 64 << 10, kCounts, 139 * kGiB,
                                   {24 * kMiB, container.limitedBy});
            }),
            "the host (the memory limit of cgroup /box) has only 24.0 MiB free: too little for "
            "four 8.00 MiB vectors");
  // Both too small: the device, whose over-subscription can stall the GPU, is named first.
  const std::string both = errorOf<ms::UsageError>([&] {
    mm::planManagedSizes(1ull << 40, kGiB, kMiB, 64 << 10, kCounts, 139 * kGiB, container);
  });
  EXPECT_EQ(both.rfind("--size 1.00 TiB needs 6 buffers but the device has only ", 0), 0u) << both;
}
