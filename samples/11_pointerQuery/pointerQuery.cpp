/**
 * @file pointerQuery.cpp
 * @brief What is this pointer? One pointer of every kind of memory the course makes, and what
 *        the driver says about each: kind, device, range, and which copy and free calls fit.
 *
 * Every CUDA program meets a pointer it did not allocate: device or host? pinned, registered,
 * managed, a VMM mapping, from a pool? which device, which range? can another process or a NIC
 * use it? The driver knows, and runPointerQuery() asks it about each kind, checking every answer
 * against what the lesson knows, since it made the pointer:
 *
 * 1. Load the driver, pick a device, and create a context.
 * 2. Make one pointer of every kind (pointer_kinds.cpp): **cuMemAlloc**,
 *    **cuMemAllocHost**, **cuMemHostAlloc** (portable, device-mapped, write-combined),
 *    malloc'd pages registered with **cuMemHostRegister**, **cuMemAllocManaged**, a VMM
 *    mapping, a pool block (**cuMemAllocAsync**); and four counter-examples: malloc, the
 *    stack, one byte past an allocation, a freed block.
 * 3. Ask the driver about each pointer: one **cuPointerGetAttributes** call, 13 answers,
 *    every output initialised first.
 * 4. Classify each pointer from the answers alone (classify(), pointer_classify.cpp), and
 *    check every answer its making fixes.
 * 5. Where the driver knows the address: the singular **cuPointerGetAttribute** (and
 *    ACCESS_FLAGS, which the plural call does not answer), **cuMemGetAddressRange**, and
 *    **cuMemHostGetFlags** for allocated pinned memory. The table is printed after step 9.
 * 6. Follow the VMM pointer back to its allocation: **cuMemRetainAllocationHandle**,
 *    **cuMemGetAllocationPropertiesFromHandle**, **cuMemRelease**.
 * 7. Export a dma-buf file descriptor of each kind the device allows
 *    (**cuMemGetHandleForAddressRange**), and close it (pointer_handles.cpp).
 * 8. Turn on SYNC_MEMOPS for the cuMemAlloc block (**cuPointerSetAttribute**) and read it
 *    back (pointer_handles.cpp).
 * 9. Round trip the device's PCI bus id: **cuDeviceGetPCIBusId**, **cuDeviceGetByPCIBusId**
 *    (pointer_handles.cpp).
 * 10. Release every pointer in reverse order, each call checked, and the context last.
 */
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "pointer_classify.hpp"
#include "pointer_expect.hpp"
#include "pointer_handles.hpp"
#include "pointer_kinds.hpp"
#include "support/checklist.hpp"

namespace ms = memsamples;
namespace pq = pointer_query;

