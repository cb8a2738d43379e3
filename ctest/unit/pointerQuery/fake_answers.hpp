// The answers of a fake cuPointerGetAttributes, shared by the fakes of 11_pointerQuery's unit
// tests: each attribute written in the width cuda.h gives it (booleans one byte, enumerations
// four), as a driver may, so that the lesson's zeroed 64-bit outputs are put to the test.
#pragma once

#include <cuda.h>

#include <cstring>

#include "pointer_classify.hpp"

namespace fake_answers {

/// Writes the bytes of @p value to @p out.
template <typename T>
inline void put(void* out, const T& value) {
  std::memcpy(out, &value, sizeof value);
}

/// One answer of @p f to @p attribute at @p out; false for an attribute it does not know.
inline bool answer(CUpointer_attribute attribute, const pointer_query::PointerFacts& f, void* out) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      put(out, static_cast<unsigned int>(f.memoryType));
      return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      put(out, f.devicePointer);
      return true;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      put(out, f.hostPointer);
      return true;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      put(out, f.context);
      return true;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      put(out, static_cast<bool>(f.isManaged));
      return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      put(out, f.deviceOrdinal);
      return true;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      put(out, f.rangeStart);
      return true;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      put(out, f.rangeSize);
      return true;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      put(out, static_cast<bool>(f.mapped));
      return true;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      put(out, static_cast<unsigned int>(f.handleTypes));
      return true;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      put(out, f.memPool);
      return true;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put(out, static_cast<unsigned int>(f.accessFlags));
      return true;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      put(out, static_cast<bool>(f.legacyIpc));
      return true;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      put(out, static_cast<bool>(f.syncMemops));
      return true;
    default:
      return false;
  }
}

}  // namespace fake_answers
