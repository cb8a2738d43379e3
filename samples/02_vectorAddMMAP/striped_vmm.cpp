/**
 * @file striped_vmm.cpp
 * @brief The striped VMM range of 02_vectorAddMMAP. The region marked `core` is the
 *        whole call sequence, in the order it runs: reserve, per stripe create, map and
 *        release, set access, then (after the lesson has used the range) unmap and free
 *        the addresses. Below it: the rollback of a half-built range, the owner, and
 *        the layout arithmetic.
 */
#include "striped_vmm.hpp"

#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "memsamples.hpp"

namespace memsamples::vmm {
namespace {

// What exists while mapStripedRange() builds a range, so that a failed call undoes
// exactly that.
struct Built {
  // The rollback's answers are allocated before anything is built: undoing must not
  // need memory.
  explicit Built(std::size_t stripes) : unmapResults(stripes) {}

  std::size_t stripe = 0;  // the stripe being built (the count, once all are)
  std::size_t mapped = 0;  // stripes [0, mapped) are mapped
  CUmemGenericAllocationHandle handle{};  // the stripe's memory, until cuMemRelease
  bool handleHeld = false;                // created and not yet released
  std::vector<CUresult> unmapResults;     // one per stripe
};

[[noreturn]] void rollBackAndRethrow(CUdeviceptr base, const StripeLayout& layout,
                                     Built& built);

}  // namespace

//! [core]
// N stripes over the backing devices backing[0..D-1], as planStripes() cuts a range:
//
//   base                                                             base + roundedBytes
//   v                                                                                  v
//   +----------------------+----------------------+-- ... --+----------------------+
//   |       stripe 0       |       stripe 1       |         |     stripe N-1       |
//   |    on backing[0]     |  on backing[1 % D]   |         | on backing[(N-1) % D]|
//   +----------------------+----------------------+-- ... --+----------------------+
//   |<--- stripeBytes ---->|<--- stripeBytes ---->|         |<--- stripeBytes ---->|
//   |<------------------- requestedBytes ------------------->|<---- padding ----->|
//
// Every stripe has the same size. The padding is less than stripes x granularity and may
// cover whole stripes (--size 4M --stripes 8: six of the eight 2 MiB stripes); it is
// backed like the rest.
//
CUdeviceptr mapStripedRange(const StripeLayout& layout,
                            const std::vector<int>& mappingDevices) {
  if (layout.stripes.empty() || mappingDevices.empty())
    throw std::invalid_argument(
        "mapStripedRange: the layout has no stripe or no device maps it");
  Built built(layout.stripes.size());  // what exists so far, for the rollback

  // Reserve addresses only: nothing backs them yet. Aligned to the granularity, so that
  // every stripe's offset is a valid cuMemMap address.
  CUdeviceptr base = 0;
  check(cuMemAddressReserve(&base, layout.roundedBytes, layout.granularity, 0, 0),
        "cuMemAddressReserve");

  try {
    // built.stripe is the loop's index, kept in `built` so that the rollback can name
    // the stripe that failed.
    for (; built.stripe < layout.stripes.size(); ++built.stripe) {
      const Stripe& stripe = layout.stripes[built.stripe];

      // Create physical memory on the stripe's device ("PINNED": resident device
      // memory, not page-locked host memory). It has no address yet.
      CUmemAllocationProp properties{};
      properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      properties.location.id = stripe.device;
      check(cuMemCreate(&built.handle, stripe.bytes, &properties, 0), "cuMemCreate");
      built.handleHeld = true;

      // Map it at the stripe's place in the range.
      check(cuMemMap(base + stripe.offset, stripe.bytes, 0, built.handle, 0),
            "cuMemMap");
      ++built.mapped;

      // Release the handle at once: the mapping holds its own reference, so the memory
      // stays until the stripe is unmapped. Nothing else needs to be kept.
      check(cuMemRelease(built.handle), "cuMemRelease");
      built.handleHeld = false;
    }

    // Set access: a mapping is not accessible, not even from the device that holds it,
    // until this call. Access belongs to the mapping, so a device reading a peer's
    // stripe needs this grant, not cuCtxEnablePeerAccess. One call covers every stripe.
    std::vector<CUmemAccessDesc> access(mappingDevices.size());
    for (std::size_t i = 0; i < access.size(); ++i) {
      access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access[i].location.id = mappingDevices[i];
      access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    check(cuMemSetAccess(base, layout.roundedBytes, access.data(), access.size()),
          "cuMemSetAccess");
  } catch (...) {
    // Undo what `built` records, newest first, and let the error go on (below the core).
    rollBackAndRethrow(base, layout, built);
  }
  return base;
}

// Use: base is one ordinary device pointer for every mapping device. The lesson's
// kernel reads A and B and writes C through it (vectorAddMMAP.cpp, step 6), wherever
// each stripe lives.

// Free: one cuMemUnmap over the whole range (it may span several whole mappings, never
// part of one: each stripe is a whole mapping, and its memory goes with its only
// mapping), then the addresses. The second call is made even if the first fails.
void unmapStripedRange(CUdeviceptr base, std::uint64_t roundedBytes) {
  const CUresult unmapped = cuMemUnmap(base, roundedBytes);
  const CUresult freed = cuMemAddressFree(base, roundedBytes);
  check(unmapped, "cuMemUnmap");
  check(freed, "cuMemAddressFree");
}
//! [core]

// ------------------------------------------------------------------------ the rollback
namespace {

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// Undoes a half-built range, newest first. Every call is made even when an earlier one
// fails, so a failed unmap does not keep the handle or the addresses alive; only then
// is the message built (it allocates, and may throw). A CudaError leaves with the
// stripe and what was undone added to its message; any other error (std::bad_alloc)
// leaves as it came.
[[noreturn]] void rollBackAndRethrow(CUdeviceptr base, const StripeLayout& layout,
                                     Built& built) {
  // Stripe by stripe, exactly as each was mapped, so that a failure names its stripe.
  for (std::size_t i = built.mapped; i-- > 0;)
    built.unmapResults[i] =
        cuMemUnmap(base + layout.stripes[i].offset, layout.stripes[i].bytes);
  // A handle created but not yet released (its cuMemMap or its cuMemRelease failed) is
  // released here: until a release succeeds, it keeps its memory alive.
  const CUresult released = built.handleHeld ? cuMemRelease(built.handle) : CUDA_SUCCESS;
  const CUresult freed = cuMemAddressFree(base, layout.roundedBytes);
  try {
    throw;  // the error mapStripedRange() caught, rethrown to read its type
  } catch (const CudaError& error) {
    std::size_t unmapped = 0;
    std::string problems;  // the undo calls that failed, in the order they were made
    for (std::size_t i = 0; i < built.mapped; ++i) {
      if (built.unmapResults[i] == CUDA_SUCCESS)
        ++unmapped;
      else
        problems += "; cuMemUnmap of stripe " + std::to_string(i) + ": " +
                    describeResult(built.unmapResults[i]);
    }
    if (released != CUDA_SUCCESS)
      problems += "; cuMemRelease: " + describeResult(released);
    if (freed != CUDA_SUCCESS)
      problems += "; cuMemAddressFree: " + describeResult(freed);
    std::vector<std::string> done;
    if (unmapped > 0)
      done.push_back(plural(unmapped, "stripe", "stripes") + " unmapped");
    if (built.handleHeld && released == CUDA_SUCCESS)
      done.push_back("1 handle released");
    if (freed == CUDA_SUCCESS)
      done.push_back("address range freed");

    std::string message = error.what();
    if (built.stripe < layout.stripes.size()) {
      message += " (stripe " + std::to_string(built.stripe) + " of " +
                 std::to_string(layout.stripes.size()) + ", on device " +
                 std::to_string(layout.stripes[built.stripe].device) + ")";
    }
    message += "; rolled back: ";
    for (std::size_t i = 0; i < done.size(); ++i)
      message += (i > 0 ? ", " : "") + done[i];
    message += done.empty() ? "nothing" : "";
    throw CudaError(
        error.result(),
        message + (problems.empty() ? "" : "; rollback problems") + problems);
  }
}

}  // namespace

// --------------------------------------------------------------------------- the owner

StripedVmmRange::StripedVmmRange(StripeLayout layout, std::vector<int> mappingDevices)
    : base_(mapStripedRange(layout, mappingDevices)),
      layout_(std::move(layout)),
      mapping_(std::move(mappingDevices)) {}

StripedVmmRange::~StripedVmmRange() {
  if (base_ == 0)
    return;
  const std::uint64_t bytes = layout_.roundedBytes;
  try {
    unmapStripedRange(release(), bytes);
  } catch (...) {
    // A destructor also runs while an earlier error unwinds the stack; a second error
    // from the teardown would only hide that first one.
  }
}

StripedVmmRange::StripedVmmRange(StripedVmmRange&& other) noexcept
    : base_(std::exchange(other.base_, 0)),
      layout_(std::exchange(other.layout_, StripeLayout{})),
      mapping_(std::exchange(other.mapping_, {})) {}

StripedVmmRange& StripedVmmRange::operator=(StripedVmmRange&& other) noexcept {
  if (this != &other) {
    StripedVmmRange old(std::move(*this));  // freed at the end of this scope
    base_ = std::exchange(other.base_, 0);
    layout_ = std::exchange(other.layout_, StripeLayout{});
    mapping_ = std::exchange(other.mapping_, {});
  }
  return *this;
}

CUdeviceptr StripedVmmRange::release() noexcept {
  layout_ = StripeLayout{};
  mapping_.clear();
  return std::exchange(base_, 0);
}

// -------------------------------------------------------------------------- the layout

StripeLayout planStripes(std::uint64_t bytes, std::uint64_t granularity, int stripeCount,
                         const std::vector<int>& backingDevices) {
  // One entry per stripe is kept; this bounds the layout far above any useful count
  // (64 Ki stripes of 2 MiB is 128 GiB) and below a size that could exhaust host memory.
  constexpr int kMaxStripes = 1 << 16;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (bytes == 0)
    throw std::invalid_argument(
        "planStripes: a size of 0 bytes was requested; a range needs at least 1 byte");
  if (granularity == 0)
    throw std::invalid_argument("planStripes: the granularity is 0");
  if (stripeCount < 1 || stripeCount > kMaxStripes) {
    throw std::invalid_argument("planStripes: " + std::to_string(stripeCount) +
                                " stripes requested; the count must be in [1, " +
                                std::to_string(kMaxStripes) + "]");
  }
  if (backingDevices.empty())
    throw std::invalid_argument(
        "planStripes: no backing device to place the stripes on");
  const auto count = static_cast<std::uint64_t>(stripeCount);
  if (granularity > kMax / count) {
    throw std::overflow_error("planStripes: " + std::to_string(stripeCount) +
                              " stripes x " + std::to_string(granularity) +
                              " bytes of granularity does not fit in 64 bits");
  }
  const std::uint64_t unit = count * granularity;
  const std::uint64_t units = bytes / unit + (bytes % unit != 0 ? 1 : 0);
  if (units > kMax / unit) {
    throw std::overflow_error(
        "planStripes: " + std::to_string(bytes) + " bytes rounded up to a multiple of " +
        std::to_string(unit) + " bytes (" + plural(count, "stripe", "stripes") + " x " +
        formatBytes(granularity) + ") does not fit in 64 bits");
  }
  StripeLayout layout;
  layout.requestedBytes = bytes;
  layout.granularity = granularity;
  layout.roundedBytes = units * unit;
  layout.stripeBytes = layout.roundedBytes / count;
  layout.stripes.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    layout.stripes.push_back({backingDevices[i % backingDevices.size()],
                              i * layout.stripeBytes, layout.stripeBytes});
  }
  return layout;
}

std::string describeAccess(unsigned long long flags) {
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
      return "rw";
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
      return "r";
    case CU_MEM_ACCESS_FLAGS_PROT_NONE:
      return "none";
    default:
      return "flags " + std::to_string(flags);
  }
}

}  // namespace memsamples::vmm
