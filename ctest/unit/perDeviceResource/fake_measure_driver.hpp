// How the measure test controls and inspects fake_measure_driver.cpp: the few cu* functions that
// perDeviceResource_measure.cpp and memsamples_check.cpp call, defined here instead of libcuda
// (a link seam), so that the sample's real measuring code runs on a machine without a GPU.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fake_measure {

/// What the fake driver saw and does; reset() it at the start of every test.
struct Driver {
  int streamSynchronizeCalls = 0;             ///< cuStreamSynchronize, failed ones included.
  std::vector<CUstream> synchronizedStreams;  ///< The streams they were given.
  int failStreamSynchronizeCall = 0;          ///< This call (1-based) fails; 0: none does.
  int memGetInfoCalls = 0;                    ///< cuMemGetInfo.
  cuuint64_t releaseThreshold = 0;            ///< The one pool's CU_MEMPOOL_ATTR_RELEASE_THRESHOLD.
  std::vector<cuuint64_t> thresholdsSet;      ///< Every value cuMemPoolSetAttribute was given.
  std::vector<std::size_t> trimmedTo;         ///< Every cuMemPoolTrimTo.
  std::vector<CUmemoryPool> poolsUsed;        ///< The pool of every pool call.
};

/// The fake driver's state (one per process, like a driver).
Driver& driver();
/// Forgets everything; the release threshold starts at @p threshold.
void reset(cuuint64_t threshold = 0);

}  // namespace fake_measure
