// --inject-failure: parsing, validation against the stripe count, and the rollback scenarios.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "striped_vmm_logic.hpp"
#include "test_support.hpp"

namespace ms = memsamples;
using memsamples::test::messageOf;
namespace vmm = memsamples::vmm;
using vmm::VmmStep;

TEST(ParseFaultInjection, ReadsEveryStep) {
  EXPECT_EQ(vmm::parseFaultInjection("reserve"), (vmm::FaultInjection{VmmStep::Reserve, 0}));
  EXPECT_EQ(vmm::parseFaultInjection("reserve:0"), (vmm::FaultInjection{VmmStep::Reserve, 0}));
  EXPECT_EQ(vmm::parseFaultInjection("create:3"), (vmm::FaultInjection{VmmStep::Create, 3}));
  EXPECT_EQ(vmm::parseFaultInjection("map:0"), (vmm::FaultInjection{VmmStep::Map, 0}));
  EXPECT_EQ(vmm::parseFaultInjection("map"), (vmm::FaultInjection{VmmStep::Map, 0}));
  EXPECT_EQ(vmm::parseFaultInjection("release:63"), (vmm::FaultInjection{VmmStep::Release, 63}));
  EXPECT_EQ(vmm::parseFaultInjection("access"), (vmm::FaultInjection{VmmStep::SetAccess, 0}));
  EXPECT_EQ(vmm::parseFaultInjection("access:0"), (vmm::FaultInjection{VmmStep::SetAccess, 0}));
}

TEST(ParseFaultInjection, RejectsEverythingElseNamingTheOption) {
  const std::string forms =
      "expected reserve, create:K, map:K, release:K or access (K = stripe index)";
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::parseFaultInjection("unmap:1"); }),
            "invalid value 'unmap:1' for --inject-failure: " + forms);
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::parseFaultInjection("Map:1"); }),
            "invalid value 'Map:1' for --inject-failure: " + forms);
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::parseFaultInjection(""); }),
            "invalid value '' for --inject-failure: " + forms);
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::parseFaultInjection("access:1"); }),
            "--inject-failure access:1: access happens once per range; only index 0 exists");
  EXPECT_EQ(messageOf<ms::UsageError>([] { vmm::parseFaultInjection("reserve:2"); }),
            "--inject-failure reserve:2: reserve happens once per range; only index 0 exists");
  for (const char* bad : {"map:", "map:x", "map:-1", "map:1:2", "create:99999999999"}) {
    const std::string message = messageOf<ms::UsageError>([&] { vmm::parseFaultInjection(bad); });
    EXPECT_EQ(message.rfind("--inject-failure ", 0) == 0 ||
                  message.find(" for --inject-failure ") != std::string::npos,
              true)
        << bad << ": " << message;
    EXPECT_NE(message, "(no exception)") << bad;
  }
}

TEST(FormatFaultInjection, RoundTrips) {
  for (const char* text : {"reserve", "create:0", "create:5", "map:7", "release:2", "access"}) {
    EXPECT_EQ(vmm::formatFaultInjection(vmm::parseFaultInjection(text)), text);
  }
}

TEST(ValidateFaultInjection, TheStripeMustExist) {
  EXPECT_NO_THROW(vmm::validateFaultInjection({VmmStep::Map, 7}, 8));
  EXPECT_NO_THROW(vmm::validateFaultInjection({VmmStep::SetAccess, 0}, 1));
  EXPECT_NO_THROW(vmm::validateFaultInjection({VmmStep::Reserve, 0}, 1));
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              vmm::validateFaultInjection({VmmStep::Map, 8}, 8);
            }),
            "--inject-failure map:8 names stripe 8, but the range has 8 stripes (valid: 0..7)");
  EXPECT_EQ(messageOf<ms::UsageError>([] {
              vmm::validateFaultInjection({VmmStep::Create, 1}, 1);
            }),
            "--inject-failure create:1 names stripe 1, but the range has 1 stripe (valid: 0)");
}

