// The worker's grant of access to an imported pool (grantPoolAccess, ipc_owners.hpp), on a fake
// driver: this file defines the cu* functions the grant calls (a link seam: the test links neither
// libcuda nor Common's driver half), records each call, and answers as a test tells it to. cuda.h
// says nothing of an imported pool's default access, so the worker must ask and grant read-write
// where it is missing, and only there; a failed question must stop the import, naming the call.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fake_call_plan.hpp"
#include "ipc_owners.hpp"
#include "test_support.hpp"

namespace ipc = memsamples::ipc;

namespace {

/// What the fake pool answers, and what the grant asked of it.
struct FakePool {
  memsamples::test::FakeCallPlan calls;
  CUmemAccess_flags granted = CU_MEM_ACCESS_FLAGS_PROT_NONE;  // cuMemPoolGetAccess's answer
  std::vector<CUmemoryPool> askedPools;
  std::vector<CUmemLocation> askedLocations;
  std::vector<CUmemoryPool> setPools;
  std::vector<CUmemAccessDesc> setAccess;  // every descriptor cuMemPoolSetAccess was given
};

FakePool& fake() {
  static FakePool instance;
  return instance;
}

/// A recognisable pool handle that no real driver would hand out.
CUmemoryPool fakePool() {
  return reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(0x7001));
}

class IpcGrantPoolAccess : public ::testing::Test {
 protected:
  void SetUp() override { fake() = FakePool{}; }
};

}  // namespace

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult, const char** text) {
  *text = "fake driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool,
                                    CUmemLocation* location) {
  if (const CUresult planned = fake().calls.enter("cuMemPoolGetAccess"); planned != CUDA_SUCCESS)
    return planned;
  fake().askedPools.push_back(pool);
  fake().askedLocations.push_back(*location);
  *flags = fake().granted;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map,
                                    size_t count) {
  if (const CUresult planned = fake().calls.enter("cuMemPoolSetAccess"); planned != CUDA_SUCCESS)
    return planned;
  fake().setPools.push_back(pool);
  fake().setAccess.insert(fake().setAccess.end(), map, map + count);
  return CUDA_SUCCESS;
}

}  // extern "C"

// The pool grants this device nothing (a pool of another device): read-write is granted, once,
// to exactly this device, after the pool was asked about exactly this device.
TEST_F(IpcGrantPoolAccess, GrantsReadWriteWhereThePoolGrantsNothing) {
  fake().granted = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  ipc::grantPoolAccess(fakePool(), 1);

  ASSERT_EQ(fake().askedLocations.size(), 1u);
  EXPECT_EQ(fake().askedPools[0], fakePool());
  EXPECT_EQ(fake().askedLocations[0].type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(fake().askedLocations[0].id, 1);

  EXPECT_EQ(fake().calls.count("cuMemPoolSetAccess"), 1);
  ASSERT_EQ(fake().setAccess.size(), 1u);
  EXPECT_EQ(fake().setPools[0], fakePool());
  EXPECT_EQ(fake().setAccess[0].location.type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(fake().setAccess[0].location.id, 1);
  EXPECT_EQ(fake().setAccess[0].flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(fake().calls.log(),
            (std::vector<std::string>{"cuMemPoolGetAccess", "cuMemPoolSetAccess"}));
}

// Read-only is not enough: the worker's kernel writes C.
TEST_F(IpcGrantPoolAccess, GrantsReadWriteWhereThePoolGrantsReadOnly) {
  fake().granted = CU_MEM_ACCESS_FLAGS_PROT_READ;
  ipc::grantPoolAccess(fakePool(), 0);

  ASSERT_EQ(fake().setAccess.size(), 1u);
  EXPECT_EQ(fake().setAccess[0].location.id, 0);
  EXPECT_EQ(fake().setAccess[0].flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

// The pool's own device has read-write already: nothing is set.
TEST_F(IpcGrantPoolAccess, SetsNothingWhereThePoolGrantsReadWriteAlready) {
  fake().granted = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ipc::grantPoolAccess(fakePool(), 0);

  EXPECT_EQ(fake().calls.count("cuMemPoolGetAccess"), 1);
  EXPECT_EQ(fake().calls.count("cuMemPoolSetAccess"), 0);
  EXPECT_TRUE(fake().setAccess.empty());
}

// A question the driver cannot answer stops the import with an error naming the call; nothing
// is granted on a guess.
TEST_F(IpcGrantPoolAccess, AFailedQuestionIsAnErrorNamingTheCall) {
  fake().calls.fail("cuMemPoolGetAccess", 1, CUDA_ERROR_INVALID_VALUE);
  const std::string message = memsamples::test::messageOf<memsamples::CudaError>(
      [] { ipc::grantPoolAccess(fakePool(), 0); });

  EXPECT_NE(message.find("cuMemPoolGetAccess failed"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << message;
  EXPECT_EQ(fake().calls.count("cuMemPoolSetAccess"), 0);
}

// A refused grant is an error naming cuMemPoolSetAccess.
TEST_F(IpcGrantPoolAccess, ARefusedGrantIsAnErrorNamingTheCall) {
  fake().calls.fail("cuMemPoolSetAccess", 1, CUDA_ERROR_INVALID_VALUE);
  const std::string message = memsamples::test::messageOf<memsamples::CudaError>(
      [] { ipc::grantPoolAccess(fakePool(), 2); });

  EXPECT_NE(message.find("cuMemPoolSetAccess failed"), std::string::npos) << message;
}
