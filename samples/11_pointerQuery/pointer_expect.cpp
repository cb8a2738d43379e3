/**
 * @file pointer_expect.cpp
 * @brief The expected answers of 11_pointerQuery and its table: see pointer_expect.hpp.
 */
#include "pointer_expect.hpp"

#include <cinttypes>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <string>

namespace pointer_query {

namespace {

// The attributes by the names the failure lines use; the table's columns show them in this
// order.
constexpr const char* kType = "MEMORY_TYPE";
constexpr const char* kDevice = "DEVICE_POINTER";
constexpr const char* kHost = "HOST_POINTER";
constexpr const char* kContext = "CONTEXT";
constexpr const char* kManaged = "IS_MANAGED";
constexpr const char* kOrdinal = "DEVICE_ORDINAL";
constexpr const char* kRange = "RANGE_START_ADDR/RANGE_SIZE";
constexpr const char* kMapped = "MAPPED";
constexpr const char* kHandles = "ALLOWED_HANDLE_TYPES";
constexpr const char* kPool = "MEMPOOL_HANDLE";
constexpr const char* kAccess = "ACCESS_FLAGS";
constexpr const char* kIpc = "IS_LEGACY_CUDA_IPC_CAPABLE";
constexpr const char* kClassify = "classify()";

std::string span(CUdeviceptr start, std::size_t size) {
  return "[" + hexText(start) + ", +" + shortBytes(size) + ")";
}

std::uint64_t address(const void* pointer) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(pointer));
}

/// Records the checks of one row.
class RowChecker {
 public:
  void expect(bool ok, const char* attribute, const std::string& expected,
              const std::string& got) {
    ++result_.checks;
    if (!ok)
      result_.mismatches.push_back({attribute, expected, got});
  }
  void expectValue(std::uint64_t got, std::uint64_t expected, const char* attribute) {
    expect(got == expected, attribute, std::to_string(expected), std::to_string(got));
  }
  void expectAddress(std::uint64_t got, std::uint64_t expected, const char* attribute) {
    expect(got == expected, attribute, hexText(expected), hexText(got));
  }
  RowCheck take() { return std::move(result_); }

 private:
  RowCheck result_;
};

/// The range the driver names holds [start, start + bytes).
const char* typeName(std::uint64_t type) {
  if (type == CU_MEMORYTYPE_HOST)
    return "HOST";
  if (type == CU_MEMORYTYPE_DEVICE)
    return "DEVICE";
  if (type == CU_MEMORYTYPE_UNIFIED)
    return "UNIFIED";
  return type == 0 ? "0 (none)" : "unknown";
}

bool holds(const PointerFacts& got, CUdeviceptr start, std::size_t bytes) {
  return got.rangeStart <= start && got.rangeStart + got.rangeSize >= start + bytes;
}

void checkDeviceSide(RowChecker& row, const Known& known, const PointerFacts& got) {
  row.expectValue(got.memoryType, CU_MEMORYTYPE_DEVICE, kType);
  row.expectAddress(got.devicePointer, known.address, kDevice);
  row.expectAddress(address(got.hostPointer), 0, kHost);
  row.expectValue(got.isManaged, 0, kManaged);
  row.expectValue(got.mapped, 1, kMapped);
}

void checkHostSide(RowChecker& row, const Known& known, const PointerFacts& got,
                   const RunFacts& run) {
  row.expectValue(got.memoryType, CU_MEMORYTYPE_HOST, kType);
  row.expectAddress(got.devicePointer, known.devicePointer, kDevice);
  row.expectAddress(address(got.hostPointer), known.address, kHost);
  row.expectAddress(address(got.context), address(run.context), kContext);
  row.expectValue(got.isManaged, 0, kManaged);
  // Where the driver names a range for host memory, it must hold the allocation.
  if (got.rangeStart != 0)
    row.expect(holds(got, known.address, known.bytes), kRange,
               "a range holding " + span(known.address, known.bytes),
               span(got.rangeStart, got.rangeSize));
}

}  // namespace

PointerKind expectedKind(Made made) {
  switch (made) {
    case Made::DeviceAlloc:
      return PointerKind::Device;
    case Made::AllocHost:
    case Made::HostAllocMapped:
    case Made::HostAllocWc:
    case Made::Registered:
      return PointerKind::PinnedHost;
    case Made::Managed:
      return PointerKind::Managed;
    case Made::Vmm:
      return PointerKind::Vmm;
    case Made::Pool:
      return PointerKind::Pool;
    case Made::Malloc:
    case Made::Stack:
    case Made::OnePast:
    case Made::Freed:
      break;
  }
  return PointerKind::NotCuda;
}

