// The memMapIPC sample's channel between processes (see ipc_channel.hpp for why each piece).
#include "ipc_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>

namespace memsamples::ipc {
namespace {

using Clock = std::chrono::steady_clock;

/// "<what> failed: <strerror(errno)>", errno read before anything else can change it.
IpcError systemError(const std::string& what, int error = errno) {
  return IpcError(what + " failed: " + std::strerror(error));
}

/// Milliseconds left until @p deadline, as poll() wants them (0 once it has passed).
int millisecondsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

/// Waits until @p fd has @p events or @p deadline passes; false on timeout. EINTR resumes the
/// wait with the time that is left, so a signal neither ends nor stretches it.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, millisecondsLeft(deadline));
    if (ready > 0)
      return true;
    // poll rounds to whole milliseconds: wait out the rest, and resume after a signal.
    if (ready == 0 && Clock::now() >= deadline)
      return false;
    if (ready < 0 && errno != EINTR)
      throw systemError("poll");
  }
}

/// The wire header: three uint32 in host byte order (both ends are on one machine).
struct Header {
  std::uint32_t magic;
  std::uint32_t type;
  std::uint32_t bytes;
};
static_assert(sizeof(Header) == 12, "the header has no padding");

// [scm-rights]
// Sending: the descriptors ride on a message as ancillary data, one control message of level
// SOL_SOCKET and type SCM_RIGHTS; sendmsg, in sendAll(), hands them to the kernel with it.
void attachDescriptors(msghdr& message, char* control, const std::vector<int>& descriptors) {
  const std::size_t size = sizeof(int) * descriptors.size();
  std::memset(control, 0, CMSG_SPACE(size));
  message.msg_control = control;
  message.msg_controllen = CMSG_SPACE(size);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(size);
  std::memcpy(CMSG_DATA(header), descriptors.data(), size);
}

// Receiving: recvmsg, in receiveExactly(), finds the control message, with new descriptors
// of this process for the same open files. Each is owned at once (closed if an error follows),
// all of them, even past kMaxDescriptors, so that none leaks.
void takeDescriptors(msghdr& message, std::vector<OwnedFd>& into) {
  for (cmsghdr* control = CMSG_FIRSTHDR(&message); control != nullptr;
       control = CMSG_NXTHDR(&message, control)) {
    if (control->cmsg_level != SOL_SOCKET || control->cmsg_type != SCM_RIGHTS)
      continue;
    const std::size_t count = (control->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const auto* data = CMSG_DATA(control);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));  // CMSG_DATA may be unaligned
      into.emplace_back(fd);
    }
  }
}
// [scm-rights]

/// Reads exactly @p bytes into @p buffer by recvmsg before @p deadline, taking any descriptors
/// that come along. @p done counts what this message has delivered so far (header included),
/// @p total what it will be, for the error messages. @return false on EOF before the first byte
/// of the whole message.
bool receiveExactly(int socket, void* buffer, std::size_t bytes, Clock::time_point deadline,
                    std::chrono::milliseconds timeout, std::size_t& done, std::size_t total,
                    std::vector<OwnedFd>& descriptors) {
  auto* cursor = static_cast<std::uint8_t*>(buffer);
  std::size_t got = 0;
  // Room for kMaxDescriptors: a sender of more is noticed by MSG_CTRUNC (the kernel installs
  // those that fit, which takeDescriptors owns and so closes).
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptors)];
  while (got < bytes) {
    if (!waitFor(socket, POLLIN, deadline)) {
      if (done == 0)
        throw IpcError("no message within " + std::to_string(timeout.count()) + " ms");
      throw IpcError("no whole message within " + std::to_string(timeout.count()) + " ms: got " +
                     std::to_string(done) + " of " +
                     (total == 0 ? "at least 12" : std::to_string(total)) + " bytes");
    }
    iovec piece{cursor + got, bytes - got};
    msghdr message{};
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    ssize_t received = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (received < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
        continue;
      if (errno != ECONNRESET)
        throw systemError("recvmsg");
      received = 0;  // a peer that closed with our data unread: an end, like EOF
    } else {
      takeDescriptors(message, descriptors);
    }
    if ((message.msg_flags & MSG_TRUNC) != 0) {
      throw IpcError("a record longer than the " + std::to_string(bytes - got) +
                     " bytes the message still needed (the rest was cut off: MSG_TRUNC)");
    }
    if ((message.msg_flags & MSG_CTRUNC) != 0) {
      throw IpcError("descriptors cut off (MSG_CTRUNC): the peer sent more than the " +
                     std::to_string(kMaxDescriptors) + " a message may carry");
    }
    if (descriptors.size() > kMaxDescriptors) {
      throw IpcError("a message came with " + std::to_string(descriptors.size()) +
                     " descriptors, more than the " + std::to_string(kMaxDescriptors) + " allowed");
    }
    if (received <= 0) {
      if (done == 0)
        return false;
      throw IpcError("message cut short: the peer closed the connection after " +
                     std::to_string(done) + " of " +
                     (total == 0 ? "at least 12" : std::to_string(total)) + " bytes");
    }
    got += static_cast<std::size_t>(received);
    done += static_cast<std::size_t>(received);
  }
  return true;
}