namespace {

/// The lesson's own options.
struct Options {
  bool verbose = false;     ///< Every answer of every pointer, and classify()'s advice.
  bool showErrors = false;  ///< The refusals the singular calls give where the plural answers.
};

/// What the driver said about one row, what classify() made of it, and how the check went.
struct Answer {
  pq::PointerFacts facts;     ///< Step 3's answers (and step 5's ACCESS_FLAGS).
  pq::PointerClass verdict;   ///< What classify() made of them.
  pq::RowCheck check;         ///< How step 4's check went.
  CUdeviceptr rangeBase = 0;  ///< Step 5: cuMemGetAddressRange, where asked.
  std::size_t rangeSize = 0;
  unsigned int hostFlags = 0;  ///< Step 5: cuMemHostGetFlags, where asked.
};

void expectSame(ms::Checklist& checks, const std::string& what, std::uint64_t plural,
                std::uint64_t singular);
void record(ms::Checklist& checks, const std::string& what, const pq::RowCheck& row);
void printTable(std::ostream& out, const pq::Specimens& made, const std::vector<Answer>& answers,
                const pq::RunFacts& run);
void showRefusals(const pq::Specimens& made, ms::Checklist& checks, std::ostream& out);
void finishReport(const pq::Specimens& made, const std::vector<Answer>& answers,
                  const ms::Checklist& checks, bool verbose, ms::Report& reportTo);

/// The lesson: every kind of pointer, and every question the driver answers about one.
ms::Verdict runPointerQuery(const ms::CommonOptions& common, const Options& options,
                            ms::Report& reportTo) {
  std::ostream& out = reportTo.out();

  // 1. Load the driver, pick a device, and create a context: it owns what step 2 makes.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(common.device);
  pq::RunFacts run;
  run.ordinal = ms::deviceOrdinal(device);
  // Where the device reads pageable memory, the driver may know plain malloc memory too.
  const CUdevice_attribute pageable = CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS;
  run.pageableAccess = ms::deviceAttribute(device, pageable) != 0;
  out << "Device " << run.ordinal << ": " << ms::deviceName(device) << '\n';

  ms::OwnedContext context;
  ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
  run.context = context.get();

  // 2. Make one pointer of every kind, and the counter-examples (pointer_kinds.cpp).
  pq::Specimens made;
  pq::makeSpecimens(made, device, run.ordinal);
  std::vector<Answer> answers(made.rows.size());
  ms::Checklist checks;
  std::ostringstream notes;  // steps 7 to 9 say what they found, printed after the table

  //! [core]
  // Steps 3 and 4 for each pointer in turn (a row the device could not make is skipped).
  for (std::size_t i = 0; i < made.rows.size(); ++i) {
    const pq::Known& known = made.rows[i];
    if (!known.waived.empty())
      continue;

    // 3. Ask the driver about the pointer: one call, 13 answers. Every output starts at
    // "no answer" (PointerQuery): for an address the driver does not know, the call still
    // returns CUDA_SUCCESS, and leaves some outputs as they were.
    pq::PointerQuery query;
    ms::check(cuPointerGetAttributes(pq::PointerQuery::kCount, query.asked, query.answers,
                                     known.address),
              "cuPointerGetAttributes");

    // 4. Classify it from the answers alone, and check every answer that the way the
    // pointer was made fixes: a wrong one is a FAILED line.
    Answer& answer = answers[i];
    answer.facts = query.facts;
    answer.verdict = pq::classify(answer.facts);
    answer.check = pq::checkAnswers(known, answer.facts, answer.verdict, run);
    checks.expectAttributes(known.label, answer.check.mismatches, answer.check.checks);
  }

  // 5. Ask the singular call, cuMemGetAddressRange and cuMemHostGetFlags only about the
  // driver's own memory: about any other address they return an error, not "nothing".
  for (std::size_t i = 0; i < made.rows.size(); ++i) {
    const pq::Known& known = made.rows[i];
    Answer& answer = answers[i];
    pq::PointerFacts& facts = answer.facts;
    if (!known.waived.empty() || answer.verdict.kind == pq::PointerKind::NotCuda)
      continue;

    std::uint64_t type = 0;  // zeroed: the driver writes the value's low bytes
    ms::check(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, known.address),
              "cuPointerGetAttribute");
    expectSame(checks, known.label + ": cuPointerGetAttribute", facts.memoryType, type);

    if (facts.memoryType == CU_MEMORYTYPE_DEVICE) {
      ms::check(cuMemGetAddressRange(&answer.rangeBase, &answer.rangeSize, known.address),
                "cuMemGetAddressRange");
      record(checks, known.label, pq::checkAddressRange(known, answer.rangeBase, answer.rangeSize));
    }
    if (facts.memoryType == CU_MEMORYTYPE_DEVICE && facts.isManaged == 0) {
      // What this context's device may do with it: the plural call's list leaves it out.
      ms::check(cuPointerGetAttribute(&facts.accessFlags, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                                      known.address),
                "cuPointerGetAttribute");
      record(checks, known.label, pq::checkAccess(known, facts.accessFlags));
    }
    if (pq::hasHostFlags(known.made)) {
      ms::check(cuMemHostGetFlags(&answer.hostFlags, reinterpret_cast<void*>(known.address)),
                "cuMemHostGetFlags");
      record(checks, known.label, pq::checkHostFlags(known, answer.hostFlags));
    }
  }

