// 00_memoryQueryDrv's verdict, answersAgree(): a device's answers that agree PASS, and each
// contradiction the lesson names (VMM without a usable granularity, for device memory or at the
// HOST_NUMA location; concurrent managed access without managed memory) FAILs.
#include <gtest/gtest.h>

#include "memoryQueryDrv_report.hpp"

// The report code names a refused link attribute with Common's describeResult(), which asks the
// driver for the error's name: this test links no libcuda, so these two stand in.
extern "C" CUresult CUDAAPI cuGetErrorName(CUresult, const char** name) {
  *name = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
extern "C" CUresult CUDAAPI cuGetErrorString(CUresult, const char** text) {
  *text = "a fake error";
  return CUDA_SUCCESS;
}

namespace {

// An H100's answers, as the sample reads them: every feature, 2 MiB granularities.
DeviceAnswers agreeing() {
  DeviceAnswers d;
  d.vmm = 1;
  d.granularity = {2u << 20, 2u << 20};
  d.hostNumaVmm = 1;
  d.hostNumaGranularity = {2u << 20, 2u << 20};
  d.managed = 1;
  d.concurrentManaged = 1;
  return d;
}

TEST(MemoryQueryVerdict, AnswersThatAgreePass) {
  EXPECT_TRUE(answersAgree(agreeing()));
  DeviceAnswers recommendedLarger = agreeing();
  recommendedLarger.granularity.recommended = 4u << 20;  // a multiple of the minimum
  EXPECT_TRUE(answersAgree(recommendedLarger));
  // Without VMM, HOST_NUMA VMM or concurrent managed access nothing is asked, nothing to agree.
  DeviceAnswers none;
  EXPECT_TRUE(answersAgree(none));
}

TEST(MemoryQueryVerdict, VmmWithoutAUsableGranularityFails) {
  DeviceAnswers zeroMinimum = agreeing();
  zeroMinimum.granularity.minimum = 0;
  EXPECT_FALSE(answersAgree(zeroMinimum));
  DeviceAnswers zeroRecommended = agreeing();
  zeroRecommended.granularity.recommended = 0;
  EXPECT_FALSE(answersAgree(zeroRecommended));
  DeviceAnswers notAMultiple = agreeing();
  notAMultiple.granularity.recommended = 3u << 20;
  EXPECT_FALSE(answersAgree(notAMultiple));
}

TEST(MemoryQueryVerdict, HostNumaVmmWithoutAUsableGranularityFails) {
  DeviceAnswers zero = agreeing();
  zero.hostNumaGranularity = {0, 0};
  EXPECT_FALSE(answersAgree(zero));
  DeviceAnswers notAMultiple = agreeing();
  notAMultiple.hostNumaGranularity.recommended = (2u << 20) + 4096;
  EXPECT_FALSE(answersAgree(notAMultiple));
  // The same granularity without HOST_NUMA VMM was never asked: no contradiction.
  zero.hostNumaVmm = 0;
  EXPECT_TRUE(answersAgree(zero));
}

TEST(MemoryQueryVerdict, ConcurrentManagedAccessWithoutManagedMemoryFails) {
  DeviceAnswers d = agreeing();
  d.managed = 0;
  EXPECT_FALSE(answersAgree(d));
  d.concurrentManaged = 0;
  EXPECT_TRUE(answersAgree(d));
}

}  // namespace
