// memsamples_ipc_killed_worker_check <memMapIPC> [arguments...]
//
// Proves what 07_memMapIPC promises when a worker dies mid-run: the run FAILs naming the worker
// and how it died, and the parent still frees everything, so device 0's free memory is back to
// where it was before the run. Run with the preload library and MEMSAMPLES_FAIL_KILL_ONCE, which
// kills the first worker that imports an allocation. Exit 0 when all of that held.
#include <cuda.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "memsamples.hpp"

extern char** environ;

namespace ms = memsamples;

namespace {

std::size_t freeMemory() {
  std::size_t freeBytes = 0, totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  return freeBytes;
}

/// Runs @p argv with stdout and stderr in @p logPath; its wait status.
int runLogged(const std::vector<std::string>& args, const std::string& logPath) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> argv;
  for (const std::string& arg : args)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0)
    throw std::runtime_error("posix_spawn " + args[0] + " failed: " + std::strerror(error));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " <memMapIPC> [arguments...]\n";
    return 1;
  }
  try {
    ms::checkDriverInit(cuInit(0));
    CUdevice device = 0;
    ms::check(cuDeviceGet(&device, 0), "cuDeviceGet");
    ms::OwnedContext context;  // only to ask for free memory; its own size is the same throughout
    ms::check(cuCtxCreate(context.out(), nullptr, 0, device), "cuCtxCreate");
    const std::size_t before = freeMemory();
    if (const char* marker = std::getenv("MEMSAMPLES_FAIL_KILL_ONCE"))
      std::remove(marker);  // left by an earlier run: then no worker would die in this one

    const std::string log = "/tmp/memsamples_ipc_killed_worker." + std::to_string(getpid());
    const int status = runLogged(std::vector<std::string>(argv + 1, argv + argc), log);
    std::ifstream file(log);
    const std::string output((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
    std::remove(log.c_str());
    std::cout << output;

    bool ok = true;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 1) {
      std::cout << "FAILED: expected the sample to exit with 1 (FAIL), got wait status " << status
                << '\n';
      ok = false;
    }
    if (!std::regex_search(output,
                           std::regex("worker [0-9]+ \\(pid [0-9]+\\) killed by signal 9"))) {
      std::cout << "FAILED: the sample did not name the killed worker and its signal\n";
      ok = false;
    }
    // The dead worker's context is torn down by the driver as its process ends; allow it a moment.
    std::size_t after = freeMemory();
    for (int i = 0; i < 50 && after < before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      after = freeMemory();
    }
    std::cout << "free device memory: " << ms::formatBytes(before) << " before the run, "
              << ms::formatBytes(after) << " after it"
              << (after >= before ? " (back to where it started)\n" : " (NOT back)\n");
    ok &= after >= before;
    std::cout << (ok ? "killed worker: PASS\n" : "killed worker: FAIL\n");
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::cout << "error: " << error.what() << '\n';
    return 1;
  }
}
