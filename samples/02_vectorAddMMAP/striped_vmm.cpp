/**
 * @file striped_vmm.cpp
 * @brief The striped VMM range of 02_vectorAddMMAP. The region marked `core-b` is the
 *        allocator that the lesson's core (vectorAddMMAP.cpp) calls, every driver call in the
 *        order it runs: mapStripedRange() asks the granularity, reserves the addresses,
 *        creates, maps and releases each stripe and sets access; unmapStripedRange() unmaps
 *        and frees the addresses once the lesson has used the range. Below it: the rollback
 *        of a half-built range, the owner, and the layout arithmetic.
 */
#include "striped_vmm.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "memsamples.hpp"
#include "striped_rollback.hpp"  // Rollback and its check(); defined below core-b
#include "support/devices.hpp"   // allocationGranularity

namespace memsamples::vmm {

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
// backed like the rest. (The README shows this as docs/images/02_vectorAddMMAP.svg.)
//
//! [core-b]
StripedRange mapStripedRange(std::uint64_t bytes, int stripeCount,
                             const std::vector<int>& backingDevices,
                             const std::vector<int>& mappingDevices) {
  CUmemAllocationProp properties{};
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;  // resident memory of device location.id

  // Granularity: every size and address below must be a multiple of it on every device
  // involved, so take the largest. MINIMUM is what the calls accept, RECOMMENDED what performs
  // best; a range too small to give each stripe a whole recommended unit uses the minimum.
  Granularities granularities;  // the largest minimum and recommended of all the devices
  for (const int device : backingAndMapping(backingDevices, mappingDevices)) {  // both lists
    properties.location.id = device;
    std::size_t minimum = 0;
    std::size_t recommended = 0;
    check(cuMemGetAllocationGranularity(&minimum, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity");
    check(cuMemGetAllocationGranularity(&recommended, &properties,
                                        CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
          "cuMemGetAllocationGranularity");
    granularities.minimum = std::max<std::uint64_t>(granularities.minimum, minimum);
    granularities.recommended = std::max<std::uint64_t>(granularities.recommended, recommended);
  }

  // Equal stripes, round robin over the backing devices (arithmetic only): roundedBytes = the
  // size rounded up to a multiple of stripes x granularity; stripe i holds stripeBytes =
  // roundedBytes / stripes at offset i x stripeBytes, on backing device i % backing count.
  StripeLayout layout = planStripes(bytes, granularities, stripeCount, backingDevices);

  // `rollback` checks the calls that build the range: if one fails, it undoes what the calls
  // before it made and says so (its code follows this function); after cuMemSetAccess, nothing.
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle{};
  Rollback rollback(layout, base, handle);

  // Reserve: addresses only, nothing behind them yet.
  rollback.check(cuMemAddressReserve(&base, layout.roundedBytes, layout.granularity, 0, 0),
                 "cuMemAddressReserve");

  for (const Stripe& stripe : layout.stripes) {
    // Create: physical memory on the stripe's device, with no address yet.
    properties.location.id = stripe.device;
    rollback.check(cuMemCreate(&handle, stripe.bytes, &properties, 0), "cuMemCreate");

    // Map it at the stripe's place in the range.
    rollback.check(cuMemMap(base + stripe.offset, stripe.bytes, 0, handle, 0), "cuMemMap");

    // Release the handle now: the mapping keeps the memory until it is unmapped.
    rollback.check(cuMemRelease(handle), "cuMemRelease");
  }

  // Set access: until now no device may touch the range, not even one holding a stripe.
  std::vector<CUmemAccessDesc> access(mappingDevices.size());
  for (std::size_t i = 0; i < access.size(); ++i) {
    access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[i].location.id = mappingDevices[i];
    access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  rollback.check(cuMemSetAccess(base, layout.roundedBytes, access.data(), access.size()),
                 "cuMemSetAccess");

  return {base, std::move(layout)};
}
//! [core-b]

// Free: one cuMemUnmap over every stripe (it may span several whole mappings, never part of
// one), then the addresses, freed even if the unmap failed. The lesson makes the same two calls
// in its core; the owner's destructor, 06 and the measurement call this.
void unmapStripedRange(CUdeviceptr base, std::uint64_t roundedBytes) {
  const CUresult unmapped = cuMemUnmap(base, roundedBytes);
  const CUresult freed = cuMemAddressFree(base, roundedBytes);
  check(unmapped, "cuMemUnmap");
  check(freed, "cuMemAddressFree");
}

// ------------------------------------------------------------------------ the rollback
namespace {

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

}  // namespace

std::vector<int> backingAndMapping(const std::vector<int>& backingDevices,
                                   const std::vector<int>& mappingDevices) {
  if (backingDevices.empty() || mappingDevices.empty()) {
    throw std::invalid_argument(
        "mapStripedRange: no backing device holds the range or no device maps it");
  }
  std::vector<int> devices = backingDevices;
  devices.insert(devices.end(), mappingDevices.begin(), mappingDevices.end());
  return devices;
}

/// What one undo did: the answers of its calls, and what was recorded when it began.
struct Rollback::Undone {
  std::size_t mapped = 0;             ///< Stripes it tried to unmap: [0, mapped).
  bool held = false;                  ///< Whether it released a handle.
  CUresult released = CUDA_SUCCESS;   ///< cuMemRelease's answer, when it released a handle.
  CUresult freed = CUDA_SUCCESS;      ///< cuMemAddressFree's answer.
};

Rollback::Rollback(const StripeLayout& layout, const CUdeviceptr& base,
                   const CUmemGenericAllocationHandle& handle)
    : layout_(layout),
      base_(base),
      handle_(handle),
      unmapResults_(layout.stripes.size()) {}

Rollback::~Rollback() {
  if (reserved_ && !whole_)
    (void)undo();
}

void Rollback::check(CUresult result, const char* call, const char* file, int line) {
  if (result != CUDA_SUCCESS)
    fail(result, call, file, line);
  succeeded(call);
}

// The build's order: the reservation; per stripe create, map, release; the access.
const char* Rollback::nextCall() const noexcept {
  if (whole_)
    return nullptr;
  if (!reserved_)
    return "cuMemAddressReserve";
  if (holding_)
    return mapped_ < created_ ? "cuMemMap" : "cuMemRelease";
  return created_ < layout_.stripes.size() ? "cuMemCreate" : "cuMemSetAccess";
}

void Rollback::succeeded(const char* call) {
  const char* const expected = nextCall();
  if (expected == nullptr || std::string_view(call) != expected) {
    (void)undo();
    throw std::logic_error(std::string("mapStripedRange: ") + call + " succeeded where " +
                           (expected != nullptr ? expected : "no further call") +
                           " was due; the rollback does not know this order");
  }
  if (!reserved_) {
    reserved_ = true;
  } else if (!holding_ && created_ < layout_.stripes.size()) {
    ++created_;  // cuMemCreate
    holding_ = true;
  } else if (holding_ && mapped_ < created_) {
    ++mapped_;  // cuMemMap: stripes are mapped in address order
  } else if (holding_) {
    holding_ = false;  // cuMemRelease: the mapping keeps the memory
  } else {
    whole_ = true;  // cuMemSetAccess
  }
}

// Stripe by stripe, exactly as each was mapped (newest first), so that a failure names its
// stripe; then a handle created but not yet released (its cuMemMap or its cuMemRelease
// failed), which keeps its memory alive until a release succeeds; then the addresses. Every
// call is made even when an earlier one fails. Afterwards nothing exists, so a second undo does
// nothing.
Rollback::Undone Rollback::undo() noexcept {
  Undone undone;
  if (!reserved_)
    return undone;  // nothing exists
  undone.mapped = mapped_;
  undone.held = holding_;
  for (std::size_t i = mapped_; i-- > 0;)
    unmapResults_[i] = cuMemUnmap(base_ + layout_.stripes[i].offset, layout_.stripes[i].bytes);
  if (holding_)
    undone.released = cuMemRelease(handle_);
  undone.freed = cuMemAddressFree(base_, layout_.roundedBytes);
  reserved_ = false;
  mapped_ = 0;
  holding_ = false;
  return undone;
}

void Rollback::fail(CUresult result, const char* call, const char* file, int line) {
  // A failed reservation comes before anything exists: there is nothing to undo or to say.
  if (!reserved_)
    memsamples::check(result, call, file, line);

  // The stripe being built: the newest handle's while it is held, else the next one's (its
  // cuMemCreate failed). When every stripe was built, cuMemSetAccess failed: no stripe.
  const std::size_t stripe = holding_ ? created_ - 1 : created_;
  const Undone undone = undo();

  // Only now is the message built: it allocates, and may throw.
  std::string message = formatCallFailure(call, file, line, describeResult(result));
  if (stripe < layout_.stripes.size()) {
    message += " (stripe " + std::to_string(stripe) + " of " +
               std::to_string(layout_.stripes.size()) + ", on device " +
               std::to_string(layout_.stripes[stripe].device) + ")";
  }
  std::size_t unmapped = 0;
  std::string problems;  // the undo calls that failed, in the order of the stripes
  for (std::size_t i = 0; i < undone.mapped; ++i) {
    if (unmapResults_[i] == CUDA_SUCCESS)
      ++unmapped;
    else
      problems += "; cuMemUnmap of stripe " + std::to_string(i) + ": " +
                  describeResult(unmapResults_[i]);
  }
  if (undone.released != CUDA_SUCCESS)
    problems += "; cuMemRelease: " + describeResult(undone.released);
  if (undone.freed != CUDA_SUCCESS)
    problems += "; cuMemAddressFree: " + describeResult(undone.freed);

  std::vector<std::string> done;
  if (unmapped > 0)
    done.push_back(plural(unmapped, "stripe", "stripes") + " unmapped");
  if (undone.held && undone.released == CUDA_SUCCESS)
    done.push_back("1 handle released");
  if (undone.freed == CUDA_SUCCESS)
    done.push_back("address range freed");
  message += "; rolled back: ";
  for (std::size_t i = 0; i < done.size(); ++i)
    message += (i > 0 ? ", " : "") + done[i];
  message += done.empty() ? "nothing" : "";
  if (!problems.empty())
    message += "; rollback problems" + problems;
  throw CudaError(result, message);
}

// --------------------------------------------------------------------------- the owner

StripedVmmRange::StripedVmmRange(std::uint64_t bytes, int stripeCount,
                                 const std::vector<int>& backingDevices,
                                 std::vector<int> mappingDevices)
    : range_(mapStripedRange(bytes, stripeCount, backingDevices, mappingDevices)),
      mapping_(std::move(mappingDevices)) {}

StripedVmmRange::~StripedVmmRange() {
  if (range_.base == 0)
    return;
  try {
    unmapStripedRange(range_.base, range_.layout.roundedBytes);
  } catch (...) {
    // A destructor also runs while an earlier error unwinds the stack; a second error
    // from the teardown would only hide that first one.
  }
}

StripedVmmRange::StripedVmmRange(StripedVmmRange&& other) noexcept
    : range_(std::exchange(other.range_, StripedRange{})),
      mapping_(std::exchange(other.mapping_, {})) {}

StripedVmmRange& StripedVmmRange::operator=(StripedVmmRange&& other) noexcept {
  if (this != &other) {
    StripedVmmRange old(std::move(*this));  // freed at the end of this scope
    range_ = std::exchange(other.range_, StripedRange{});
    mapping_ = std::exchange(other.mapping_, {});
  }
  return *this;
}

CUdeviceptr StripedVmmRange::release() noexcept {
  mapping_.clear();
  return std::exchange(range_, StripedRange{}).base;
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

bool recommendedGranularityFits(const Granularities& granularities, std::uint64_t bytes,
                                int stripeCount) {
  if (granularities.minimum == 0)
    throw std::invalid_argument("recommendedGranularityFits: the minimum granularity is 0");
  if (stripeCount < 1) {
    throw std::invalid_argument("recommendedGranularityFits: " + std::to_string(stripeCount) +
                                " stripes; at least 1 is needed");
  }
  const auto count = static_cast<std::uint64_t>(stripeCount);
  const std::uint64_t perStripe = bytes / count + (bytes % count != 0 ? 1 : 0);
  return allocationGranularity(perStripe, granularities.minimum, granularities.recommended) ==
         granularities.recommended;
}

StripeLayout planStripes(std::uint64_t bytes, const Granularities& granularities, int stripeCount,
                         const std::vector<int>& backingDevices) {
  const bool recommended = recommendedGranularityFits(granularities, bytes, stripeCount);
  return planStripes(bytes, recommended ? granularities.recommended : granularities.minimum,
                     stripeCount, backingDevices);
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
