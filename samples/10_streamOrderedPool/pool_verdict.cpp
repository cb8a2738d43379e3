// 10_streamOrderedPool's checks, goals and verdict (see pool_verdict.hpp).
#include "pool_verdict.hpp"

#include <iomanip>
#include <sstream>

namespace ms = memsamples;

namespace pool_verdict {

void checkPoolLoop(ms::Checklist& checks, const pool_plan::VariantResult& variant,
                   std::uint64_t liveHigh) {
  const std::uint64_t usedHigh = variant.usedHigh.value_or(0);
  const std::uint64_t reservedHigh = variant.reservedHigh.value_or(0);
  const std::uint64_t usedAfter = variant.usedAfter.value_or(0);

  checks.expect(usedHigh >= liveHigh, variant.name + ": used high-water mark",
                "at least the live bytes' " + ms::formatBytes(liveHigh),
                ms::formatBytes(usedHigh));
  checks.expect(usedAfter == 0, variant.name + ": memory in use after the last free", "0 bytes",
                ms::formatBytes(usedAfter));
  checks.expect(reservedHigh >= usedHigh, variant.name + ": reserved high-water mark",
                "at least the used one (" + ms::formatBytes(usedHigh) + ")",
                ms::formatBytes(reservedHigh));
}

void checkTrim(ms::Checklist& checks, const Trim& trim) {
  checks.expect(trim.usedAfter == 0, "step 10: memory in use at the trim", "0 bytes",
                ms::formatBytes(trim.usedAfter));
  checks.expect(trim.reservedAfter <= trim.reservedBefore,
                "step 10: reserved memory after the trim",
                "at most the " + ms::formatBytes(trim.reservedBefore) + " held before",
                ms::formatBytes(trim.reservedAfter));
}

std::string trimLine(const Trim& trim) {
  std::string line = "Trim: " + ms::formatBytes(trim.reservedBefore) +
                     " reserved before cuMemPoolTrimTo(pool, 0), " +
                     ms::formatBytes(trim.reservedAfter) + " after";
  if (trim.reservedAfter == 0)
    return line + " (all given back)";
  return line + " (kept: memory the driver could not safely release, which cuda.h allows)";
}

double speedUp(const pool_plan::VariantResult& reference, const pool_plan::VariantResult& pool) {
  return pool.medianUs > 0 ? reference.medianUs / pool.medianUs : 0;
}

bool goalMet(const Goal& goal, double speedUp, std::uint64_t keepThreshold) {
  return keepThreshold == UINT64_MAX && speedUp >= goal.target;
}

std::string goalLine(const Goal& goal, double speedUp, std::uint64_t keepThreshold) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  out << "Goal (" << goal.loop << "): the pool at threshold max at least "
      << std::setprecision(0) << goal.target << std::setprecision(1)
      << "x faster per pair than cuMemAlloc + cuMemFree: ";
  if (keepThreshold != UINT64_MAX)
    out << "not judged, this run kept " << ms::formatBytes(keepThreshold) << " (" << speedUp
        << "x)";
  else
    out << (goalMet(goal, speedUp, keepThreshold) ? "met" : "not met") << " (" << speedUp
        << "x)";
  return out.str();
}

std::string budgetLine(const BudgetReport& report) {
  std::string line = "Over-budget notifications: ";
  if (!report.registered)
    return line + "cuDeviceRegisterAsyncNotification answered " + report.refusal +
           ", so none could be watched for";
  line += "registered for the whole run; ";
  if (report.overBudget == 0)
    line += "none arrived during this run";
  else
    line += std::to_string(report.overBudget) + " arrived, the largest " +
            ms::formatBytes(report.mostBytesOver) + " over the budget";
  if (report.otherTypes > 0)
    line += "; " + std::to_string(report.otherTypes) + " of another type";
  return line + "; unregistered";
}

ms::JsonObject budgetJson(const BudgetReport& report) {
  ms::JsonObject json;
  json.set("registered", report.registered);
  if (!report.registered)
    json.set("refusal", report.refusal);
  json.set("overBudget", report.overBudget)
      .set("mostBytesOverBudget", report.mostBytesOver)
      .set("otherTypes", report.otherTypes);
  return json;
}

ms::Verdict verdict(const ms::Checklist& checks, std::ostream& out, ms::JsonObject& json) {
  ms::JsonArray failures;
  for (const std::string& failure : checks.failures()) {
    out << "Check failed: " << failure << '\n';
    failures.add(failure);
  }
  out << "Checks: " << checks.checks() << ", failed: " << checks.failures().size() << '\n';
  json.set("checks", static_cast<std::uint64_t>(checks.checks())).set("failures", failures);
  return checks.passed() ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace pool_verdict
