// memsamples_ipc_parent_death_check <memMapIPC> [arguments...]
//
// Proves what 07_memMapIPC promises when the parent dies mid-run: its workers die too
// (PR_SET_PDEATHSIG), so no worker is left holding imported GPU memory or waiting forever on a
// socket. Starts the sample with a run long enough to be killed in, waits until all its workers
// (--workers, default 2) are child processes with the GPU open (a /dev/nvidia* descriptor) and
// 1 s more, kills the parent with SIGKILL (no destructor or handler of its own can run), and
// requires every worker to be gone within 5 s. Exit 0 when that held; 2 (Skipped) when the sample
// waived before it started a worker.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "logged_process.hpp"

namespace mt = memsamples::test;

namespace {

using Clock = std::chrono::steady_clock;

/// The field after the command name in /proc/<pid>/stat: {state, parent pid}; {0, 0} if gone.
std::pair<char, pid_t> stateAndParent(pid_t pid) {
  const std::string stat = mt::readTextFile("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t end = stat.rfind(')');  // the name, in parentheses, may hold anything
  if (end == std::string::npos)
    return {0, 0};
  std::istringstream fields(stat.substr(end + 1));
  char state = 0;
  pid_t parent = 0;
  fields >> state >> parent;
  return {state, parent};
}

/// The processes whose parent is @p pid (a scan of /proc/<n>/stat).
std::set<pid_t> childrenOf(pid_t pid) {
  std::set<pid_t> children;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t candidate = static_cast<pid_t>(std::stol(name));
    if (stateAndParent(candidate).second == pid)
      children.insert(candidate);
  }
  return children;
}

/// True when @p pid has a descriptor of an NVIDIA device open: its CUDA driver is initialized.
bool hasGpuOpen(pid_t pid) {
  std::error_code error;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
    const std::string target = std::filesystem::read_symlink(fd.path(), error).string();
    if (target.rfind("/dev/nvidia", 0) == 0)
      return true;
  }
  return false;
}

/// The --workers value among @p args, else the sample's default (2).
std::size_t workerCount(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--workers")
      return static_cast<std::size_t>(std::stoul(args[i + 1]));
  }
  return 2;
}

/// True while @p pid exists and is not a zombie (a dead child that nobody has reaped yet: in a
/// container, the process that adopts orphans may never reap them).
bool running(pid_t pid) {
  const char state = stateAndParent(pid).first;
  return state != 0 && state != 'Z';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " <memMapIPC> [arguments...]\n";
    return 1;
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  pid_t parent = -1;
  int exitCode = 1;
  try {
    const mt::OutputLog log("memsamples_ipc_parent_death");
    parent = mt::startLogged(args, log);

    // Every worker is a child process of the parent with the GPU open; the parent's own report
    // comes only at the end of the run.
    const std::size_t expected = workerCount(args);
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    std::set<pid_t> workers;
    for (;;) {
      int status = 0;
      if (waitpid(parent, &status, WNOHANG) == parent) {
        parent = -1;                                          // reaped: nothing to kill
        if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {  // waived: nothing to test here
          std::cout << log.text();
          exitCode = 2;
          break;
        }
        throw std::runtime_error(
            "the sample ended before its workers ran (make the run longer):\n" + log.text());
      }
      workers = childrenOf(parent);
      std::size_t ready = 0;
      for (const pid_t worker : workers)
        ready += hasGpuOpen(worker) ? 1 : 0;
      if (workers.size() == expected && ready == expected)
        break;
      if (Clock::now() > deadline)
        throw std::runtime_error("after 60 s, " + std::to_string(ready) + " of " +
                                 std::to_string(expected) + " workers have the GPU open:\n" +
                                 log.text());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (exitCode != 2) {
      std::this_thread::sleep_for(std::chrono::seconds(1));  // their imports and kernels run
      kill(parent, SIGKILL);
      int status = 0;
      while (waitpid(parent, &status, 0) < 0 && errno == EINTR) {
      }
      parent = -1;
      std::cout << log.text() << "parent killed with SIGKILL while its " << workers.size()
                << " workers ran with the GPU open\n";

      std::set<pid_t> left = workers;
      const auto gone = Clock::now() + std::chrono::seconds(5);
      while (!left.empty() && Clock::now() < gone) {
        for (auto it = left.begin(); it != left.end();)
          it = running(*it) ? std::next(it) : left.erase(it);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      for (const pid_t worker : left) {
        std::cout << "FAILED: worker pid " << worker << " still runs 5 s after its parent died\n";
        kill(worker, SIGKILL);  // leave nothing behind
      }
      std::cout << (left.empty() ? "parent death: PASS\n" : "parent death: FAIL\n");
      exitCode = left.empty() ? 0 : 1;
    }
  } catch (const std::exception& error) {
    if (parent > 0) {
      kill(parent, SIGKILL);
      int status = 0;
      waitpid(parent, &status, 0);
    }
    std::cout << "error: " << error.what() << '\n';
  }
  return exitCode;
}
