/**
 * @file fake_peer_driver.hpp
 * @brief How peer_access_test.cpp controls and inspects fake_peer_driver.cpp: the cu* functions
 *        that 05's peer_context.cpp and Common's memsamples_cuda.cpp / memsamples_check.cpp call,
 *        defined here instead of libcuda (a link seam), behind a fake machine of primary
 *        contexts, a context stack and the peer access each context has enabled.
 *
 * cuCtxEnablePeerAccess and cuCtxDisablePeerAccess act on the current context (the top of the
 * stack) and answer as the documentation says: ALREADY_ENABLED for a second enable, NOT_ENABLED
 * for a disable of access that is not enabled, and TOO_MANY_PEERS when the current context
 * already has kPeerLimit peers, as a GPU without NVSwitch does. The machine has 2 devices unless
 * a test asks for more (setDeviceCount()). It is global, like a driver; reset() it at the start
 * of every test.
 */
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

namespace fake_peer {

/// The peers one context may access at once: 8, a GPU's limit without NVSwitch.
inline constexpr int kPeerLimit = 8;

/// Forgets every context, enabled access, recorded call and planned failure; 2 devices.
void reset();
/// The machine has @p count devices (call it after reset()).
void setDeviceCount(int count);
/// The most peers any one context could access at the same time since reset().
int mostPeersAtOnce();
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