  // 6. Follow the VMM pointer back to its allocation. Step 2 released its handle right
  // after cuMemMap; the mapping kept the memory, and the address finds it again.
  if (const pq::Known* vmm = pq::findRow(made, pq::Made::Vmm)) {
    ms::OwnedAllocationHandle retained;
    ms::check(cuMemRetainAllocationHandle(retained.out(), reinterpret_cast<void*>(vmm->address)),
              "cuMemRetainAllocationHandle");
    CUmemAllocationProp prop = {};
    ms::check(cuMemGetAllocationPropertiesFromHandle(&prop, retained.get()),
              "cuMemGetAllocationPropertiesFromHandle");
    ms::check(cuMemRelease(retained.release()), "cuMemRelease");  // one per retain
    record(checks, "VMM handle", pq::checkAllocationProperties(*vmm, prop, run.ordinal));
  }

  // 7. Export a dma-buf file descriptor of each kind the device allows, and close it.
  pq::exportDmaBufs(made, device, checks, notes);

  // 8. Turn on SYNC_MEMOPS for the cuMemAlloc block, and read it back.
  pq::turnOnSyncMemops(*pq::findRow(made, pq::Made::DeviceAlloc), checks, notes);

  // 9. Round trip the device's PCI bus id.
  pq::roundTripBusId(device, checks, notes);
  //! [core]

  // The table (steps 3 to 5), then what steps 7 to 9 found.
  printTable(out, made, answers, run);
  out << notes.str();

  if (options.showErrors)
    showRefusals(made, checks, out);
  finishReport(made, answers, checks, options.verbose, reportTo);

  // 10. Release every pointer in reverse order, each call checked, and the context last.
  pq::freeSpecimens(made);
  ms::check(cuCtxDestroy(context.release()), "cuCtxDestroy");
  return checks.passed() && checks.checks() > 0 ? ms::Verdict::Pass : ms::Verdict::Fail;
}

/// Step 5: the singular call's answer @p singular must be the plural call's @p plural.
void expectSame(ms::Checklist& checks, const std::string& what, std::uint64_t plural,
                std::uint64_t singular) {
  checks.expect(singular == plural, what, std::to_string(plural), std::to_string(singular));
}

/// Counts one row's checks into @p checks, each mismatch a failure under @p what.
void record(ms::Checklist& checks, const std::string& what, const pq::RowCheck& row) {
  checks.expectAttributes(what, row.mismatches, row.checks);
}

/// The table of step 4: one row per pointer, a waived row with its reason.
void printTable(std::ostream& out, const pq::Specimens& made, const std::vector<Answer>& answers,
                const pq::RunFacts& run) {
  out << pq::tableHeader() << '\n';
  for (std::size_t i = 0; i < made.rows.size(); ++i) {
    const pq::Known& known = made.rows[i];
    if (known.waived.empty())
      out << pq::tableRow(known, answers[i].facts, answers[i].verdict, answers[i].check, run)
          << '\n';
    else
      out << known.label << ": not made (" << known.waived << ")\n";
  }
}

/// `--show-errors`: the singular calls on addresses the driver does not know. Each returns an
/// error where cuPointerGetAttributes returned CUDA_SUCCESS and "nothing"; compute-sanitizer's
/// memcheck counts each as an API error, which is why the default run never makes them.
void showRefusals(const pq::Specimens& made, ms::Checklist& checks, std::ostream& out) {
  const pq::Known* freed = nullptr;
  const pq::Known* plain = nullptr;
  for (const pq::Known& known : made.rows) {
    if (known.made == pq::Made::Freed)
      freed = &known;
    if (known.made == pq::Made::Malloc)
      plain = &known;
  }

  std::uint64_t type = 0;
  const CUresult single = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                freed->address);
  CUdeviceptr base = 0;
  std::size_t size = 0;
  const CUresult range = cuMemGetAddressRange(&base, &size, plain->address);
  unsigned int flags = 0;
  const CUresult hostFlags = cuMemHostGetFlags(&flags, reinterpret_cast<void*>(plain->address));

  out << "Refused, as expected:\n"
      << "  cuPointerGetAttribute(MEMORY_TYPE) of the freed block: " << ms::describeResult(single)
      << "\n  cuMemGetAddressRange of malloc memory: " << ms::describeResult(range)
      << "\n  cuMemHostGetFlags of malloc memory: " << ms::describeResult(hostFlags) << '\n';
  checks.expect(single != CUDA_SUCCESS, "--show-errors: singular call on a freed block",
                "an error", ms::describeResult(single));
  checks.expect(range != CUDA_SUCCESS, "--show-errors: cuMemGetAddressRange of malloc memory",
                "an error", ms::describeResult(range));
  checks.expect(hostFlags != CUDA_SUCCESS, "--show-errors: cuMemHostGetFlags of malloc memory",
                "an error", ms::describeResult(hostFlags));
}

