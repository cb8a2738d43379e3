// A fake cuPointerGetAttributes for the unit tests of 11_pointerQuery's classifyPointer(): it
// answers from a table of made-up allocations, and for any other address as the real driver
// does (CUDA 13.0, H100): CUDA_SUCCESS, MAPPED = 0, and the other outputs left as they were.
#pragma once

#include <cuda.h>

#include <map>

#include "pointer_classify.hpp"

namespace fake_pointer {

/// What the fake knows.
struct Driver {
  std::map<CUdeviceptr, pointer_query::PointerFacts> known;  ///< Answers by exact address.
  CUresult answer = CUDA_SUCCESS;  ///< What every call returns (an error: nothing is written).
  int calls = 0;                   ///< cuPointerGetAttributes calls made.
};

Driver& driver();  ///< The one fake, reset by each test.

}  // namespace fake_pointer
