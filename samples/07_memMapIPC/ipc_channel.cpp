// The memMapIPC sample's channel between processes (see ipc_channel.hpp for why each piece).
#include "ipc_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <system_error>

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
    if (ready > 0) {
      return true;
    }
    if (ready == 0) {
      if (Clock::now() >= deadline) {
        return false;
      }
      continue;  // poll rounds to whole milliseconds: wait out the rest
    }
    if (errno != EINTR) {
      throw systemError("poll");
    }
  }
}

/// The wire header: three uint32 in host byte order (both ends are on one machine).
struct Header {
  std::uint32_t magic;
  std::uint32_t type;
  std::uint32_t bytes;
};
static_assert(sizeof(Header) == 12, "the header has no padding");

/// A socket address for @p path, refusing one that does not fit (it would be cut silently).
sockaddr_un socketAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    throw IpcError("socket path '" + path + "' is " + std::to_string(path.size()) +
                   " bytes long; a Unix socket path holds 1 to " +
                   std::to_string(sizeof(address.sun_path) - 1));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

/// Takes the SCM_RIGHTS descriptors of @p message into @p into (owned at once, so an error
/// thrown later closes them). Counts them all, even past kMaxDescriptors, so none leaks.
void takeDescriptors(msghdr& message, std::vector<OwnedFd>& into) {
  for (cmsghdr* control = CMSG_FIRSTHDR(&message); control != nullptr;
       control = CMSG_NXTHDR(&message, control)) {
    if (control->cmsg_level != SOL_SOCKET || control->cmsg_type != SCM_RIGHTS) {
      continue;
    }
    const std::size_t count = (control->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const auto* data = CMSG_DATA(control);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));  // CMSG_DATA may be unaligned
      into.emplace_back(fd);
    }
  }
}

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
      if (done == 0) {
        throw IpcError("no message within " + std::to_string(timeout.count()) + " ms");
      }
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
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
        continue;
      }
      if (errno != ECONNRESET) {
        throw systemError("recvmsg");
      }
      received = 0;  // a peer that closed with our data unread: an end, like EOF
    } else {
      takeDescriptors(message, descriptors);
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
      if (done == 0) {
        return false;
      }
      throw IpcError("message cut short: the peer closed the connection after " +
                     std::to_string(done) + " of " +
                     (total == 0 ? "at least 12" : std::to_string(total)) + " bytes");
    }
    got += static_cast<std::size_t>(received);
    done += static_cast<std::size_t>(received);
  }
  return true;
}

/// Sends all @p bytes (the first sendmsg also carrying @p descriptors), resuming after a
/// partial send or a signal.
void sendAll(int socket, const void* data, std::size_t bytes, const std::vector<int>& descriptors) {
  const auto* cursor = static_cast<const std::uint8_t*>(data);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptors)];
  bool descriptorsSent = descriptors.empty();
  std::size_t sent = 0;
  while (sent < bytes) {
    iovec piece{const_cast<std::uint8_t*>(cursor + sent), bytes - sent};
    msghdr message{};
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    if (!descriptorsSent) {
      const std::size_t size = sizeof(int) * descriptors.size();
      std::memset(control, 0, sizeof(control));
      message.msg_control = control;
      message.msg_controllen = CMSG_SPACE(size);
      cmsghdr* header = CMSG_FIRSTHDR(&message);
      header->cmsg_level = SOL_SOCKET;
      header->cmsg_type = SCM_RIGHTS;
      header->cmsg_len = CMSG_LEN(size);
      std::memcpy(CMSG_DATA(header), descriptors.data(), size);
    }
    const ssize_t written = ::sendmsg(socket, &message, MSG_NOSIGNAL);
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw systemError("sendmsg");
    }
    descriptorsSent = true;  // they travel with the first byte that was sent
    sent += static_cast<std::size_t>(written);
  }
}

}  // namespace

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
  if (this != &other) {
    reset(other.release());
  }
  return *this;
}

int OwnedFd::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void OwnedFd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) {
    ::close(fd_);  // never retried on EINTR: Linux has closed it already
  }
  fd_ = fd;
}

PrivateDirectory::PrivateDirectory(const std::string& prefix) {
  std::string base = "/tmp";
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR");
      runtime != nullptr && runtime[0] == '/') {
    struct stat info {};
    if (::stat(runtime, &info) == 0 && S_ISDIR(info.st_mode) &&
        ::access(runtime, W_OK | X_OK) == 0) {
      base = runtime;
    }
  }
  const std::string pattern = base + "/" + prefix + "XXXXXX";
  std::string path = pattern;  // mkdtemp fills in the Xs, even when it fails
  if (::mkdtemp(path.data()) == nullptr) {
    throw systemError("mkdtemp " + pattern);
  }
  path_ = path;
}

