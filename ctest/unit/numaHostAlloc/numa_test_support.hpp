// Shared by the tests that bind real memory: whether this environment lets them.
#pragma once

#include <string>

namespace numatest {

/// Empty when this process can bind memory to node 0 with mbind(); otherwise why not (libnuma
/// unavailable, node 0 without memory, or mbind blocked, e.g. by a container's seccomp profile),
/// for GTEST_SKIP. CI machines and VMs bind for real; this only keeps the tests honest elsewhere.
std::string whyRealBindingIsUnavailable();

}  // namespace numatest
