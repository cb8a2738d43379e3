// Who undoes classic peer access: 05's real adoptPeerAccess and EnabledPeerAccess
// (peer_context.cpp) against the fake driver of fake_peer_driver.cpp. The test makes the
// cuCtxEnablePeerAccess call the lesson makes, with the accessor's context current, and hands
// its answer over as the lesson does.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fake_peer_driver.hpp"
#include "memsamples.hpp"
#include "peer_context.hpp"

namespace ms = memsamples;
namespace p2p = memsamples::p2p;

namespace {

using Enabled = std::vector<std::unique_ptr<p2p::EnabledPeerAccess>>;

/// The lesson's step 7 for one pair: enable with the accessor current, then adopt the answer.
/// True when the access is the lesson's own, false when it was adopted.
bool enableAsTheLessonDoes(const p2p::Endpoint& accessor, const p2p::Endpoint& owner,
                           Enabled& enabled) {
  const ms::ScopedContext onAccessor(accessor.ctx());
  const CUresult enable = cuCtxEnablePeerAccess(owner.ctx(), 0);
  return p2p::adoptPeerAccess(enable, accessor, owner, enabled);
}

class PeerAccess : public ::testing::Test {
 protected:
  void SetUp() override { fake_peer::reset(); }
};

}  // namespace

// A primary context is the whole process's: a library may have enabled the access first.
TEST_F(PeerAccess, AlreadyEnabledElsewhereIsUsedAndNeverDisabledHere) {
  const p2p::Endpoint owner(0), accessor(1);
  fake_peer::enableElsewhere(accessor.ctx(), owner.ctx());
  {
    Enabled enabled;
    bool ours = true;
    EXPECT_NO_THROW(ours = enableAsTheLessonDoes(accessor, owner, enabled));
    EXPECT_FALSE(ours) << "access enabled elsewhere was reported as the lesson's";
    EXPECT_EQ(fake_peer::callCount("cuCtxEnablePeerAccess"), 1);
    EXPECT_TRUE(enabled.empty()) << "access enabled elsewhere was recorded as the lesson's";
  }  // the owners are gone, as at the end of the run or on an error path
  EXPECT_EQ(fake_peer::callCount("cuCtxDisablePeerAccess"), 0);
  EXPECT_TRUE(fake_peer::accessEnabled(accessor.ctx(), owner.ctx()));
  EXPECT_TRUE(fake_peer::contextStack().empty());
}

TEST_F(PeerAccess, EnabledByTheLessonIsDisabledInTheAccessorsContextOnEveryPath) {
  const p2p::Endpoint owner(0), accessor(1);
  {
    Enabled enabled;
    EXPECT_TRUE(enableAsTheLessonDoes(accessor, owner, enabled));
    ASSERT_EQ(enabled.size(), 1u);
    EXPECT_EQ(&enabled[0]->accessor(), &accessor);
    EXPECT_EQ(&enabled[0]->owner(), &owner);
    EXPECT_TRUE(fake_peer::accessEnabled(accessor.ctx(), owner.ctx()));
  }  // not dismissed: an error path
  EXPECT_EQ(fake_peer::callCount("cuCtxSynchronize"), 1);
  EXPECT_EQ(fake_peer::disabledFrom(), std::vector<CUcontext>{accessor.ctx()});
  EXPECT_FALSE(fake_peer::accessEnabled(accessor.ctx(), owner.ctx()));
  EXPECT_TRUE(fake_peer::contextStack().empty());
}

TEST_F(PeerAccess, AnotherErrorNamesTheCallAndRecordsNothing) {
  const p2p::Endpoint owner(0), accessor(1);
  fake_peer::failCall("cuCtxEnablePeerAccess", 1, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  Enabled enabled;
  try {
    enableAsTheLessonDoes(accessor, owner, enabled);
    FAIL() << "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED was not reported";
  } catch (const ms::CudaError& error) {
    const std::string what = error.what();
    EXPECT_EQ(error.result(), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    EXPECT_EQ(what.rfind("cuCtxEnablePeerAccess failed at peer_access_test.cpp:", 0), 0u) << what;
    EXPECT_NE(what.find("CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"), std::string::npos) << what;
  }
  EXPECT_TRUE(enabled.empty());
  EXPECT_EQ(fake_peer::callCount("cuCtxDisablePeerAccess"), 0);
  EXPECT_TRUE(fake_peer::contextStack().empty());
}