PrivateDirectory::~PrivateDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

OwnedFd listenOn(const std::string& socketPath, int backlog) {
  const sockaddr_un address = socketAddress(socketPath);
  OwnedFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) {
    throw systemError("socket");
  }
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    throw systemError("bind " + socketPath);
  }
  if (::listen(listener.get(), backlog) != 0) {
    throw systemError("listen on " + socketPath);
  }
  return listener;
}

OwnedFd connectTo(const std::string& socketPath, std::chrono::milliseconds timeout) {
  const sockaddr_un address = socketAddress(socketPath);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    // Non-blocking while connecting: a full backlog is then EAGAIN (retried until the deadline),
    // not a connect() that blocks past it.
    OwnedFd connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!connection) {
      throw systemError("socket");
    }
    if (::connect(connection.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) ==
        0) {
      const int flags = ::fcntl(connection.get(), F_GETFL);
      if (flags < 0 || ::fcntl(connection.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
        throw systemError("fcntl F_SETFL");
      }
      return connection;
    }
    const int error = errno;
    const bool notThereYet =
        error == ENOENT || error == ECONNREFUSED || error == EAGAIN || error == EINTR;
    if (!notThereYet || Clock::now() >= deadline) {
      std::string reason = "connect " + socketPath + " failed: " + std::strerror(error);
      if (notThereYet) {
        reason += " (still failing after " + std::to_string(timeout.count()) + " ms)";
      }
      throw IpcError(reason);
    }
    // Wait a little before the next try (poll with no descriptors: a sleep that EINTR ends).
    ::poll(nullptr, 0, std::min(10, millisecondsLeft(deadline)));
  }
}

PeerCredentials peerCredentials(int connectedSocket) {
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (::getsockopt(connectedSocket, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
    throw systemError("getsockopt SO_PEERCRED");
  }
  return PeerCredentials{credentials.pid, credentials.uid, credentials.gid};
}

Accepted acceptWithin(int listeningSocket, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (!waitFor(listeningSocket, POLLIN, deadline)) {
      throw IpcError("no connection within " + std::to_string(timeout.count()) + " ms");
    }
    OwnedFd connection(::accept4(listeningSocket, nullptr, nullptr, SOCK_CLOEXEC));
    if (connection) {
      Accepted accepted;
      accepted.peer = peerCredentials(connection.get());
      accepted.socket = std::move(connection);
      return accepted;
    }
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) {
      throw systemError("accept4");
    }
  }
}

std::string whyPeerIsRefused(const PeerCredentials& peer, uid_t expectedUid,
                             const std::vector<pid_t>& expectedPids) {
  if (peer.uid != expectedUid) {
    return "peer pid " + std::to_string(peer.pid) + " runs as uid " + std::to_string(peer.uid) +
           ", not uid " + std::to_string(expectedUid);
  }
  if (std::find(expectedPids.begin(), expectedPids.end(), peer.pid) == expectedPids.end()) {
    std::ostringstream text;
    text << "peer pid " << peer.pid << " is not a worker this process started (";
    if (expectedPids.empty()) {
      text << "none started";
    } else {
      text << "pids";
      for (std::size_t i = 0; i < expectedPids.size(); ++i) {
        text << (i == 0 ? " " : ", ") << expectedPids[i];
      }
    }
    text << ")";
    return text.str();
  }
  return "";
}

void sendMessage(int socket, std::uint32_t type, const void* payload, std::size_t bytes,
                 const std::vector<int>& descriptors) {
  if (bytes > kMaxPayloadBytes) {
    throw IpcError("a payload of " + std::to_string(bytes) + " bytes is more than the " +
                   std::to_string(kMaxPayloadBytes) + " a message may carry");
  }
  if (descriptors.size() > kMaxDescriptors) {
    throw IpcError(std::to_string(descriptors.size()) + " descriptors are more than the " +
                   std::to_string(kMaxDescriptors) + " a message may carry");
  }
  if (payload == nullptr && bytes != 0) {
    throw IpcError("a payload of " + std::to_string(bytes) + " bytes at a null pointer");
  }
  const Header header{kMessageMagic, type, static_cast<std::uint32_t>(bytes)};
  sendAll(socket, &header, sizeof(header), descriptors);
  if (bytes != 0) {
    sendAll(socket, payload, bytes, {});
  }
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
