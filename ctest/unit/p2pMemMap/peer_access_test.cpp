// Who undoes classic peer access, and how many peers are open at once: 05's real
// enablePeerAccess, EnabledPeerAccess and measurePairByPair (peer_context.cpp) against the fake
// driver of fake_peer_driver.cpp, which refuses a context its 9th peer as a GPU without NVSwitch
// does. enablePeerAccess judges cuCtxEnablePeerAccess's answer as the lesson's classic path does.
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

/// A plan whose endpoints are devices 0 .. count - 1, one each.
p2p::PairPlan planOf(int count) {
  p2p::PairPlan plan;
  for (int device = 0; device < count; ++device)
    plan.endpoints.push_back(device);
  return plan;
}

/// Every ordered pair of @p count devices, owner-major.
std::vector<p2p::DevicePair> everyPair(int count) {
  std::vector<p2p::DevicePair> pairs;
  for (int owner = 0; owner < count; ++owner) {
    for (int accessor = 0; accessor < count; ++accessor) {
      if (owner != accessor)
        pairs.push_back({owner, accessor});
    }
  }
  return pairs;
}

class PeerAccess : public ::testing::Test {
 protected:
  void SetUp() override { fake_peer::reset(); }
};

/// Ten GPUs without NVSwitch, one endpoint each, as a plan of every pair would have them.
class TenGpus : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_peer::reset();
    fake_peer::setDeviceCount(10);
    endpoints = std::make_unique<p2p::Endpoints>(plan);
  }
  /// Device @p device's context, of its endpoint.
  CUcontext ctx(int device) const { return endpoints->all.at(std::size_t(device)).ctx; }
  /// Other code of the process opened 8 peers for @p device's context: it has none left.
  void useAllPeersOf(int device) {
    for (int owner = 0; owner < fake_peer::kPeerLimit; ++owner)
      fake_peer::enableElsewhere(ctx(device), ctx(owner == device ? fake_peer::kPeerLimit : owner));
  }

  const p2p::PairPlan plan = planOf(10);
  std::unique_ptr<p2p::Endpoints> endpoints;
};

}  // namespace

// A primary context is the whole process's: a library may have enabled the access first.
TEST_F(PeerAccess, AlreadyEnabledElsewhereIsUsedAndNeverDisabledHere) {
  const p2p::Endpoint owner(0), accessor(1);
  fake_peer::enableElsewhere(accessor.ctx, owner.ctx);
  {
    p2p::EnabledPeerAccess ours(accessor.ctx);
    EXPECT_EQ(p2p::enablePeerAccess(accessor, owner, ours), "") << "refused";
    EXPECT_EQ(ours.get(), nullptr) << "access enabled elsewhere was recorded as this code's";
    EXPECT_EQ(fake_peer::callCount("cuCtxEnablePeerAccess"), 1);
  }  // the owner is gone, as at the end of the run or on an error path
  EXPECT_EQ(fake_peer::callCount("cuCtxDisablePeerAccess"), 0);
  EXPECT_TRUE(fake_peer::accessEnabled(accessor.ctx, owner.ctx));
  EXPECT_TRUE(fake_peer::contextStack().empty());
}

TEST_F(PeerAccess, EnabledByTheLessonIsDisabledInTheAccessorsContextOnEveryPath) {
  const p2p::Endpoint owner(0), accessor(1);
  {
    p2p::EnabledPeerAccess ours(accessor.ctx);
    EXPECT_EQ(p2p::enablePeerAccess(accessor, owner, ours), "");
    EXPECT_EQ(ours.get(), owner.ctx);
    // ours keeps the accessor's context, where it disables the access (disabledFrom below).
    EXPECT_TRUE(fake_peer::accessEnabled(accessor.ctx, owner.ctx));
    EXPECT_TRUE(fake_peer::contextStack().empty());  // the accessor's context was popped
  }  // not released: an error path
  EXPECT_EQ(fake_peer::callCount("cuCtxSynchronize"), 1);
  EXPECT_EQ(fake_peer::disabledFrom(), std::vector<CUcontext>{accessor.ctx});
  EXPECT_FALSE(fake_peer::accessEnabled(accessor.ctx, owner.ctx));
  EXPECT_TRUE(fake_peer::contextStack().empty());
}

