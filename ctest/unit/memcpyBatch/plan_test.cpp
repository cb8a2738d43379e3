// 09_memcpyBatch's batch arrays: attribute groups as the driver wants them, and what the batch
// call hands cuMemcpyBatchAsync, seen through a fake driver entry point (a link seam: this file
// defines the symbol that libcuda would).
#include <gtest/gtest.h>

#include <vector>

#include "batch_plan.hpp"

namespace ms = memsamples;

namespace {

/// What the fake cuMemcpyBatchAsync saw.
struct SeenBatch {
  int calls = 0;
  std::vector<CUdeviceptr> dsts;
  std::vector<CUdeviceptr> srcs;
  std::vector<std::size_t> sizes;
  std::vector<CUmemcpyAttributes> attrs;
  std::vector<std::size_t> attrsIdxs;
  CUstream stream = nullptr;
  CUresult answer = CUDA_SUCCESS;
};
SeenBatch seen;

}  // namespace

extern "C" CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, std::size_t* sizes,
                                       std::size_t count, CUmemcpyAttributes* attrs,
                                       std::size_t* attrsIdxs, std::size_t numAttrs,
                                       CUstream stream) {
  ++seen.calls;
  seen.dsts.assign(dsts, dsts + count);
  seen.srcs.assign(srcs, srcs + count);
  seen.sizes.assign(sizes, sizes + count);
  seen.attrs.assign(attrs, attrs + numAttrs);
  seen.attrsIdxs.assign(attrsIdxs, attrsIdxs + numAttrs);
  seen.stream = stream;
  return seen.answer;
}

namespace {

TEST(MemcpyBatchPlan, GroupsStartAtZeroAndIncrease) {
  ms::BatchPlan plan;
  EXPECT_THROW(plan.addCopy(1, 2, 3), std::logic_error);
  plan.beginGroup(ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM));
  plan.addCopy(0x1000, 0x2000, 64);
  plan.addCopy(0x1040, 0x2040, 64);
  // A group that gets no copy is replaced by the next one, never left empty.
  plan.beginGroup(ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL));
  plan.beginGroup(ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_ANY));
  plan.addCopy(0x1080, 0x2080, 32);
  EXPECT_EQ(plan.attrsIdxs, (std::vector<std::size_t>{0, 2}));
  ASSERT_EQ(plan.attrs.size(), 2u);
  EXPECT_EQ(plan.attrs[0].srcAccessOrder, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
  EXPECT_EQ(plan.attrs[1].srcAccessOrder, CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
  EXPECT_EQ(ms::planProblem(plan), "");
}

TEST(MemcpyBatchPlan, ProblemsTheDriverWouldRefuse) {
  ms::BatchPlan plan;
  EXPECT_EQ(ms::planProblem(plan), "the batch has no copies");
  plan.beginGroup(ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM));
  plan.addCopy(1, 2, 4);
  plan.addCopy(5, 6, 4);
  ms::BatchPlan bad = plan;
  bad.attrsIdxs[0] = 1;
  EXPECT_EQ(ms::planProblem(bad), "attrsIdxs[0] is not 0");
  bad = plan;
  bad.attrs.push_back(bad.attrs[0]);
  bad.attrsIdxs.push_back(0);
  EXPECT_EQ(ms::planProblem(bad), "attrsIdxs is not strictly increasing at 1");
  bad.attrsIdxs.back() = 2;
  EXPECT_EQ(ms::planProblem(bad), "the last attrsIdxs entry is not below the copy count");
  bad = plan;
  bad.srcs.pop_back();
  EXPECT_EQ(ms::planProblem(bad), "dsts, srcs and sizes differ in length");
}

TEST(MemcpyBatchPlan, AttributesGiveNoHintAndTheFlag) {
  const CUmemcpyAttributes plain = ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
  EXPECT_EQ(plain.flags, 0u);
  EXPECT_EQ(plain.srcLocHint.type, CU_MEM_LOCATION_TYPE_INVALID);
  EXPECT_EQ(plain.dstLocHint.type, CU_MEM_LOCATION_TYPE_INVALID);
  const CUmemcpyAttributes overlap = ms::copyAttributes(
      CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE);
  EXPECT_EQ(overlap.flags, static_cast<unsigned int>(CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE));
}

TEST(MemcpyBatchPlan, BlocksGoFromSlotToSlot) {
  const ms::BlockLayout layout = ms::makeLayout(10, 256);
  const auto any = ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
  const ms::BatchPlan up = ms::planBlocks(layout, 0x100000, 0x900000, true, any);
  const ms::BatchPlan down = ms::planBlocks(layout, 0x900000, 0x100000, false, any);
  ASSERT_EQ(up.count(), 10u);
  for (std::uint64_t block = 0; block < 10; ++block) {
    EXPECT_EQ(up.dsts[block], 0x100000 + layout.deviceOffset(block));
    EXPECT_EQ(up.srcs[block], 0x900000 + layout.hostOffset(block));
    EXPECT_EQ(down.dsts[block], 0x900000 + layout.hostOffset(block));
    EXPECT_EQ(down.srcs[block], 0x100000 + layout.deviceOffset(block));
    EXPECT_EQ(up.sizes[block], 256u);
  }
  EXPECT_EQ(up.attrsIdxs, (std::vector<std::size_t>{0}));
}

TEST(MemcpyBatchPlan, EnqueueHandsTheDriverEveryArray) {
  seen = SeenBatch{};
  const ms::BlockLayout layout = ms::makeLayout(5, 64);
  ms::BatchPlan plan = ms::planBlocks(layout, 0x1000, 0x8000, true,
                                      ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM));
  plan.beginGroup(ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL));
  plan.addCopy(0x4000, 0x7000, 32);
  auto* stream = reinterpret_cast<CUstream>(0x42);
  EXPECT_EQ(ms::enqueueBatch(plan, stream), CUDA_SUCCESS);
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.dsts, plan.dsts);
  EXPECT_EQ(seen.srcs, plan.srcs);
  EXPECT_EQ(seen.sizes, plan.sizes);
  EXPECT_EQ(seen.attrsIdxs, (std::vector<std::size_t>{0, 5}));
  ASSERT_EQ(seen.attrs.size(), 2u);
  EXPECT_EQ(seen.attrs[1].srcAccessOrder, CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL);
  EXPECT_EQ(seen.stream, stream);

  // The driver's refusal comes back unchanged; a malformed plan never reaches it.
  seen.answer = CUDA_ERROR_NOT_SUPPORTED;
  EXPECT_EQ(ms::enqueueBatch(plan, stream), CUDA_ERROR_NOT_SUPPORTED);
  ms::BatchPlan empty;
  EXPECT_THROW(ms::enqueueBatch(empty, stream), std::logic_error);
  EXPECT_EQ(seen.calls, 2);
}

}  // namespace
