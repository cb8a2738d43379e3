// The cu* functions that pointer_classify.cpp and memsamples_check.cpp call. cuda.h comes first so
// that its versioned names rename these definitions exactly as they rename the callers' calls.
#include <cuda.h>

#include <cstdint>
#include <cstring>

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

namespace {

/// Writes @p size bytes of @p value to @p out: the driver's width for each attribute.
template <typename T>
void put(void* out, const T& value) {
  std::memcpy(out, &value, sizeof value);
}

/// One answer in the width cuda.h gives it (booleans as one byte, enumerations as 4).
void answer(CUpointer_attribute attribute, const pointer_query::PointerFacts& f, void* out) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      put(out, static_cast<unsigned int>(f.memoryType));
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      put(out, f.devicePointer);
      break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      put(out, f.hostPointer);
      break;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      put(out, f.context);
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      put(out, static_cast<bool>(f.isManaged));
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      put(out, f.deviceOrdinal);
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      put(out, f.rangeStart);
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      put(out, f.rangeSize);
      break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      put(out, static_cast<bool>(f.mapped));
      break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      put(out, static_cast<unsigned int>(f.handleTypes));
      break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      put(out, f.memPool);
      break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put(out, static_cast<unsigned int>(f.accessFlags));
      break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      put(out, static_cast<bool>(f.legacyIpc));
      break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      put(out, static_cast<bool>(f.syncMemops));
      break;
    default:
      break;
  }
}

}  // namespace

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
