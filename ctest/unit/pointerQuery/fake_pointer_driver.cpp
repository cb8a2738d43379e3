// The cu* functions that pointer_classify.cpp and memsamples_check.cpp call. cuda.h comes first so
// that its versioned names rename these definitions exactly as they rename the callers' calls.
#include <cuda.h>

#include <cstdint>
#include <cstring>

#include "fake_answers.hpp"
#include "fake_pointer_driver.hpp"

namespace fake_pointer {

Driver& driver() {
  static Driver instance;
  return instance;
}

}  // namespace fake_pointer

using fake_pointer::driver;

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT" : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_CONTEXT ? "invalid device context" : "unknown error";
  return CUDA_SUCCESS;
}

using fake_answers::answer;
using fake_answers::put;

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute* attributes, void** data,
                                        CUdeviceptr ptr) {
  fake_pointer::Driver& fake = driver();
  ++fake.calls;
  if (fake.answer != CUDA_SUCCESS)
    return fake.answer;

  const auto found = fake.known.find(ptr);
  for (unsigned int i = 0; i < numAttributes; ++i) {
    if (found != fake.known.end()) {
      answer(attributes[i], found->second, data[i]);
      continue;
    }
    // An address nobody allocated: MAPPED says 0; everything else is left as it was.
    if (attributes[i] == CU_POINTER_ATTRIBUTE_MAPPED)
      put(data[i], false);
  }
  return CUDA_SUCCESS;
}
