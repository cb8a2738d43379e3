// memsamples_ipc_parent_death_check <memMapIPC> [arguments...]
//
// Proves what 07_memMapIPC promises when the parent dies mid-run: its workers die too
// (PR_SET_PDEATHSIG), so no worker is left holding imported GPU memory or waiting forever on a
// socket. Starts the sample with a run long enough to be killed in, waits until it has child
// processes and 2 s more (the workers have imported and run kernels), kills the parent with
// SIGKILL (no destructor or handler of its own can run), and requires every worker to be gone
// within 5 s. Exit 0 when that held.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

/// Starts @p args with stdout and stderr in @p logPath; its pid.
pid_t startLogged(const std::vector<std::string>& args, const std::string& logPath) {
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
  return pid;
}

/// The children of every thread of @p pid (/proc/<pid>/task/<tid>/children).
std::set<pid_t> childrenOf(pid_t pid) {
  std::set<pid_t> children;
  std::error_code error;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
    std::istringstream list(readFile(task.path().string() + "/children"));
    for (pid_t child = 0; list >> child;)
      children.insert(child);
  }
  return children;
}

/// True while @p pid exists and is not a zombie (a dead child that nobody has reaped yet: in a
/// container, the process that adopts orphans may never reap them).
bool running(pid_t pid) {
  const std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t end = stat.rfind(')');  // the name, in parentheses, may hold anything
  return end != std::string::npos && end + 2 < stat.size() && stat[end + 2] != 'Z';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " <memMapIPC> [arguments...]\n";
    return 1;
  }
  const std::string log = "/tmp/memsamples_ipc_parent_death." + std::to_string(getpid());
  pid_t parent = -1;
  try {
    parent = startLogged(std::vector<std::string>(argv + 1, argv + argc), log);

    // The workers are the parent's child processes (its report comes only at the end).
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (childrenOf(parent).empty()) {
      int status = 0;
      if (waitpid(parent, &status, WNOHANG) == parent) {
        parent = -1;  // reaped: nothing to kill
        throw std::runtime_error("the sample ended before it started a worker:\n" + readFile(log));
      }
      if (Clock::now() > deadline)
        throw std::runtime_error("no worker process within 60 s:\n" + readFile(log));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));  // imports done, kernels running
    const std::set<pid_t> workers = childrenOf(parent);
    int status = 0;
    if (waitpid(parent, &status, WNOHANG) == parent) {
      parent = -1;
      throw std::runtime_error("the run ended before it could be killed (make it longer):\n" +
                               readFile(log));
    }
    if (workers.empty())
      throw std::runtime_error("the sample runs, but has no worker to watch:\n" + readFile(log));

    kill(parent, SIGKILL);
    while (waitpid(parent, &status, 0) < 0 && errno == EINTR) {
    }
    parent = -1;
    std::cout << readFile(log) << "parent killed with SIGKILL while " << workers.size()
              << " workers ran\n";

    std::set<pid_t> left = workers;
    const auto gone = Clock::now() + std::chrono::seconds(5);
    while (!left.empty() && Clock::now() < gone) {
      for (auto it = left.begin(); it != left.end();)
        it = running(*it) ? std::next(it) : left.erase(it);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::remove(log.c_str());
    for (const pid_t worker : left) {
      std::cout << "FAILED: worker pid " << worker << " still runs 5 s after its parent died\n";
      kill(worker, SIGKILL);  // leave nothing behind
    }
    std::cout << (left.empty() ? "parent death: PASS\n" : "parent death: FAIL\n");
    return left.empty() ? 0 : 1;
  } catch (const std::exception& error) {
    if (parent > 0) {
      kill(parent, SIGKILL);
      int status = 0;
      waitpid(parent, &status, 0);
    }
    std::remove(log.c_str());
    std::cout << "error: " << error.what() << '\n';
    return 1;
  }
}
