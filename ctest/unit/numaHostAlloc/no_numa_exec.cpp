// no_numa_exec <program> [arguments...]: runs <program> where the memory-policy system calls are
// refused as Docker's default seccomp profile refuses them (EPERM), so that numaHostAlloc sees "NUMA
// is not available" on any machine. Exit 3 when the filter cannot be installed (or this
// architecture has none written), else whatever <program> does.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "seccomp_filter.hpp"

int main(int argc, char** argv) {
  namespace nt = memsamples::numa_test;
  if (argc < 2) {
    std::fprintf(stderr, "usage: no_numa_exec <program> [arguments...]\n");
    return 3;
  }
  if (nt::kAuditArch == 0) {
    std::fprintf(stderr, "no_numa_exec: no seccomp filter written for this architecture\n");
    return 3;
  }
  if (const int error = nt::blockCalls(nt::kDockerDefault, EPERM); error != 0) {
    std::fprintf(stderr, "no_numa_exec: installing the seccomp filter failed: %s\n",
                 std::strerror(error));
    return 3;
  }
  execv(argv[1], argv + 1);
  std::fprintf(stderr, "no_numa_exec: cannot run %s: %s\n", argv[1], std::strerror(errno));
  return 3;
}
