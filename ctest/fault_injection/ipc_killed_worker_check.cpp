// memsamples_ipc_killed_worker_check <memMapIPC> [arguments...]
//
// Proves what 07_memMapIPC promises when a worker dies mid-run: the run FAILs naming the worker
// and how it died, and the parent still frees everything: it reports its free device memory back
// where it was before the workers started. Run with the preload library and
// MEMSAMPLES_FAIL_KILL_ONCE, which kills the first worker that makes the named import call.
// Exit 0 when all of that held.
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
#include <vector>

extern char** environ;

namespace {

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
    // Measured by the parent itself after the workers ended and its buffers were freed, before
    // it exits (once it has exited, the driver would free everything anyway).
    expect(std::regex_search(output, std::regex("Free device memory: .* now \\(back\\)")),
           "the parent should find its free device memory back where it started");
    std::cout << (ok ? "killed worker: PASS\n" : "killed worker: FAIL\n");
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::cout << "error: " << error.what() << '\n';
    return 1;
  }
}
