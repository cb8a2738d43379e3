// Helpers of 07_memMapIPC's unit tests: socket pairs, raw writes that the channel's own sender
// would never make, counting this process's open descriptors (to prove none leaked), and
// reaping a child without waiting.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ipc_channel.hpp"
#include "worker_processes.hpp"

namespace memsamples::ipc::test {

/// A connected pair of Unix sockets as the channel makes them (SOCK_SEQPACKET, close-on-exec).
inline std::pair<OwnedFd, OwnedFd> socketPair() {
  SocketPair pair = makeSocketPair();
  return {std::move(pair.parentEnd), std::move(pair.workerEnd)};
}

/// If child @p pid has ended, reaps it and says how (describeWaitStatus); none while it runs.
/// @throws IpcError (waitpid) when @p pid is not a child of this process or was already reaped.
inline std::optional<std::string> endedHow(pid_t pid) {
  int status = 0;
  pid_t result = -1;
  do {
    result = ::waitpid(pid, &status, WNOHANG);
  } while (result < 0 && errno == EINTR);
  if (result < 0) {
    throw IpcError("waitpid " + std::to_string(pid) + " failed: " + std::strerror(errno));
  }
  if (result == 0) {
    return std::nullopt;
  }
  return describeWaitStatus(status);
}

/// The wire header as a peer could write it, right or wrong.
struct RawHeader {
  std::uint32_t magic;
  std::uint32_t type;
  std::uint32_t bytes;
};

/// Writes @p bytes of @p data as they are (a misbehaving peer), all of it or the test fails.
inline void writeRaw(int socket, const void* data, std::size_t bytes) {
  const ssize_t written = ::send(socket, data, bytes, MSG_NOSIGNAL);
  if (written != static_cast<ssize_t>(bytes)) {
    throw std::runtime_error("raw send failed");
  }
}

/// Writes @p bytes of @p data with @p descriptors attached, bypassing sendMessage's limits.
inline void writeRawWithDescriptors(int socket, const void* data, std::size_t bytes,
                                    const std::vector<int>& descriptors) {
  std::vector<char> control(CMSG_SPACE(sizeof(int) * descriptors.size()));
  iovec piece{const_cast<void*>(data), bytes};
  msghdr message{};
  message.msg_iov = &piece;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * descriptors.size());
  std::memcpy(CMSG_DATA(header), descriptors.data(), sizeof(int) * descriptors.size());
  if (::sendmsg(socket, &message, MSG_NOSIGNAL) != static_cast<ssize_t>(bytes)) {
    throw std::runtime_error(std::string("raw sendmsg failed: ") + std::strerror(errno));
  }
}

/// How many descriptors this process has open (entries of /proc/self/fd).
inline int openDescriptorCount() {
  DIR* folder = ::opendir("/proc/self/fd");
  if (folder == nullptr) {
    throw std::runtime_error("opendir /proc/self/fd failed");
  }
  int count = 0;
  while (const dirent* entry = ::readdir(folder)) {
    if (entry->d_name[0] != '.') {
      ++count;
    }
  }
  ::closedir(folder);
  return count - 1;  // the folder's own descriptor
}

/// Whether @p fd is close-on-exec.
inline bool isCloseOnExec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  return flags >= 0 && (flags & FD_CLOEXEC) != 0;
}

}  // namespace memsamples::ipc::test
