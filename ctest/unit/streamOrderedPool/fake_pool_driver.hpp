// A fake pool for pool_attributes.cpp's link-seam test: attribute values and the calls made.
#pragma once

#include <cuda.h>

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace fake_pool {

struct Driver {
  CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(0x1000);  ///< The one pool it knows.
  std::map<CUmemPool_attribute, cuuint64_t> counters;  ///< Threshold and the four counters.
  std::map<CUmemPool_attribute, int> rules;            ///< The three reuse rules.
  /// An attribute whose get and set fail with CUDA_ERROR_INVALID_VALUE (default: none).
  std::optional<CUmemPool_attribute> failAttribute;
  std::vector<std::pair<CUmemoryPool, CUmemPool_attribute>> gets;  ///< Every get, in order.
  std::vector<std::pair<CUmemoryPool, CUmemPool_attribute>> sets;  ///< Every set, in order.
};

Driver& driver();  ///< The fake; tests assign `driver() = Driver{}` to start clean.

}  // namespace fake_pool