TEST(FormatFaultInjection, RefusesTheStepsThatCannotBeInjected) {
  // parseFaultInjection() has no spelling for unmap and address free, so neither has format.
  for (const VmmStep step : {VmmStep::Unmap, VmmStep::AddressFree}) {
    try {
      vmm::formatFaultInjection({step, 0});
      ADD_FAILURE() << "formatted " << vmm::stepCallName(step);
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()),
                std::string("formatFaultInjection: ") + vmm::stepCallName(step) +
                    " is not a build step; only reserve, create, map, release and access can be "
                    "injected");
    }
  }
}

TEST(InjectableSteps, AreExactlyTheBuildSteps) {
  for (const VmmStep step :
       {VmmStep::Reserve, VmmStep::Create, VmmStep::Map, VmmStep::Release, VmmStep::SetAccess}) {
    EXPECT_TRUE(vmm::isInjectableStep(step)) << vmm::stepCallName(step);
  }
  EXPECT_FALSE(vmm::isInjectableStep(VmmStep::Unmap));
  EXPECT_FALSE(vmm::isInjectableStep(VmmStep::AddressFree));
}

TEST(StepNames, AreTheDriverCalls) {
  EXPECT_STREQ(vmm::stepCallName(VmmStep::Reserve), "cuMemAddressReserve");
  EXPECT_STREQ(vmm::stepCallName(VmmStep::Create), "cuMemCreate");
  EXPECT_STREQ(vmm::stepCallName(VmmStep::Map), "cuMemMap");
  EXPECT_STREQ(vmm::stepCallName(VmmStep::Release), "cuMemRelease");
  EXPECT_STREQ(vmm::stepCallName(VmmStep::SetAccess), "cuMemSetAccess");
  EXPECT_STREQ(vmm::stepCallName(VmmStep::Unmap), "cuMemUnmap");
  EXPECT_STREQ(vmm::stepCallName(VmmStep::AddressFree), "cuMemAddressFree");
  EXPECT_TRUE(vmm::isPerStripeStep(VmmStep::Create));
  EXPECT_TRUE(vmm::isPerStripeStep(VmmStep::Map));
  EXPECT_TRUE(vmm::isPerStripeStep(VmmStep::Release));
  EXPECT_FALSE(vmm::isPerStripeStep(VmmStep::Reserve));
  EXPECT_FALSE(vmm::isPerStripeStep(VmmStep::SetAccess));
}

TEST(RollbackScenarios, FirstMiddleAndLastStripeOfEachStep) {
  std::vector<std::string> names;
  for (const auto& fault : vmm::rollbackScenarios(8))
    names.push_back(vmm::formatFaultInjection(fault));
  EXPECT_EQ(names, (std::vector<std::string>{"reserve", "create:0", "create:4", "create:7", "map:0",
                                             "map:4", "map:7", "release:4", "access"}));
}

TEST(RollbackScenarios, SmallCountsHaveNoDuplicates) {
  std::vector<std::string> names;
  for (const auto& fault : vmm::rollbackScenarios(1))
    names.push_back(vmm::formatFaultInjection(fault));
  EXPECT_EQ(names,
            (std::vector<std::string>{"reserve", "create:0", "map:0", "release:0", "access"}));
  names.clear();
  for (const auto& fault : vmm::rollbackScenarios(2))
    names.push_back(vmm::formatFaultInjection(fault));
  EXPECT_EQ(names, (std::vector<std::string>{"reserve", "create:0", "create:1", "map:0", "map:1",
                                             "release:1", "access"}));
  EXPECT_THROW(vmm::rollbackScenarios(0), std::invalid_argument);
}

TEST(RollbackScenarios, AreAllValidForTheirStripeCount) {
  for (int stripes = 1; stripes <= 70; ++stripes) {
    for (const auto& fault : vmm::rollbackScenarios(stripes)) {
      EXPECT_NO_THROW(vmm::validateFaultInjection(fault, stripes))
          << stripes << " " << vmm::formatFaultInjection(fault);
    }
  }
}
