// Starting a sample whose output goes to a private temporary file, for the checkers of
// 07_memMapIPC (ipc_killed_worker_check.cpp, ipc_parent_death_check.cpp, ipc_copies_check.cpp,
// ipc_bad_input_check.cpp): they read what the sample printed once it has ended or been killed.
#pragma once

#include <spawn.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace memsamples::test {

/// The whole text of the file at @p path ("" when it cannot be read).
inline std::string readTextFile(const std::string& path) {
  std::ifstream file(path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

/// A file of its own (mkstemp: a new name, mode 0600) that a process writes its output to;
/// removed when the owner goes.
class OutputLog {
 public:
  /// Creates /tmp/<prefix>.XXXXXX. @throws std::runtime_error when mkstemp fails.
  explicit OutputLog(const std::string& prefix) : path_("/tmp/" + prefix + ".XXXXXX") {
    fd_ = mkstemp(path_.data());
    if (fd_ < 0)
      throw std::runtime_error("mkstemp " + path_ + ": " + std::strerror(errno));
  }
  ~OutputLog() {
    close(fd_);
    std::remove(path_.c_str());
  }
  OutputLog(const OutputLog&) = delete;
  OutputLog& operator=(const OutputLog&) = delete;

  /// The descriptor the process writes to.
  int fd() const noexcept { return fd_; }
  /// What has been written so far.
  std::string text() const { return readTextFile(path_); }

 private:
  std::string path_;
  int fd_ = -1;
};

/// Starts @p args (args[0]: the program's path) with stdout and stderr in @p log, and with
/// @p descriptor3 (if any) as its descriptor 3; every other descriptor is closed in it (glibc
/// 2.34 and newer), so that what it finds open is only what the check gave it. @return its pid.
/// @throws std::runtime_error when posix_spawn fails.
inline pid_t startLogged(const std::vector<std::string>& args, const OutputLog& log,
                         int descriptor3 = -1) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log.fd(), 1);
  posix_spawn_file_actions_adddup2(&actions, log.fd(), 2);
  if (descriptor3 >= 0)
    posix_spawn_file_actions_adddup2(&actions, descriptor3, 3);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, descriptor3 >= 0 ? 4 : 3);
#endif
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

}  // namespace memsamples::test