bool hasHostFlags(Made made) {
  return made == Made::AllocHost || made == Made::HostAllocMapped || made == Made::HostAllocWc;
}

RowCheck checkAnswers(const Known& known, const PointerFacts& got, const PointerClass& verdict,
                      const RunFacts& run) {
  RowChecker row;
  const bool hostMemoryKnown =
      run.pageableAccess && (known.made == Made::Malloc || known.made == Made::Stack);

  // classify() must name the kind the lesson made. One byte past an allocation may be the
  // start of a neighbour, and where the device reads pageable memory, the driver may know
  // plain host memory too: those are judged below instead.
  if (known.made != Made::OnePast && !hostMemoryKnown) {
    const PointerKind expected = expectedKind(known.made);
    row.expect(verdict.kind == expected, kClassify, kindName(expected), kindName(verdict.kind));
  }

  switch (known.made) {
    case Made::DeviceAlloc:
      checkDeviceSide(row, known, got);
      row.expectAddress(address(got.context), address(run.context), kContext);
      row.expectValue(static_cast<std::uint64_t>(got.deviceOrdinal),
                      static_cast<std::uint64_t>(run.ordinal), kOrdinal);
      row.expect(got.rangeStart == known.address && got.rangeSize >= known.bytes, kRange,
                 "a range from " + hexText(known.address) + " of at least " + shortBytes(known.bytes),
                 span(got.rangeStart, got.rangeSize));
      row.expectAddress(address(got.memPool), 0, kPool);
      row.expectValue(got.legacyIpc, 1, kIpc);
      break;

    case Made::Vmm:
      // The range is the reservation, not the mapping: cuMemGetAddressRange gives the mapping.
      checkDeviceSide(row, known, got);
      row.expect(got.rangeStart == known.reservation && got.rangeSize == known.reservationBytes,
                 kRange, span(known.reservation, known.reservationBytes),
                 span(got.rangeStart, got.rangeSize));
      row.expectValue(got.handleTypes, known.handleTypes, kHandles);
      row.expectAddress(address(got.memPool), 0, kPool);
      row.expectValue(got.legacyIpc, 0, kIpc);
      break;

    case Made::Pool:
      checkDeviceSide(row, known, got);
      row.expectValue(static_cast<std::uint64_t>(got.deviceOrdinal),
                      static_cast<std::uint64_t>(run.ordinal), kOrdinal);
      row.expect(holds(got, known.address, known.bytes), kRange,
                 "a range holding " + span(known.address, known.bytes),
                 span(got.rangeStart, got.rangeSize));
      row.expectAddress(address(got.memPool), address(known.pool), kPool);
      break;

    case Made::Managed:
      // One address for the CPU and every device; the memory type says where the driver
      // placed it, which managed memory changes, so it is shown, not judged.
      row.expectValue(got.isManaged, 1, kManaged);
      row.expectAddress(got.devicePointer, known.address, kDevice);
      row.expectAddress(address(got.hostPointer), known.address, kHost);
      row.expectAddress(address(got.context), address(run.context), kContext);
      row.expectValue(static_cast<std::uint64_t>(got.deviceOrdinal),
                      static_cast<std::uint64_t>(run.ordinal), kOrdinal);
      row.expect(holds(got, known.address, known.bytes), kRange,
                 "a range holding " + span(known.address, known.bytes),
                 span(got.rangeStart, got.rangeSize));
      break;

    case Made::AllocHost:
    case Made::HostAllocMapped:
    case Made::HostAllocWc:
    case Made::Registered:
      checkHostSide(row, known, got, run);
      break;

    case Made::Malloc:
    case Made::Stack:
      if (!hostMemoryKnown) {
        row.expectValue(got.memoryType, 0, kType);
        row.expectValue(got.mapped, 0, kMapped);
      }
      row.expectValue(got.isManaged, 0, kManaged);
      break;

    case Made::Freed:
      row.expectValue(got.mapped, 0, kMapped);
      row.expectValue(got.isManaged, 0, kManaged);
      break;

    case Made::OnePast:
      // known.devicePointer is the start of the allocation this address lies just past: the
      // driver must not count the address as part of it.
      row.expect(!(got.mapped != 0 && got.rangeStart == known.devicePointer), kRange,
                 "not the range of the allocation at " + hexText(known.devicePointer),
                 span(got.rangeStart, got.rangeSize));
      break;
  }
  return row.take();
}

