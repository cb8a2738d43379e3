// How 05_p2pMemMap judges what cuMemGetAccess reports for a VMM range: every mapping device must
// have the read-write access that cuMemSetAccess granted.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "p2p_logic.hpp"

namespace p2p = memsamples::p2p;

TEST(AccessFlagsName, NamesTheThreeFlagsAndNumbersTheRest) {
  EXPECT_EQ(p2p::accessFlagsName(CU_MEM_ACCESS_FLAGS_PROT_READWRITE), "read-write");
  EXPECT_EQ(p2p::accessFlagsName(CU_MEM_ACCESS_FLAGS_PROT_READ), "read");
  EXPECT_EQ(p2p::accessFlagsName(CU_MEM_ACCESS_FLAGS_PROT_NONE), "none");
  EXPECT_EQ(p2p::accessFlagsName(42), "flags 42");
}

TEST(AccessProblems, EveryMappingDeviceMustBeReadWrite) {
  const std::vector<p2p::DeviceAccessView> views = {
      {0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, ""},
      {1, CU_MEM_ACCESS_FLAGS_PROT_NONE, ""},  // not a mapping device: not judged
      {2, CU_MEM_ACCESS_FLAGS_PROT_READ, ""},
      {3, std::nullopt, "CUDA_ERROR_INVALID_DEVICE (invalid device ordinal)"}};
  EXPECT_TRUE(p2p::accessProblems({0}, views).empty());
  EXPECT_EQ(p2p::accessProblems({0, 2, 3, 5}, views),
            (std::vector<std::string>{
                "mapping device 2 has read access (cuMemGetAccess), not the read-write access "
                "cuMemSetAccess granted",
                "mapping device 3: cuMemGetAccess failed (CUDA_ERROR_INVALID_DEVICE (invalid "
                "device ordinal))",
                "mapping device 5 was not asked (cuMemGetAccess) for its access"}));
}