/// Sends all @p bytes in records of at most kMaxRecordBytes (the first also carrying
/// @p descriptors) before @p deadline, resuming after a signal. Each record waits for room with
/// poll, then goes without blocking: a peer that stops reading is a timeout, never a hang.
void sendAll(int socket, const void* data, std::size_t bytes, const std::vector<int>& descriptors,
             Clock::time_point deadline, std::chrono::milliseconds timeout) {
  const auto* cursor = static_cast<const std::uint8_t*>(data);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptors)];
  bool descriptorsSent = descriptors.empty();
  std::size_t sent = 0;
  while (sent < bytes) {
    iovec piece{const_cast<std::uint8_t*>(cursor + sent), std::min(bytes - sent, kMaxRecordBytes)};
    msghdr message{};
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    if (!descriptorsSent)
      attachDescriptors(message, control, descriptors);  // on the first record only
    if (!waitFor(socket, POLLOUT, deadline)) {
      throw IpcError("could not send within " + std::to_string(timeout.count()) +
                     " ms: the peer reads nothing (" + std::to_string(sent) + " of " +
                     std::to_string(bytes) + " bytes of this part sent)");
    }
    const ssize_t written = ::sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      // No room after all (poll saw some, a whole record needs more): wait again.
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
        continue;
      throw systemError("sendmsg");
    }
    descriptorsSent = true;  // they travel with the first byte that was sent
    sent += static_cast<std::size_t>(written);
  }
}

}  // namespace

void OwnedFd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) {
    ::close(fd_);  // never retried on EINTR: Linux has closed it already
  }
  fd_ = fd;
}

void OwnedFd::close() {
  const int fd = release();
  if (fd >= 0 && ::close(fd) != 0 && errno != EINTR) {  // after EINTR, Linux has closed it
    throw systemError("close of descriptor " + std::to_string(fd));
  }
}

void OwnedFd::closeOnExec() {
  const int flags = ::fcntl(fd_, F_GETFD);
  if (flags < 0 || ::fcntl(fd_, F_SETFD, flags | FD_CLOEXEC) != 0)
    throw systemError("fcntl FD_CLOEXEC on descriptor " + std::to_string(fd_));
}

SocketPair makeSocketPair() {
  int ends[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0)
    throw systemError("socketpair");
  return SocketPair{OwnedFd(ends[0]), OwnedFd(ends[1])};
}

OwnedFd adoptWorkerSocket(const std::string& argument) {
  const std::string how = ": a worker is started by its parent (memMapIPC), which hands it one "
                          "end of a socket pair as descriptor " + std::to_string(kWorkerSocket);
  int fd = -1;
  const char* end = argument.data() + argument.size();
  const auto [stop, error] = std::from_chars(argument.data(), end, fd);
  if (error != std::errc() || stop != end || fd <= STDERR_FILENO)
    throw IpcError("'" + argument + "' is not a descriptor number above 2" + how);
  if (::fcntl(fd, F_GETFD) < 0)
    throw IpcError("descriptor " + argument + " is not open" + how);
  int domain = 0;
  int type = 0;
  socklen_t size = sizeof(int);
  const bool socket = ::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) == 0;
  size = sizeof(int);
  if (!socket || ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0)
    throw IpcError("descriptor " + argument + " is not a socket" + how);
  if (domain != AF_UNIX || type != SOCK_SEQPACKET) {
    throw IpcError("descriptor " + argument + " is a socket, but not a Unix SOCK_SEQPACKET one" +
                   how);
  }
  OwnedFd adopted(fd);
  adopted.closeOnExec();  // a program this worker might start gets nothing of the parent's
  return adopted;
}

void sendMessage(int socket, std::uint32_t type, const void* payload, std::size_t bytes,
                 const std::vector<int>& descriptors, std::chrono::milliseconds timeout) {
  if (bytes > kMaxPayloadBytes) {
    throw IpcError("a payload of " + std::to_string(bytes) + " bytes is more than the " +
                   std::to_string(kMaxPayloadBytes) + " a message may carry");
  }
  if (descriptors.size() > kMaxDescriptors) {
    throw IpcError(std::to_string(descriptors.size()) + " descriptors are more than the " +
                   std::to_string(kMaxDescriptors) + " a message may carry");
  }
  if (payload == nullptr && bytes != 0)
    throw IpcError("a payload of " + std::to_string(bytes) + " bytes at a null pointer");
  const Header header{kMessageMagic, type, static_cast<std::uint32_t>(bytes)};
  const auto deadline = Clock::now() + timeout;
  sendAll(socket, &header, sizeof(header), descriptors, deadline, timeout);
  if (bytes != 0)
    sendAll(socket, payload, bytes, {}, deadline, timeout);
}

Message receiveMessage(int socket, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Message message;
  Header header{};
  std::size_t done = 0;
  if (!receiveExactly(socket, &header, sizeof(header), deadline, timeout, done, 0,
                      message.descriptors)) {
    throw IpcError("the peer closed the connection");
  }
  if (header.magic != kMessageMagic) {
    std::ostringstream text;
    text << "a message header without the magic number 0x" << std::hex << kMessageMagic
         << " (got 0x" << header.magic << ")";
    throw IpcError(text.str());
  }
  if (header.bytes > kMaxPayloadBytes) {
    throw IpcError("a message header announces " + std::to_string(header.bytes) +
                   " payload bytes, more than the " + std::to_string(kMaxPayloadBytes) +
                   " allowed");
  }
  message.type = header.type;
  message.payload.resize(header.bytes);
  if (header.bytes != 0) {
    receiveExactly(socket, message.payload.data(), header.bytes, deadline, timeout, done,
                   sizeof(header) + header.bytes, message.descriptors);
  }
  return message;
}

}  // namespace memsamples::ipc
