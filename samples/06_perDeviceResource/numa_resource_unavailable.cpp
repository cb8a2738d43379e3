// Built instead of numa_resource.cpp when libnuma (and so 04's binding library) is missing.
#include "numa_resource.hpp"

namespace memsamples::resource {

NumaResourceResult makeNumaHostResource(CUcontext, std::function<void(const std::string&)>) {
  NumaResourceResult result;
  result.unavailableReason =
      "this build has no NUMA support: libnuma was not found at configure time "
      "(apt-get install libnuma-dev and configure again)";
  return result;
}

}  // namespace memsamples::resource