RowCheck checkAddressRange(const Known& known, CUdeviceptr base, std::size_t size) {
  RowChecker row;
  const char* what = "cuMemGetAddressRange";
  const std::string got = span(base, size);
  switch (known.made) {
    case Made::DeviceAlloc:
      row.expect(base == known.address && size >= known.bytes, what,
                 "a range from " + hexText(known.address) + " of at least " + shortBytes(known.bytes),
                 got);
      break;
    case Made::Vmm:
      // cuda.h names this call for the mapped region: the granule mapped at the address, at
      // most the whole reservation (both granules are mapped).
      row.expect(base == known.address && size >= known.bytes &&
                     base + size <= known.reservation + known.reservationBytes,
                 what, "the mapping " + span(known.address, known.bytes) + " or the reservation",
                 got);
      break;
    case Made::Pool:
    case Made::Managed:
      row.expect(base <= known.address && base + size >= known.address + known.bytes, what,
                 "a range holding " + span(known.address, known.bytes), got);
      break;
    default:
      // Any other address the driver knows (a neighbour one byte past an allocation): the range
      // must at least hold the address asked about.
      row.expect(base <= known.address && base + size > known.address, what,
                 "a range holding " + hexText(known.address), got);
      break;
  }
  return row.take();
}

RowCheck checkAccess(const Known& known, std::uint64_t flags) {
  RowChecker row;
  if (known.made == Made::DeviceAlloc || known.made == Made::Vmm || known.made == Made::Pool)
    row.expectValue(flags, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE, kAccess);
  return row.take();
}

RowCheck checkHostFlags(const Known& known, unsigned int flags) {
  RowChecker row;
  row.expect((flags & known.hostFlags) == known.hostFlags, "cuMemHostGetFlags",
             "at least " + hexText(known.hostFlags), hexText(flags));
  return row.take();
}

RowCheck checkAllocationProperties(const Known& known, const CUmemAllocationProp& prop,
                                   int ordinal) {
  RowChecker row;
  row.expectValue(prop.type, CU_MEM_ALLOCATION_TYPE_PINNED, "allocation type");
  row.expectValue(prop.location.type, CU_MEM_LOCATION_TYPE_DEVICE, "location type");
  row.expectValue(static_cast<std::uint64_t>(prop.location.id),
                  static_cast<std::uint64_t>(ordinal), "location id");
  row.expectValue(prop.requestedHandleTypes, known.handleTypes, "requested handle types");
  return row.take();
}

std::string describeFacts(const PointerFacts& got, const PointerClass& verdict) {
  std::ostringstream text;
  text << "    memory type " << typeName(got.memoryType) << ", managed " << got.isManaged
       << ", mapped " << got.mapped << ", device ordinal " << got.deviceOrdinal << '\n'
       << "    device pointer " << hexText(got.devicePointer) << ", host pointer "
       << hexText(address(got.hostPointer)) << ", context " << hexText(address(got.context)) << '\n'
       << "    range " << span(got.rangeStart, got.rangeSize) << ", handle types "
       << hexText(got.handleTypes) << ", pool " << hexText(address(got.memPool)) << ", access "
       << got.accessFlags << ", legacy IPC " << got.legacyIpc << ", SYNC_MEMOPS "
       << got.syncMemops << '\n'
       << "    classify(): " << kindName(verdict.kind) << "; copy with " << verdict.copyWith
       << "; free with " << verdict.freeWith << '\n';
  return text.str();
}

DmaBufPlan dmaBufPlan(Made made, bool dmaBuf, bool hostAllocDmaBuf) {
  switch (made) {
    case Made::DeviceAlloc:
    case Made::Vmm:
      if (dmaBuf)
        return {true, ""};
      return {false, "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0"};
    case Made::AllocHost:
    case Made::HostAllocMapped:
    case Made::HostAllocWc:
      if (hostAllocDmaBuf)
        return {true, ""};
      return {false, "CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED is 0"};
    case Made::Registered:
      return {false, "cuda.h allows cuMemAllocHost and cuMemHostAlloc memory, not registered "
                     "pages"};
    case Made::Managed:
      return {false, "cuda.h allows no managed memory: its pages move"};
    case Made::Pool:
      return {false, "cuda.h allows cuMemAlloc and cuMemAddressReserve ranges; a pool exports "
                     "with cuMemPoolExportToShareableHandle instead"};
    case Made::Malloc:
    case Made::Stack:
    case Made::OnePast:
    case Made::Freed:
      break;
  }
  return {false, "not memory of the driver"};
}

