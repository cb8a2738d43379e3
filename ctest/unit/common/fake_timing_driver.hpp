// The fake driver of timing_test.cpp (see fake_timing_driver.cpp).
#pragma once

#include <cuda.h>

#include "fake_call_plan.hpp"

namespace memsamples::test {

/// The fake's call log and planned failures; "host function returned" marks when the host
/// function queued by cuLaunchHostFunc ended.
FakeCallPlan& timingDriver();

/// Records a call (thread-safe: the host function runs on its own thread).
CUresult enterTimingDriver(const char* function);

/// Waits until the host function of the last cuLaunchHostFunc has returned.
void finishHostFunction();

}  // namespace memsamples::test
