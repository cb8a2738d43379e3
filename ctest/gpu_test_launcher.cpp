// gpu_test_launcher <sample> [arguments...]
//
// Runs a GPU sample under CTest. A program linked against the CUDA driver cannot even start on a
// machine without libcuda.so.1 (the dynamic loader refuses it before main), which CTest would
// report as a failure. This launcher first checks that the driver library can be loaded; if it
// cannot, it prints the reason as "WAIVED: ..." and exits with 2, which the tests map to Skipped.
// Otherwise it replaces itself with the sample, so the sample's own output and exit code are what
// CTest sees.
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <sample> [arguments...]\n", argv[0]);
    return 1;
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* reason = dlerror();
    std::printf("WAIVED: no NVIDIA driver on this machine: libcuda.so.1 cannot be loaded (%s)\n",
                reason ? reason : "unknown reason");
    return 2;
  }
  dlclose(driver);
  std::fflush(stdout);
  execv(argv[1], argv + 1);
  std::fprintf(stderr, "gpu_test_launcher: cannot run %s: %s\n", argv[1], std::strerror(errno));
  return 1;
}
