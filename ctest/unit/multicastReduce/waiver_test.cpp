// Which results of the multicast calls waive the run (they describe the system) and which fail
// it (they describe the sample): systemWaiver() on every documented pair, and on the rest.
#include <gtest/gtest.h>

#include <string>

#include "multicast_plan.hpp"

namespace mc = memsamples::multicast;

namespace {

TEST(MulticastSystemWaiver, CreateOutOfResourcesNamesTheCallAndTheResult) {
  EXPECT_EQ(mc::systemWaiver("cuMulticastCreate", CUDA_ERROR_OUT_OF_MEMORY),
            "cuMulticastCreate returned CUDA_ERROR_OUT_OF_MEMORY: too few resources are left "
            "for multicast on this GPU or its NVLink fabric, which other programs share; this "
            "machine cannot run the sample now");
}

TEST(MulticastSystemWaiver, EveryDocumentedResultWaives) {
  const struct {
    const char* call;
    CUresult result;
    const char* name;
  } documented[] = {
      {"cuMulticastGetGranularity", CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
      {"cuMulticastGetGranularity", CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
      {"cuMulticastCreate", CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
      {"cuMulticastCreate", CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
      {"cuMulticastCreate", CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
      {"cuMulticastAddDevice", CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
      {"cuMulticastAddDevice", CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
      {"cuMulticastAddDevice", CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
      {"cuMulticastBindMem", CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY"},
      {"cuMulticastBindMem", CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
      {"cuMulticastBindMem", CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
      {"cuMulticastBindAddr", CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY"},
      {"cuMulticastBindAddr", CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
      {"cuMulticastBindAddr", CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
      {"cuMemMap", CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
      {"cuMemMap", CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
  };
  for (const auto& pair : documented) {
    const std::string waiver = mc::systemWaiver(pair.call, pair.result);
    EXPECT_EQ(waiver.rfind(std::string(pair.call) + " returned " + pair.name + ": ", 0), 0u)
        << pair.call << " " << pair.name << ": " << waiver;
    EXPECT_NE(waiver.find("; this machine cannot run the sample now"), std::string::npos);
  }
}

TEST(MulticastSystemWaiver, BothBindCallsWaiveAlike) {
  // Binding by address (--bind-by-address) meets the same system as binding by handle: the
  // same results waive, with the call that returned them named.
  for (const CUresult result : {CUDA_ERROR_SYSTEM_NOT_READY, CUDA_ERROR_NOT_PERMITTED,
                                CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_OUT_OF_MEMORY,
                                CUDA_ERROR_ILLEGAL_STATE, CUDA_ERROR_INVALID_VALUE}) {
    const std::string byHandle = mc::systemWaiver("cuMulticastBindMem", result);
    const std::string byAddress = mc::systemWaiver("cuMulticastBindAddr", result);
    EXPECT_EQ(byHandle.empty(), byAddress.empty()) << result;
    if (!byHandle.empty()) {
      EXPECT_EQ(byAddress.substr(std::string("cuMulticastBindAddr").size()),
                byHandle.substr(std::string("cuMulticastBindMem").size()));
    }
  }
}

TEST(MulticastSystemWaiver, WhatTheSampleGotWrongStillFails) {
  // Bad arguments, and results a call does not document, are errors of the run.
  EXPECT_EQ(mc::systemWaiver("cuMulticastBindMem", CUDA_SUCCESS), "");
  EXPECT_EQ(mc::systemWaiver("cuMulticastBindMem", CUDA_ERROR_INVALID_VALUE), "");
  EXPECT_EQ(mc::systemWaiver("cuMulticastCreate", CUDA_ERROR_INVALID_DEVICE), "");
  EXPECT_EQ(mc::systemWaiver("cuMulticastCreate", CUDA_ERROR_SYSTEM_NOT_READY), "");
  EXPECT_EQ(mc::systemWaiver("cuMulticastAddDevice", CUDA_ERROR_ILLEGAL_STATE), "");
  EXPECT_EQ(mc::systemWaiver("cuMulticastGetGranularity", CUDA_ERROR_OUT_OF_MEMORY), "");
  EXPECT_EQ(mc::systemWaiver("cuMemMap", CUDA_ERROR_INVALID_VALUE), "");
  // Out of memory or in an illegal state while binding or mapping: a wrong size, offset or order
  // of the sample's own calls can cause it, so a bug there must not become a waiver.
  EXPECT_EQ(mc::systemWaiver("cuMulticastBindAddr", CUDA_ERROR_INVALID_VALUE), "");
  EXPECT_EQ(mc::systemWaiver("cuMulticastBindAddr", CUDA_ERROR_INVALID_DEVICE), "");
  for (const char* call : {"cuMulticastBindMem", "cuMulticastBindAddr", "cuMemMap"}) {
    EXPECT_EQ(mc::systemWaiver(call, CUDA_ERROR_OUT_OF_MEMORY), "") << call;
    EXPECT_EQ(mc::systemWaiver(call, CUDA_ERROR_ILLEGAL_STATE), "") << call;
  }
  // Calls whose failures are the sample's: the creation of its own memory, the access rights.
  EXPECT_EQ(mc::systemWaiver("cuMemCreate", CUDA_ERROR_OUT_OF_MEMORY), "");
  EXPECT_EQ(mc::systemWaiver("cuMemSetAccess", CUDA_ERROR_NOT_SUPPORTED), "");
  EXPECT_EQ(mc::systemWaiver("cuMulticastUnbind", CUDA_ERROR_ILLEGAL_STATE), "");
}

}  // namespace
