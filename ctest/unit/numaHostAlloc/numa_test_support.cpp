#include "numa_test_support.hpp"

#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "numa_binding.hpp"

namespace numatest {

std::string whyRealBindingIsUnavailable() {
  if (!memsamples::numa::numaPolicyCallsAvailable())
    return "NUMA is not available in this environment (no NUMA support, or the memory-policy "
           "calls are refused)";
  const memsamples::NodeMemory node0 = memsamples::numa::libnumaNodeMemory()(0);
  if (node0.status != memsamples::NodeMemory::Status::Present || node0.totalBytes == 0) {
    return "node 0 has no memory on this machine";
  }
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* probe = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED)
    return std::string("mmap failed: ") + std::strerror(errno);
  unsigned long mask = 1;
  const long result = mbind(probe, page, MPOL_PREFERRED, &mask, sizeof mask * 8 + 1, 0);
  const int error = errno;
  munmap(probe, page);
  if (result != 0) {
    return std::string("mbind is refused in this environment: ") + std::strerror(error);
  }
  return {};
}

}  // namespace numatest