namespace {

/// One column: its heading, its width, the attribute it shows.
struct Column {
  const char* heading;
  int width;
  const char* attribute;
};

constexpr Column kColumns[] = {
    {"type", 5, kType},    {"dev", 6, kDevice},  {"host", 6, kHost},  {"ctx", 6, kContext},
    {"mgd", 4, kManaged},  {"ord", 4, kOrdinal}, {"range", 10, kRange}, {"map", 4, kMapped},
    {"hnd", 5, kHandles},  {"pool", 6, kPool},   {"acc", 4, kAccess}, {"ipc", 4, kIpc},
    {"classify()", 10, kClassify}};

constexpr int kLabelWidth = 24;

std::string typeCell(std::uint64_t type) {
  if (type == 0)
    return "-";
  if (type == CU_MEMORYTYPE_HOST)
    return "host";
  if (type == CU_MEMORYTYPE_DEVICE)
    return "dev";
  return std::to_string(type);
}

/// An address relative to the row's own: "-" none, "=p" the same, "other" another.
std::string sameCell(std::uint64_t value, std::uint64_t own) {
  if (value == 0)
    return "-";
  return value == own ? "=p" : "other";
}

std::string rangeCell(const Known& known, const PointerFacts& got) {
  if (got.rangeStart == 0 && got.rangeSize == 0)
    return "-";
  if (known.address < got.rangeStart)
    return "<" + shortBytes(got.rangeSize);
  return shortBytes(known.address - got.rangeStart) + "/" + shortBytes(got.rangeSize);
}

std::string accessCell(std::uint64_t flags) {
  if (flags == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE)
    return "rw";
  if (flags == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ)
    return "r";
  return flags == 0 ? "-" : std::to_string(flags);
}

}  // namespace

std::string tableHeader() {
  std::ostringstream line;
  line << std::left << std::setw(kLabelWidth) << "pointer";
  for (const Column& column : kColumns)
    line << std::setw(column.width) << column.heading;
  std::string text = line.str();
  return text.substr(0, text.find_last_not_of(' ') + 1);
}

std::string tableRow(const Known& known, const PointerFacts& got, const PointerClass& verdict,
                     const RowCheck& check, const RunFacts& run) {
  const std::string cells[] = {
      typeCell(got.memoryType),
      sameCell(got.devicePointer, known.address),
      sameCell(address(got.hostPointer), known.address),
      got.context == nullptr ? "-" : (got.context == run.context ? "ours" : "other"),
      std::to_string(got.isManaged),
      got.deviceOrdinal < 0 ? "-" : std::to_string(got.deviceOrdinal),
      rangeCell(known, got),
      std::to_string(got.mapped),
      hexText(got.handleTypes),
      got.memPool == nullptr ? "-" : (got.memPool == known.pool ? "ours" : "other"),
      accessCell(got.accessFlags),
      std::to_string(got.legacyIpc),
      kindName(verdict.kind)};

  std::ostringstream line;
  line << std::left << std::setw(kLabelWidth) << known.label;
  std::size_t i = 0;
  for (const Column& column : kColumns) {
    std::string cell = cells[i++];
    for (const memsamples::AttributeMismatch& wrong : check.mismatches)
      if (wrong.attribute == column.attribute)
        cell += '!';
    line << std::setw(column.width) << cell;
  }
  std::string text = line.str();
  return text.substr(0, text.find_last_not_of(' ') + 1);
}

std::string hexText(std::uint64_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << value;
  return text.str();
}

std::string shortBytes(std::uint64_t bytes) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int unit = 0;
  std::uint64_t whole = bytes;
  while (whole >= 1024 && whole % 1024 == 0 && unit < 4) {
    whole /= 1024;
    ++unit;
  }
  if (whole < 1024 || unit == 4)
    return std::to_string(whole) + units[unit];
  // Not a whole number of the next unit: one decimal of it.
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%s", static_cast<double>(whole) / 1024.0, units[unit + 1]);
  return text;
}

}  // namespace pointer_query
