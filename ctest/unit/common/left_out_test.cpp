// Which GPU beside the chosen one a run of several GPUs leaves out, and why (whyNoContext(),
// whyLeftOut()): its compute mode forbids a context, the driver refused it one, or the buffers do
// not fit in 80 % of its free memory. 05, 06 and 08 decide with these; their own tests show the
// whole choice.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>

#include "support/devices.hpp"

namespace ms = memsamples;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

const std::string kProhibited =
    "device 2 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can be "
    "created";
const std::string kBusy = "cuCtxCreate: CUDA_ERROR_DEVICE_UNAVAILABLE";

/// Device 2 in DEFAULT mode with a context and @p freeBytes free.
ms::ExtraGpu gpu(std::uint64_t freeBytes) {
  ms::ExtraGpu state;
  state.ordinal = 2;
  state.freeBytes = freeBytes;
  return state;
}

/// Device 2 in compute mode @p mode, which refused a context as busy.
ms::ExtraGpu refused(int mode) {
  ms::ExtraGpu state = gpu(0);
  state.computeMode = mode;
  state.contextRefused = kBusy;
  return state;
}

/// Device 2 with @p freeBytes free, PROHIBITED: computeModeProblem() found it admits no context.
ms::ExtraGpu prohibited(std::uint64_t freeBytes = 0) {
  ms::ExtraGpu state = gpu(freeBytes);
  state.computeMode = CU_COMPUTEMODE_PROHIBITED;
  state.computeModeProblem = kProhibited;
  return state;
}

/// Three buffers of @p bytes.
ms::BuffersPerGpu buffers(std::uint64_t bytes) {
  ms::BuffersPerGpu need;
  need.count = 3;
  need.bytes = bytes;
  return need;
}

}  // namespace

TEST(WhyNoContext, AGpuThatHasAContextHasNoReason) {
  EXPECT_EQ(ms::whyNoContext(gpu(80 * kGiB)), std::nullopt);
  ms::ExtraGpu exclusive = gpu(80 * kGiB);
  exclusive.computeMode = CU_COMPUTEMODE_EXCLUSIVE_PROCESS;
  EXPECT_EQ(ms::whyNoContext(exclusive), std::nullopt);
}

TEST(WhyNoContext, AComputeModeProblemIsTheReasonAsGiven) {
  EXPECT_EQ(ms::whyNoContext(prohibited()), kProhibited);
}

TEST(WhyNoContext, ARefusedContextNamesTheCall) {
  EXPECT_EQ(ms::whyNoContext(refused(CU_COMPUTEMODE_DEFAULT)),
            "device 2 refused a context (" + kBusy + ")");
}

TEST(WhyNoContext, AnExclusiveProcessGpuThatRefusedIsHeldByAnotherProcess) {
  EXPECT_EQ(ms::whyNoContext(refused(CU_COMPUTEMODE_EXCLUSIVE_PROCESS)),
            "device 2 refused a context (" + kBusy +
                "): it is in compute mode EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS) "
                "and another process holds it");
}

TEST(WhyNoContext, TheComputeModeProblemComesBeforeTheRefusal) {
  ms::ExtraGpu both = prohibited();
  both.contextRefused = kBusy;
  EXPECT_EQ(ms::whyNoContext(both), kProhibited);
}

TEST(WhyLeftOut, AGpuWhoseBuffersFitInEightyPercentTakesPart) {
  // 80 % of 10 GiB is 8 GiB: three buffers of 2 GiB fit.
  EXPECT_EQ(ms::whyLeftOut(gpu(10 * kGiB), buffers(2 * kGiB), "name it to use it"), std::nullopt);
}

TEST(WhyLeftOut, BuffersThatFillExactlyTheShareFit) {
  // 80 % of 3000 MiB is 2400 MiB: three buffers of 800 MiB just fit, one byte more does not.
  EXPECT_EQ(ms::whyLeftOut(gpu(3000 * kMiB), buffers(800 * kMiB), ""), std::nullopt);
  EXPECT_NE(ms::whyLeftOut(gpu(3000 * kMiB), buffers(800 * kMiB + 1), ""), std::nullopt);
}

TEST(WhyLeftOut, MoreThanEightyPercentIsTooLittleAndSaysHowToUseItAllTheSame) {
  // Three buffers of 512 MiB fit in 1.5 GiB free, but not in 80 % of it.
  EXPECT_EQ(ms::whyLeftOut(gpu(1536 * kMiB), buffers(512 * kMiB), "name it in --pairs to use it"),
            "device 2 has only 1.50 GiB free, too little for 3 buffers of 512 MiB (name it in "
            "--pairs to use it)");
}

TEST(WhyLeftOut, TheMessageCallsTheBuffersAsTheSampleDoesAndMayHaveNoHint) {
  ms::BuffersPerGpu vectors = buffers(64 * kMiB);
  vectors.noun = "vectors";
  EXPECT_EQ(ms::whyLeftOut(gpu(100 * kMiB), vectors, ""),
            "device 2 has only 100 MiB free, too little for 3 vectors of 64.0 MiB");
}

TEST(WhyLeftOut, AGpuWithoutAContextIsLeftOutForThatWhateverItsMemory) {
  EXPECT_EQ(ms::whyLeftOut(prohibited(80 * kGiB), buffers(kMiB), "hint"), kProhibited);
  EXPECT_EQ(ms::whyLeftOut(refused(CU_COMPUTEMODE_DEFAULT), buffers(kMiB), "hint"),
            "device 2 refused a context (" + kBusy + ")");
}

TEST(WhyLeftOut, NoBuffersFitWhereNothingIsFree) {
  EXPECT_EQ(ms::whyLeftOut(gpu(0), buffers(2 * kMiB), ""),
            "device 2 has only 0 B free, too little for 3 buffers of 2.00 MiB");
}
