// A stand-in for a sample's first steps, built with Common as every sample is: load the driver,
// pick a device, and require an entry point newer than some drivers of the toolkit's major
// version (cuMemPrefetchBatchAsync, which 03_managedAdvisePrefetch calls). Against the stand-in
// driver of ctest/old_driver/same_major_libcuda.cpp, which lacks it, it must waive naming it and
// both versions, not crash calling a null weak import.
#include <iostream>

#include "memsamples.hpp"

namespace ms = memsamples;

int main(int argc, char** argv) {
  ms::CommonOptions common;
  ms::CommandLine commandLine("entryPointSample",
                              "Waives where the driver lacks cuMemPrefetchBatchAsync.");
  commandLine.addCommonOptions(common, /*timed=*/false);
  return ms::runSample(commandLine, common, argc, argv, [&](ms::Report& report) {
    ms::checkDriverInit(cuInit(0));
    const CUdevice device = ms::selectDevice(common.device);
    ms::requireEntryPoint(cuMemPrefetchBatchAsync, "cuMemPrefetchBatchAsync");
    report.out() << "Device " << ms::deviceOrdinal(device)
                 << ": the driver has cuMemPrefetchBatchAsync\n";
    return ms::Verdict::Pass;
  });
}
