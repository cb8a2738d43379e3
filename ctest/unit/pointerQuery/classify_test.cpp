// classify() on made-up driver answers, and classifyPointer() against a fake driver
// (fake_pointer_driver.cpp): the function a learner copies must name each kind, its device and
// range, and the calls that fit it.
#include <gtest/gtest.h>

#include <string>

#include "facts_fixture.hpp"
#include "fake_pointer_driver.hpp"
#include "memsamples.hpp"
#include "pointer_classify.hpp"
#include "test_support.hpp"

namespace pq = pointer_query;
using pq::Made;
using pq::PointerKind;
using pointer_test::kAddress;
using pointer_test::kBytes;
using pointer_test::rightAnswers;

TEST(PointerQueryClassify, NamesEveryKindTheLessonMakes) {
  EXPECT_EQ(pq::classify(rightAnswers(Made::DeviceAlloc)).kind, PointerKind::Device);
  EXPECT_EQ(pq::classify(rightAnswers(Made::Vmm)).kind, PointerKind::Vmm);
  EXPECT_EQ(pq::classify(rightAnswers(Made::Pool)).kind, PointerKind::Pool);
  EXPECT_EQ(pq::classify(rightAnswers(Made::Managed)).kind, PointerKind::Managed);
  EXPECT_EQ(pq::classify(rightAnswers(Made::AllocHost)).kind, PointerKind::PinnedHost);
  EXPECT_EQ(pq::classify(rightAnswers(Made::Registered)).kind, PointerKind::PinnedHost);
  EXPECT_EQ(pq::classify(rightAnswers(Made::Malloc)).kind, PointerKind::NotCuda);
}

TEST(PointerQueryClassify, GivesTheDeviceAndRangeOfDriverMemoryOnly) {
  pq::PointerFacts vmm = rightAnswers(Made::Vmm);
  vmm.deviceOrdinal = 3;
  const pq::PointerClass said = pq::classify(vmm);
  EXPECT_EQ(said.device, 3);
  EXPECT_EQ(said.rangeStart, kAddress);
  EXPECT_EQ(said.rangeSize, 2 * kBytes);

  // Whatever an unknown address's outputs hold, it has no device and no range.
  pq::PointerFacts stale;
  stale.deviceOrdinal = 0;
  stale.rangeSize = kBytes;
  const pq::PointerClass none = pq::classify(stale);
  EXPECT_EQ(none.device, -1);
  EXPECT_EQ(none.rangeSize, 0u);
}

TEST(PointerQueryClassify, TakesAFreedDeviceAddressForNobodys) {
  // The driver may still know the type of an address it has unmapped: MAPPED decides.
  pq::PointerFacts freed = rightAnswers(Made::DeviceAlloc);
  freed.mapped = 0;
  EXPECT_EQ(pq::classify(freed).kind, PointerKind::NotCuda);
  EXPECT_NE(pq::classify(freed).freeWith.find("not a CUDA call"), std::string::npos);
}

TEST(PointerQueryClassify, ManagedMemoryIsManagedWhereverItsPagesAre) {
  pq::PointerFacts onHost = rightAnswers(Made::Managed);
  onHost.memoryType = CU_MEMORYTYPE_HOST;
  onHost.mapped = 0;
  EXPECT_EQ(pq::classify(onHost).kind, PointerKind::Managed);
}

TEST(PointerQueryClassify, NamesTheCallsThatFit) {
  EXPECT_EQ(pq::classify(rightAnswers(Made::DeviceAlloc)).freeWith, "cuMemFree");
  EXPECT_EQ(pq::classify(rightAnswers(Made::Pool)).freeWith, "cuMemFreeAsync on a stream");
  EXPECT_NE(pq::classify(rightAnswers(Made::Vmm)).freeWith.find("cuMemUnmap"),
            std::string::npos);
  const pq::PointerClass pinned = pq::classify(rightAnswers(Made::HostAllocWc));
  EXPECT_NE(pinned.freeWith.find("cuMemFreeHost"), std::string::npos);
  EXPECT_NE(pinned.freeWith.find("cuMemHostUnregister"), std::string::npos);
  EXPECT_NE(pinned.copyWith.find("Async"), std::string::npos);
}

class PointerQueryClassifyPointer : public ::testing::Test {
 protected:
  void SetUp() override { fake_pointer::driver() = fake_pointer::Driver{}; }
};

TEST_F(PointerQueryClassifyPointer, AsksTheDriverOnceAndReadsEveryAnswer) {
  fake_pointer::driver().known[kAddress] = rightAnswers(Made::Pool);
  const pq::PointerClass said = pq::classifyPointer(kAddress);
  EXPECT_EQ(fake_pointer::driver().calls, 1);
  EXPECT_EQ(said.kind, PointerKind::Pool);
  EXPECT_EQ(said.device, 0);
  EXPECT_EQ(said.rangeSize, kBytes);
}

TEST_F(PointerQueryClassifyPointer, ReadsNarrowBooleansIntoZeroedWords) {
  // The fake writes booleans as one byte, as a driver may: the rest of each word must be 0.
  fake_pointer::driver().known[kAddress] = rightAnswers(Made::Managed);
  const pq::PointerFacts facts = pq::askDriver(kAddress);
  EXPECT_EQ(facts.isManaged, 1u);
  EXPECT_EQ(facts.mapped, 1u);
  EXPECT_EQ(facts.memoryType, static_cast<std::uint64_t>(CU_MEMORYTYPE_DEVICE));
}

TEST_F(PointerQueryClassifyPointer, AnUnknownAddressReadsAsNoAnswerNotGarbage) {
  // CUDA_SUCCESS with the outputs untouched: each must still hold its "no answer" value.
  const pq::PointerFacts facts = pq::askDriver(0x1234);
  EXPECT_EQ(facts.memoryType, 0u);
  EXPECT_EQ(facts.rangeSize, 0u);
  EXPECT_EQ(facts.deviceOrdinal, -1);
  EXPECT_EQ(facts.context, nullptr);
  EXPECT_EQ(pq::classifyPointer(0x1234).kind, PointerKind::NotCuda);
}

TEST_F(PointerQueryClassifyPointer, ADriverErrorIsACudaErrorNamingTheCall) {
  fake_pointer::driver().answer = CUDA_ERROR_INVALID_CONTEXT;
  const std::string message = memsamples::test::messageOf<memsamples::CudaError>(
      [] { pq::classifyPointer(kAddress); });
  EXPECT_NE(message.find("cuPointerGetAttributes failed"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_CONTEXT"), std::string::npos) << message;
}
