// Whether a sample's output says that this machine cannot run CUDA programs at all, or not on
// the device asked for: the words of ctest/machine_waiver.cmake, for the C++ checkers of
// 07_memMapIPC. Such a run tests nothing the checker looks for, so the checker exits with 2
// (Skipped), as the GPU test launcher does where there is no driver.
#pragma once

#include <regex>
#include <string>

namespace memsamples::test {

/// True when @p output holds one of the waivers of ctest/machine_waiver.cmake (with or without
/// the "WAIVED: " that runSample() puts before it: a worker reports it to its parent bare).
inline bool saysMachineCannotRunCuda(const std::string& output) {
  static const std::regex waiver(
      "no NVIDIA driver|no usable CUDA device|the NVIDIA driver supports CUDA [0-9.]+, but|"
      "device [0-9]+ is in compute mode|none of the [0-9]+ devices can be used");
  return std::regex_search(output, waiver);
}

}  // namespace memsamples::test
