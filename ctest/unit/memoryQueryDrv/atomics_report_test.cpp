// 00_memoryQueryDrv's report of steps 7 and 8, the atomic-capability queries: what each answer
// prints (native operations grouped by capability mask, "none native", a refusal, an entry point
// the driver lacks) and what one GPU prints, where there is no pair to ask about.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "memoryQueryDrv_report.hpp"
#include "printed_text.hpp"

using memsamples::test::Grid;
using memsamples::test::rowsLabelled;

namespace {

constexpr int kDriver = 13000;  // CUDA 13.0, as cuDriverGetVersion says it

// The index of @p operation in kAtomicOperations.
std::size_t indexOf(CUatomicOperation operation) {
  for (std::size_t k = 0; k < kAtomicOperations.size(); ++k) {
    if (kAtomicOperations[k] == operation)
      return k;
  }
  return kAtomicOperations.size();
}

// Two devices that can access each other, with @p atomics as the answer for both directions.
std::vector<PeerAnswer> twoDevices(const AtomicAnswers& atomics) {
  std::vector<PeerAnswer> peers(2);
  for (int k = 0; k < 2; ++k) {
    peers[k].accessor = k;
    peers[k].owner = 1 - k;
    peers[k].canAccess = 1;
    peers[k].atomicOperations = atomics;
  }
  return peers;
}

std::string printedPeers(const std::vector<PeerAnswer>& peers, int deviceCount,
                         memsamples::JsonArray& atomicsJson) {
  std::ostringstream out;
  memsamples::JsonArray json;
  reportPeers(peers, deviceCount, kDriver, out, json, atomicsJson);
  return out.str();
}

TEST(MemoryQueryAtomics, OneDeviceHasNoPairsToAsk) {
  memsamples::JsonArray atomicsJson;
  const std::string text = printedPeers({}, 1, atomicsJson);
  EXPECT_NE(text.find("(one device: no pairs, so no peer access and no peer atomics to ask "
                      "about)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Peer atomics"), std::string::npos) << text;
  EXPECT_TRUE(atomicsJson.empty());
}

TEST(MemoryQueryAtomics, OperationsWithTheSameMaskAreGrouped) {
  AtomicAnswers atomics;
  atomics.answer = CUDA_SUCCESS;
  const unsigned int integers = CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED |
                                CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64;
  atomics.capabilities[indexOf(CU_ATOMIC_OPERATION_INTEGER_ADD)] = integers;
  atomics.capabilities[indexOf(CU_ATOMIC_OPERATION_CAS)] = integers;
  atomics.capabilities[indexOf(CU_ATOMIC_OPERATION_FLOAT_ADD)] = CU_ATOMIC_CAPABILITY_SCALAR_32;

  memsamples::JsonArray atomicsJson;
  const std::string text = printedPeers(twoDevices(atomics), 2, atomicsJson);
  EXPECT_NE(text.find("Peer atomics (cuDeviceGetP2PAtomicCapabilities(accessor, owner)"),
            std::string::npos)
      << text;
  // One row per direction, each with the operations grouped by mask.
  const Grid grouped = {{"integer add, CAS: signed unsigned 32-bit 64-bit; float add: 32-bit"}};
  EXPECT_EQ(rowsLabelled(text, "accessor 0 -> owner 1"), grouped) << text;
  EXPECT_EQ(rowsLabelled(text, "accessor 1 -> owner 0"), grouped) << text;

  const std::string json = atomicsJson.dump();
  EXPECT_NE(json.find("\"integerAdd\": " + std::to_string(integers)), std::string::npos) << json;
  EXPECT_NE(json.find("\"floatAdd\": 8"), std::string::npos) << json;
  EXPECT_NE(json.find("\"accessor\": 1"), std::string::npos) << json;
}

TEST(MemoryQueryAtomics, ARefusalIsShownNotFailed) {
  AtomicAnswers atomics;
  atomics.answer = CUDA_ERROR_NOT_SUPPORTED;
  memsamples::JsonArray atomicsJson;
  const std::string text = printedPeers(twoDevices(atomics), 2, atomicsJson);
  const Grid row = rowsLabelled(text, "accessor 0 -> owner 1");
  ASSERT_EQ(row.size(), 1u) << text;
  ASSERT_EQ(row[0].size(), 1u) << text;
  EXPECT_EQ(row[0][0].rfind("? cuDeviceGetP2PAtomicCapabilities: ", 0), 0u) << text;
  EXPECT_NE(atomicsJson.dump().find("\"queryFailed\""), std::string::npos);
}

TEST(MemoryQueryAtomics, AMissingEntryPointIsNamedOnce) {
  memsamples::JsonArray atomicsJson;
  const std::string text = printedPeers(twoDevices(AtomicAnswers{}), 2, atomicsJson);
  const std::string line =
      "  not asked: the NVIDIA driver (CUDA 13.0) has no cuDeviceGetP2PAtomicCapabilities\n";
  const std::size_t at = text.find(line);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.find(line, at + 1), std::string::npos) << text;
  EXPECT_NE(atomicsJson.dump().find("\"asked\": false"), std::string::npos);
}

TEST(MemoryQueryAtomics, NoPairCanAccessTheOther) {
  std::vector<PeerAnswer> peers = twoDevices(AtomicAnswers{});
  for (PeerAnswer& p : peers)
    p.canAccess = 0;
  memsamples::JsonArray atomicsJson;
  const std::string text = printedPeers(peers, 2, atomicsJson);
  EXPECT_NE(text.find("(no device can access another's memory: no link to ask about)"),
            std::string::npos)
      << text;
  EXPECT_TRUE(atomicsJson.empty());
}

// The row of reportDevice()'s table that answers cuDeviceGetHostAtomicCapabilities.
constexpr const char* kHostRow = "Native atomics on host memory";

// The table reportDevice() prints for @p d.
std::string printedDevice(const DeviceAnswers& d) {
  std::ostringstream out;
  memsamples::JsonArray json;
  reportDevice(d, kDriver, out, json);
  return out.str();
}

TEST(MemoryQueryAtomics, HostRowSaysNoneNativeOrNotAsked) {
  DeviceAnswers answered;
  answered.hostAtomics.answer = CUDA_SUCCESS;  // every mask 0, as the H100 answered for add
  const std::string none = printedDevice(answered);
  EXPECT_EQ(rowsLabelled(none, kHostRow), (Grid{{"none native (of 13 operations asked)"}}))
      << none;

  const std::string missing = printedDevice(DeviceAnswers{});
  EXPECT_EQ(rowsLabelled(missing, kHostRow),
            (Grid{{"not asked: the NVIDIA driver (CUDA 13.0) has no "
                   "cuDeviceGetHostAtomicCapabilities"}}))
      << missing;
}

}  // namespace
