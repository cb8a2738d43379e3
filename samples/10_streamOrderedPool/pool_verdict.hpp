/**
 * @file pool_verdict.hpp
 * @brief How 10_streamOrderedPool turns what it measured into checks and goals, CUDA-free so that
 *        unit tests call it with good and bad measurements: each pool loop's counters, the
 *        trim at the end, the speed-up goals and the verdict.
 */
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "memsamples.hpp"
#include "pool_plan.hpp"
#include "support/checklist.hpp"

namespace pool_verdict {

/**
 * The checks of one pool variant of an allocation loop, from its counters (@p variant's
 * reservedHigh, usedHigh and usedAfter must be set): the pool handed out at least the loop's
 * own high-water mark of live bytes (@p liveHigh), nothing is in use after the last free, and
 * the pool reserved at least what it handed out.
 */
void checkPoolLoop(memsamples::Checklist& checks, const pool_plan::VariantResult& variant,
                   std::uint64_t liveHigh);

/// What the pool held around step 10's cuMemPoolTrimTo(pool, 0), with nothing live.
struct Trim {
  std::uint64_t reservedBefore = 0;  ///< RESERVED_MEM_CURRENT before the trim.
  std::uint64_t reservedAfter = 0;   ///< RESERVED_MEM_CURRENT after it.
  std::uint64_t usedAfter = 0;       ///< USED_MEM_CURRENT after it.
};

/**
 * Step 10's checks: only what cuda.h promises. A trim releases memory "until the pool contains
 * fewer than minBytesToKeep reserved bytes, or there is no more memory that the allocator can
 * safely release", so the pool may keep some: what it kept is reported (trimLine()), not judged.
 * Judged: nothing of the run is in use any more (every block was freed and both streams waited
 * for), and the trim did not make the pool larger.
 */
void checkTrim(memsamples::Checklist& checks, const Trim& trim);

/// "Trim: <before> reserved before cuMemPoolTrimTo(pool, 0), <after> after", and what a
/// remainder means.
std::string trimLine(const Trim& trim);

/// @p reference's median over @p pool's: how many times faster the pool's pair is; 0 when the
/// pool's median is 0 (no pairs).
double speedUp(const pool_plan::VariantResult& reference, const pool_plan::VariantResult& pool);

/// A speed-up goal of the pool over cuMemAlloc + cuMemFree, for one loop.
struct Goal {
  std::string loop;     ///< "same size" or "mix".
  double target = 0;    ///< The goal, e.g. 80 for 80x.
};

/// The same-size loop's goal (issue 34): a pool pair at least 80x faster than cuMemAlloc +
/// cuMemFree of the same size.
constexpr double kSameSizeGoal = 80;
/// The mix's goal: at least 10x, though sizes that change every step cost the pool more.
constexpr double kMixGoal = 10;

/**
 * The goal line of one loop: @p speedUp (cuMemAlloc + cuMemFree's median over the pool's at
 * the keep threshold) against @p goal. The goals were measured with a pool that keeps
 * everything, so they are judged only at @p keepThreshold UINT64_MAX; at another threshold the
 * line says so. Goals are reported, not part of the verdict: a shared GPU or a sanitizer slows
 * the calls without anything being wrong.
 */
std::string goalLine(const Goal& goal, double speedUp, std::uint64_t keepThreshold);

/// True when @p speedUp meets @p goal at @p keepThreshold (see goalLine()).
bool goalMet(const Goal& goal, double speedUp, std::uint64_t keepThreshold);

/// What step 2's watch over the process's device memory budget saw (budget_notice.hpp).
struct BudgetReport {
  bool registered = false;          ///< cuDeviceRegisterAsyncNotification registered the callback.
  std::string refusal;              ///< Otherwise the driver's answer (CUDA_ERROR_NOT_SUPPORTED).
  std::uint64_t overBudget = 0;     ///< Over-budget notifications that arrived.
  std::uint64_t mostBytesOver = 0;  ///< The largest bytesOverBudget among them.
  std::uint64_t otherTypes = 0;     ///< Notifications of a type cuda.h 13.0 lacks.
};

/**
 * "Over-budget notifications: ..." for @p report: registered, and none arrived during the run
 * (said as it is, no more), or how many arrived and the largest excess; or that the driver
 * refused the registration with its answer. Reported, never judged: whether a process goes over
 * its budget depends on the machine, not on the lesson.
 */
std::string budgetLine(const BudgetReport& report);

/// @p report as JSON: registered, refusal (where refused), the counts and the largest excess.
memsamples::JsonObject budgetJson(const BudgetReport& report);

/**
 * The verdict of the run: every failed check printed as "Check failed: ...", then "Checks: N,
 * failed: M"; the JSON gets "checks" and "failures". @return Pass when none failed.
 */
memsamples::Verdict verdict(const memsamples::Checklist& checks, std::ostream& out,
                            memsamples::JsonObject& json);

}  // namespace pool_verdict
