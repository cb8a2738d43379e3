// Test data: what the demo lesson measures, one call (declarations only, never built).
#pragma once

namespace demo {

/// Times one copy of @p bytes from @p source to @p target and prints its bandwidth.
void measureCopy(CUdeviceptr target, CUdeviceptr source, std::size_t bytes);

}  // namespace demo