// The good path: release() hands the owner's context to the lesson's checked disable.
TEST_F(PeerAccess, ReleasedAccessIsTheCallersToDisable) {
  const p2p::Endpoint owner(0), accessor(1);
  {
    p2p::EnabledPeerAccess ours(accessor.ctx);
    (void)p2p::enablePeerAccess(accessor, owner, ours);
    EXPECT_EQ(ours.release(), owner.ctx);
    EXPECT_EQ(ours.get(), nullptr);
  }
  EXPECT_EQ(fake_peer::callCount("cuCtxDisablePeerAccess"), 0);
  EXPECT_TRUE(fake_peer::accessEnabled(accessor.ctx, owner.ctx));
}

TEST_F(PeerAccess, AnotherErrorNamesTheCallAndRecordsNothing) {
  const p2p::Endpoint owner(0), accessor(1);
  fake_peer::failCall("cuCtxEnablePeerAccess", 1, CUDA_ERROR_INVALID_VALUE);
  p2p::EnabledPeerAccess ours(accessor.ctx);
  try {
    (void)p2p::enablePeerAccess(accessor, owner, ours);
    FAIL() << "CUDA_ERROR_INVALID_VALUE was not reported";
  } catch (const ms::CudaError& error) {
    const std::string what = error.what();
    EXPECT_EQ(error.result(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(what.rfind("cuCtxEnablePeerAccess failed at peer_access_test.cpp:", 0), 0u) << what;
    EXPECT_NE(what.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << what;
  }
  EXPECT_EQ(ours.get(), nullptr);
  EXPECT_EQ(fake_peer::callCount("cuCtxDisablePeerAccess"), 0);
  EXPECT_TRUE(fake_peer::contextStack().empty());
}

// The hardware connects the pair, the driver still says no: reported, not an error.
TEST_F(PeerAccess, ARefusalIsReportedNotThrown) {
  const p2p::Endpoint owner(0), accessor(1);
  for (const CUresult refusal : {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, CUDA_ERROR_TOO_MANY_PEERS}) {
    fake_peer::reset();
    fake_peer::failCall("cuCtxEnablePeerAccess", 1, refusal);
    p2p::EnabledPeerAccess ours(accessor.ctx);
    const std::string refused = p2p::enablePeerAccess(accessor, owner, ours);
    EXPECT_EQ(ours.get(), nullptr);
    EXPECT_EQ(refused.rfind("cuCtxEnablePeerAccess refused: CUDA_ERROR_", 0), 0u) << refused;
  }
  EXPECT_EQ(fake_peer::callCount("cuCtxDisablePeerAccess"), 0);
}

// Both endpoints of a loopback pair share one context: nothing to enable, nothing to undo.
TEST_F(PeerAccess, OneContextNeedsNone) {
  const p2p::Endpoint first(0), second(0);
  p2p::EnabledPeerAccess ours(second.ctx);
  EXPECT_EQ(p2p::enablePeerAccess(second, first, ours), "");
  EXPECT_EQ(ours.get(), nullptr);
  EXPECT_EQ(fake_peer::callCount("cuCtxEnablePeerAccess"), 0);
}

// What the sample used to do, enabling every pair before measuring any, fails on a machine of
// more than 8 GPUs without NVSwitch: the fake refuses a 9th peer as the driver does.
TEST_F(PeerAccess, TheFakeRefusesANinthPeerAsAGpuWithoutNvswitchDoes) {
  fake_peer::setDeviceCount(10);
  std::vector<std::unique_ptr<p2p::Endpoint>> devices;
  for (int device = 0; device < 10; ++device)
    devices.push_back(std::make_unique<p2p::Endpoint>(device));
  const ms::ScopedContext onFirst(devices[0]->ctx);
  for (int owner = 1; owner <= fake_peer::kPeerLimit; ++owner)
    EXPECT_EQ(cuCtxEnablePeerAccess(devices[owner]->ctx, 0), CUDA_SUCCESS) << owner;
  EXPECT_EQ(cuCtxEnablePeerAccess(devices[9]->ctx, 0), CUDA_ERROR_TOO_MANY_PEERS);
  for (int owner = 1; owner <= fake_peer::kPeerLimit; ++owner)
    EXPECT_EQ(cuCtxDisablePeerAccess(devices[owner]->ctx), CUDA_SUCCESS);
}

// Step 8 on 10 GPUs: all 90 ordered pairs, then the 45 pairs both ways, each measured with its
// own access only, and nothing left enabled afterwards.
TEST_F(TenGpus, PairByPairMeasuresEveryPair) {
  std::vector<p2p::DevicePair> measured;
  const auto measure = [&](const p2p::DevicePair& pair) {
    measured.push_back(pair);
    EXPECT_TRUE(fake_peer::accessEnabled(ctx(pair.accessor), ctx(pair.owner)));
    EXPECT_EQ(fake_peer::contextStack().size(), 0u) << "the measurement sets its own context";
  };
  const std::vector<p2p::DevicePair> pairs = everyPair(10);
  EXPECT_TRUE(p2p::measurePairByPair(*endpoints, pairs, false, measure).empty());
  EXPECT_EQ(measured, pairs);
  EXPECT_EQ(fake_peer::mostPeersAtOnce(), 1);

  std::vector<p2p::DevicePair> unordered;
  for (const p2p::DevicePair& pair : pairs) {
    if (pair.owner < pair.accessor)
      unordered.push_back(pair);
  }
  measured.clear();
  const auto bothWays = [&](const p2p::DevicePair& pair) {
    measured.push_back(pair);
    EXPECT_TRUE(fake_peer::accessEnabled(ctx(pair.owner), ctx(pair.accessor)) &&
                fake_peer::accessEnabled(ctx(pair.accessor), ctx(pair.owner)));
  };
  EXPECT_TRUE(p2p::measurePairByPair(*endpoints, unordered, true, bothWays).empty());
  EXPECT_EQ(measured, unordered);
  EXPECT_EQ(fake_peer::mostPeersAtOnce(), 1);
  EXPECT_EQ(fake_peer::callCount("cuCtxEnablePeerAccess"), 90 + 90);
  EXPECT_EQ(fake_peer::callCount("cuCtxDisablePeerAccess"), 90 + 90);
  EXPECT_EQ(fake_peer::callCount("cuCtxSynchronize"), 90 + 90);
  EXPECT_TRUE(fake_peer::contextStack().empty());
}

// Device 9's context already uses 8 peers (other code of the process opened them): its pair is
// refused and reported, the other pairs are measured, and nothing of the other code is undone.
TEST_F(TenGpus, ARefusedPairIsReportedAndTheOthersAreMeasured) {
  useAllPeersOf(9);
  std::vector<p2p::DevicePair> measured;
  const auto measure = [&](const p2p::DevicePair& pair) { measured.push_back(pair); };
  const std::vector<p2p::PeerRefusal> refused =
      p2p::measurePairByPair(*endpoints, {{0, 1}, {8, 9}, {9, 8}}, false, measure);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].pair, (p2p::DevicePair{8, 9}));
  EXPECT_NE(refused[0].reason.find("CUDA_ERROR_TOO_MANY_PEERS"), std::string::npos)
      << refused[0].reason;
  EXPECT_EQ(measured, (std::vector<p2p::DevicePair>{{0, 1}, {9, 8}}));
  for (int owner = 0; owner < fake_peer::kPeerLimit; ++owner)
    EXPECT_TRUE(fake_peer::accessEnabled(ctx(9), ctx(owner))) << owner;
  EXPECT_FALSE(fake_peer::accessEnabled(ctx(1), ctx(0)));
  EXPECT_FALSE(fake_peer::accessEnabled(ctx(8), ctx(9)));
  EXPECT_TRUE(fake_peer::contextStack().empty());
}

// Both ways at once: the first direction is granted, the second refused. The pair is reported,
// not measured, and the direction that was granted is disabled again.
TEST_F(TenGpus, BothWaysRefusedHalfWayUndoesTheHalfThatWasGranted) {
  useAllPeersOf(8);
  int measured = 0;
  const std::vector<p2p::PeerRefusal> refused = p2p::measurePairByPair(
      *endpoints, {{8, 9}}, true, [&](const p2p::DevicePair&) { ++measured; });
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].pair, (p2p::DevicePair{8, 9}));
  EXPECT_EQ(measured, 0);
  EXPECT_EQ(fake_peer::disabledFrom(), std::vector<CUcontext>{ctx(9)});
  EXPECT_FALSE(fake_peer::accessEnabled(ctx(9), ctx(8)));
  EXPECT_TRUE(fake_peer::contextStack().empty());
}
