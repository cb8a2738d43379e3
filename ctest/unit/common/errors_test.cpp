// How failures are described and which driver answers waive a sample instead of failing it.
#include <gtest/gtest.h>

#include "memsamples.hpp"
#include "support/devices.hpp"
#include "support/vector_add.hpp"

namespace ms = memsamples;

TEST(Errors, CallFailureNamesCallFileLineAndReason) {
  EXPECT_EQ(ms::formatCallFailure("cuMemAlloc", "/src/samples/01/vectorAddDrv.cpp", 97,
                                  "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"),
            "cuMemAlloc failed at vectorAddDrv.cpp:97: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  EXPECT_EQ(ms::formatCallFailure("cuInit", "plain.cpp", 1, "x"),
            "cuInit failed at plain.cpp:1: x");
}

TEST(Errors, OnlyMachineProblemsWaive) {
  for (const CUresult waived :
       {CUDA_ERROR_NO_DEVICE, CUDA_ERROR_DEVICE_UNAVAILABLE, CUDA_ERROR_STUB_LIBRARY,
        CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE}) {
    EXPECT_TRUE(ms::isUnusableDriverResult(waived)) << waived;
  }
  for (const CUresult failed : {CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY,
                                CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_UNKNOWN}) {
    EXPECT_FALSE(ms::isUnusableDriverResult(failed)) << failed;
  }
}

TEST(Errors, MismatchDescription) {
  EXPECT_EQ(ms::describeMismatch({}), "");
  ms::VectorAddCheck check;
  check.mismatches = 3;
  check.firstBad = 5;
  check.expected = 1.25f;
  check.actual = 0.0f;
  EXPECT_EQ(ms::describeMismatch(check),
            "Mismatch at element 5: expected 1.25, got 0 (3 wrong in total)");
}
