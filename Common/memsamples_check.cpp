// The error half of the Common helper: a failed CUresult becomes a CudaError that names the call.
// It is its own file so that a unit test can link a sample's driver code against fake cu*
// functions (cuGetErrorName and cuGetErrorString among them) without the rest of Common.
#include <cstring>

#include "memsamples.hpp"

namespace memsamples {

std::string describeResult(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  // Both lookups work before cuInit(); an unknown value leaves the pointers unset.
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return "CUresult " + std::to_string(static_cast<int>(result)) + " (unknown to this driver)";
  }
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr)
    text = "no description";
  return std::string(name) + " (" + text + ")";
}

void check(CUresult result, const char* call, const char* file, int line) {
  if (result == CUDA_SUCCESS)
    return;
  const char* base = std::strrchr(file, '/');
  throw CudaError(result, std::string(call) + " failed at " + (base ? base + 1 : file) + ":" +
                              std::to_string(line) + ": " + describeResult(result));
}

}  // namespace memsamples
