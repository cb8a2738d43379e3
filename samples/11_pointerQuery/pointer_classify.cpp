/**
 * @file pointer_classify.cpp
 * @brief classify() and classifyPointer(): see pointer_classify.hpp.
 */
#include "pointer_classify.hpp"

#include "memsamples.hpp"

namespace ms = memsamples;

namespace pointer_query {

const char* kindName(PointerKind kind) {
  switch (kind) {
    case PointerKind::Device:
      return "device";
    case PointerKind::Pool:
      return "pool";
    case PointerKind::Vmm:
      return "vmm";
    case PointerKind::Managed:
      return "managed";
    case PointerKind::PinnedHost:
      return "pinned";
    case PointerKind::NotCuda:
      break;
  }
  return "not CUDA";
}

namespace {

//! [classify]
/// The kind alone, from the answers that tell the kinds apart, in the order that decides.
PointerKind kindOf(const PointerFacts& facts) {
  // An address the driver does not know has no memory type. A device address it still tracks
  // but that nothing backs any more (freed, or an unmapped part of a VMM reservation) says
  // MAPPED = 0: nothing may use it either.
  if (facts.memoryType == 0)
    return PointerKind::NotCuda;
  if (facts.isManaged != 0)
    return PointerKind::Managed;
  if (facts.memoryType == CU_MEMORYTYPE_HOST)
    return PointerKind::PinnedHost;
  if (facts.mapped == 0)
    return PointerKind::NotCuda;

  // Device memory: a pool names itself. Of the rest, cuMemAlloc memory can be shared with the
  // legacy cuIpcGetMemHandle; a VMM mapping cannot (it is exported with
  // cuMemExportToShareableHandle instead).
  if (facts.memPool != nullptr)
    return PointerKind::Pool;
  if (facts.legacyIpc != 0)
    return PointerKind::Device;
  return PointerKind::Vmm;
}
//! [classify]

}  // namespace

PointerClass classify(const PointerFacts& facts) {
  PointerClass result;
  result.kind = kindOf(facts);
  if (result.kind != PointerKind::NotCuda) {
    result.device = facts.deviceOrdinal;
    result.rangeStart = facts.rangeStart;
    result.rangeSize = facts.rangeSize;
  }

  switch (result.kind) {
    case PointerKind::Device:
      result.copyWith = "cuMemcpyHtoD/DtoH/DtoD (or their Async forms)";
      result.freeWith = "cuMemFree";
      break;
    case PointerKind::Pool:
      result.copyWith = "cuMemcpy*Async on a stream ordered after the allocation";
      result.freeWith = "cuMemFreeAsync on a stream";
      break;
    case PointerKind::Vmm:
      result.copyWith = "cuMemcpyHtoD/DtoH/DtoD, within the mapped part of the range";
      result.freeWith = "cuMemUnmap, cuMemRelease of its handle, cuMemAddressFree";
      break;
    case PointerKind::Managed:
      result.copyWith = "cuMemcpy (any direction), or use it in place; cuMemPrefetchAsync moves it";
      result.freeWith = "cuMemFree";
      break;
    case PointerKind::PinnedHost:
      result.copyWith = "cuMemcpyHtoDAsync/DtoHAsync (truly asynchronous), or a kernel using "
                        "its device pointer";
      result.freeWith = "cuMemFreeHost if allocated (cuMemAllocHost, cuMemHostAlloc), "
                        "cuMemHostUnregister if registered";
      break;
    case PointerKind::NotCuda:
      result.copyWith = "cuMemcpyHtoD/DtoH from pageable memory (staged, not asynchronous); "
                        "nothing, if it was freed";
      result.freeWith = "not a CUDA call (free, delete), or nothing: it may be freed already";
      break;
  }
  return result;
}

PointerFacts askDriver(CUdeviceptr address) {
  PointerQuery query;
  ms::check(cuPointerGetAttributes(PointerQuery::kCount, query.asked, query.answers, address),
            "cuPointerGetAttributes");
  return query.facts;
}

PointerClass classifyPointer(CUdeviceptr address) {
  return classify(askDriver(address));
}

}  // namespace pointer_query
