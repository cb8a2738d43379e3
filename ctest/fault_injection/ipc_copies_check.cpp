// memsamples_ipc_copies_check <copies> <memMapIPC> [arguments...]
//
// Proves that 07_memMapIPC's verdict depends on its own run only: <copies> runs of the sample
// start at the same moment on the same GPU, each with its own workers, and every one must PASS.
// Each allocates, shares and frees while the others do, so the device's free memory moves under
// all of them; a verdict that compared free memory before and after (as the sample once did)
// fails here, one that asks the driver about its own addresses does not. No socket path or
// folder is shared either: each run's workers are reachable only through their own socket pairs.
// Exit 0 when every run passed; 2 (Skipped) when every run waived.
#include <sys/wait.h>

#include <cerrno>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "logged_process.hpp"

namespace mt = memsamples::test;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " <copies> <memMapIPC> [arguments...]\n";
    return 1;
  }
  try {
    const int copies = std::stoi(argv[1]);
    const std::vector<std::string> args(argv + 2, argv + argc);
    std::vector<std::unique_ptr<mt::OutputLog>> logs;
    std::vector<pid_t> pids;
    for (int i = 0; i < copies; ++i) {
      logs.push_back(std::make_unique<mt::OutputLog>("memsamples_ipc_copy"));
      pids.push_back(mt::startLogged(args, *logs.back()));
    }
    int passed = 0;
    int waived = 0;
    for (int i = 0; i < copies; ++i) {
      int status = 0;
      while (waitpid(pids[static_cast<std::size_t>(i)], &status, 0) < 0 && errno == EINTR) {
      }
      const std::string output = logs[static_cast<std::size_t>(i)]->text();
      const bool exited = WIFEXITED(status);
      const bool pass =
          exited && WEXITSTATUS(status) == 0 && output.find("Result = PASS") != std::string::npos;
      passed += pass ? 1 : 0;
      waived += exited && WEXITSTATUS(status) == 2 ? 1 : 0;
      std::cout << "== copy " << i << " (wait status " << status << ")\n" << output;
      if (!pass)
        std::cout << "FAILED: copy " << i << " did not PASS\n";
    }
    if (waived == copies) {
      std::cout << "every copy waived: nothing to judge here\n";
      return 2;
    }
    const bool ok = passed == copies;
    std::cout << passed << " of " << copies << " copies passed\n"
              << (ok ? "copies at once: PASS\n" : "copies at once: FAIL\n");
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::cout << "error: " << error.what() << '\n';
    return 1;
  }
}
