/**
 * @file fail_nth_call.hpp
 * @brief The interface of the memsamples_fail_nth_call preload library, for the programs that
 *        look it up at run time (they never link it: it is loaded with LD_PRELOAD or not at all).
 *
 * Environment, read when the library is loaded:
 * - `MEMSAMPLES_FAIL_CALL=<cuFunction>:<N>`: the Nth call (1-based) of that driver function
 *   returns an error without reaching the driver. The name is the one cuda.h gives people
 *   (`cuMemAlloc`) or the exported symbol (`cuMemAlloc_v2`). Unset: every call is forwarded.
 * - `MEMSAMPLES_FAIL_RESULT=<int>`: the CUresult to return (default CUDA_ERROR_OUT_OF_MEMORY).
 * - `MEMSAMPLES_FAIL_KILL_ONCE=<absolute path>`: the Nth call kills its process (SIGKILL) instead
 *   of failing, in the one process that manages to create that file first; in the others (a
 *   parent's other workers) it goes through. A process that dies mid-run, for the tests of what
 *   its peers do then.
 * A malformed value or an unknown function makes the process exit 1 at load time, so a typo in a
 * test cannot pass for a run without failures.
 *
 * How N is counted: from the start of the process, over the calls of that one function. A program
 * that must not count its own set-up (the rollback checker builds a range to warm up) calls
 * kDisarm first, which stops counting, and kArm just before the call sequence under test, which
 * restarts the count at zero. Nothing is injected while disarmed.
 */
#pragma once

namespace memsamples::fail_nth_call {

/// `unsigned long long`: how many failures were injected so far.
inline constexpr const char* kInjectedCount = "memsamples_fail_nth_call_injected";
/// `unsigned long long`: the base address of the last successful cuMemAddressReserve.
inline constexpr const char* kLastReservedBase = "memsamples_fail_nth_call_last_reserved";
/// `void()`: count from zero from now on, and inject.
inline constexpr const char* kArm = "memsamples_fail_nth_call_arm";
/// `void()`: stop counting and injecting until kArm.
inline constexpr const char* kDisarm = "memsamples_fail_nth_call_disarm";

/// The environment variables the library reads.
inline constexpr const char* kCallVariable = "MEMSAMPLES_FAIL_CALL";
inline constexpr const char* kResultVariable = "MEMSAMPLES_FAIL_RESULT";
inline constexpr const char* kKillOnceVariable = "MEMSAMPLES_FAIL_KILL_ONCE";

}  // namespace memsamples::fail_nth_call