/// The details (`--verbose`), the JSON rows, the FAILED lines and the count of checks.
void finishReport(const pq::Specimens& made, const std::vector<Answer>& answers,
                  const ms::Checklist& checks, bool verbose, ms::Report& reportTo) {
  std::ostream& out = reportTo.out();
  ms::JsonArray rows;
  for (std::size_t i = 0; i < made.rows.size(); ++i) {
    const pq::Known& known = made.rows[i];
    const Answer& answer = answers[i];
    ms::JsonObject row;
    row.set("pointer", known.label);
    if (!known.waived.empty()) {
      row.set("waived", known.waived);
      rows.addRaw(row.dump());
      continue;
    }
    if (verbose) {
      out << known.label << ":\n" << pq::describeFacts(answer.facts, answer.verdict);
      if (answer.rangeSize != 0)
        out << "    cuMemGetAddressRange: " << pq::hexText(answer.rangeBase) << ", "
            << pq::shortBytes(answer.rangeSize) << '\n';
      if (pq::hasHostFlags(known.made))
        out << "    cuMemHostGetFlags: " << pq::hexText(answer.hostFlags) << '\n';
    }
    row.set("memory_type", static_cast<std::uint64_t>(answer.facts.memoryType));
    row.set("is_managed", answer.facts.isManaged != 0);
    row.set("device_ordinal", answer.facts.deviceOrdinal);
    row.set("range_size", static_cast<std::uint64_t>(answer.facts.rangeSize));
    row.set("mapped", answer.facts.mapped != 0);
    row.set("handle_types", static_cast<std::uint64_t>(answer.facts.handleTypes));
    row.set("has_pool", answer.facts.memPool != nullptr);
    row.set("access_flags", static_cast<std::uint64_t>(answer.facts.accessFlags));
    row.set("legacy_ipc", answer.facts.legacyIpc != 0);
    row.set("kind", pq::kindName(answer.verdict.kind));
    row.set("copy_with", answer.verdict.copyWith);
    row.set("free_with", answer.verdict.freeWith);
    row.set("address_range_size", static_cast<std::uint64_t>(answer.rangeSize));
    row.set("host_flags", static_cast<std::uint64_t>(answer.hostFlags));
    row.set("failed_checks", static_cast<std::uint64_t>(answer.check.mismatches.size()));
    rows.addRaw(row.dump());
  }
  reportTo.json().set("pointers", rows);
  reportTo.json().set("checks", static_cast<std::uint64_t>(checks.checks()));
  reportTo.json().set("failed", static_cast<std::uint64_t>(checks.failures().size()));

  for (const std::string& failure : checks.failures())
    out << "FAILED: " << failure << '\n';
  out << "Checks: " << checks.checks() << ", failed: " << checks.failures().size() << '\n';
}

}  // namespace

/// Parses the options and hands the lesson to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  ms::CommonOptions common;
  Options options;
  ms::CommandLine commandLine(
      "pointerQuery",
      "Makes one pointer of every kind of CUDA memory and asks the driver what each is: "
      "kind, device, range, and which copy and free calls fit; every answer is checked.");
  commandLine.addCommonOptions(common, /*timed=*/false);
  commandLine.addFlag("verbose", "print every answer of every pointer, and the calls that fit it",
                      options.verbose);
  commandLine.addFlag("show-errors",
                      "also show the errors the singular calls return for addresses the driver "
                      "does not know (compute-sanitizer counts them as API errors)",
                      options.showErrors);
  return ms::runSample(commandLine, common, argc, argv, [&](ms::Report& report) {
    return runPointerQuery(common, options, report);
  });
}
