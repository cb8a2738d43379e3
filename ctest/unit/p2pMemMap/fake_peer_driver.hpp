/**
 * @file fake_peer_driver.hpp
 * @brief How peer_access_test.cpp controls and inspects fake_peer_driver.cpp: the cu* functions
 *        that 05's peer_context.cpp and Common's memsamples_cuda.cpp / memsamples_check.cpp call,
 *        defined here instead of libcuda (a link seam), behind a fake machine of primary
 *        contexts, a context stack and the peer access each context has enabled.
 *
 * cuCtxEnablePeerAccess and cuCtxDisablePeerAccess act on the current context (the top of the
 * stack) and answer as the documentation says: ALREADY_ENABLED for a second enable, NOT_ENABLED
 * for a disable of access that is not enabled. The machine is global, like a driver; reset() it
 * at the start of every test.
 */
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

namespace fake_peer {

/// Forgets every context, enabled access, recorded call and planned failure.
void reset();
/// The @p nth call (1-based) of @p function returns @p result and changes nothing.
void failCall(const std::string& function, int nth, CUresult result);
/// How often @p function was called since reset().
int callCount(const std::string& function);
/// Another part of the process enabled @p accessor's access to @p owner's allocations.
void enableElsewhere(CUcontext accessor, CUcontext owner);
/// Whether @p accessor may use @p owner's allocations now.
bool accessEnabled(CUcontext accessor, CUcontext owner);
/// The contexts pushed and not popped, oldest first.
const std::vector<CUcontext>& contextStack();
/// The current context each cuCtxDisablePeerAccess was called in, in order.
const std::vector<CUcontext>& disabledFrom();

}  // namespace fake_peer
