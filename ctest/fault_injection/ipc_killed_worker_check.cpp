// memsamples_ipc_killed_worker_check <memMapIPC> [arguments...]
//
// Proves what 07_memMapIPC promises when a worker dies mid-run: the run FAILs naming the worker
// and how it died, and the parent still frees everything: the driver no longer finds any address
// of the path in flight mapped in the parent (cuPointerGetAttributes), which the parent proves
// and prints after the error. Free device memory is not looked at: it is the whole device's,
// and other processes on a shared GPU change it. Run with the preload library and
// MEMSAMPLES_FAIL_KILL_ONCE, which kills the first worker that makes the named import call.
// Exit 0 when all of that held; 2 (Skipped) when the sample waived because this machine cannot
// run CUDA programs (machine_waiver.hpp: an old driver, no usable device).
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "logged_process.hpp"
#include "machine_waiver.hpp"

namespace mt = memsamples::test;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " <memMapIPC> [arguments...]\n";
    return 1;
  }
  try {
    if (const char* marker = std::getenv("MEMSAMPLES_FAIL_KILL_ONCE"))
      std::remove(marker);  // left by an earlier run: then no worker would die in this one
    const mt::OutputLog log("memsamples_ipc_killed_worker");
    const pid_t pid = mt::startLogged(std::vector<std::string>(argv + 1, argv + argc), log);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string output = log.text();
    std::cout << output;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && mt::saysMachineCannotRunCuda(output))
      return 2;  // no worker ran: nothing to check here

    bool ok = true;
    const auto expect = [&](bool holds, const std::string& what) {
      if (!holds)
        std::cout << "FAILED: " << what << '\n';
      ok &= holds;
    };
    expect(WIFEXITED(status) && WEXITSTATUS(status) == 1,
           "the sample should exit with 1 (FAIL); wait status " + std::to_string(status));
    expect(
        std::regex_search(output, std::regex("worker [0-9]+ \\(pid [0-9]+\\) killed by signal 9")),
        "the sample should name the killed worker and its signal");
    // Proved by the parent itself after the workers ended and its buffers were freed, before it
    // exits (once it has exited, the driver would free everything anyway).
    expect(output.find("After the error, this path's memory is released (proved") !=
               std::string::npos,
           "the parent should prove that the path in flight released its memory");
    expect(output.find("NOT released") == std::string::npos,
           "no allocation of the parent may be left after the error");
    std::cout << (ok ? "killed worker: PASS\n" : "killed worker: FAIL\n");
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::cout << "error: " << error.what() << '\n';
    return 1;
  }
}
