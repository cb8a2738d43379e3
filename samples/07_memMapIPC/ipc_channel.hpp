/**
 * @file ipc_channel.hpp
 * @brief The memMapIPC sample's channel between processes: a Unix-domain socket in a folder only
 *        this user can enter, peers checked by their kernel-reported credentials, and framed
 *        messages that may carry file descriptors (SCM_RIGHTS).
 *
 * No CUDA here: plain POSIX, unit tested in ctest/unit/memMapIPC. What travels over it (the
 * shareable handles, the job of each worker) is the lesson's, in memMapIPC.cpp.
 *
 * Why each piece:
 * - **A private folder (0700).** A socket file is reachable by anyone who can reach its folder;
 *   mkdtemp's folder is this user's alone, so no other user can even try to connect.
 * - **SO_PEERCRED.** The kernel, not the peer, says who connected (pid, uid): the parent accepts
 *   only the workers it started, so another process of the same user cannot pose as one.
 * - **Close-on-exec everywhere** (SOCK_CLOEXEC, accept4, MSG_CMSG_CLOEXEC): a descriptor, and
 *   with a VMM export the memory behind it, never leaks into a program this one starts.
 * - **Every wait has a timeout** (poll): a peer that hangs or dies is an error, not a hang.
 */
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace memsamples::ipc {

/// A failure of the channel (a system call, a timeout, a refused peer, a malformed message).
class IpcError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An owned file descriptor: closed when the owner is destroyed or reset, so no error path
/// leaks one (a leaked VMM export would keep its GPU memory alive).
class OwnedFd {
 public:
  /// Holds nothing.
  OwnedFd() = default;
  /// Takes ownership of @p fd (-1: nothing).
  explicit OwnedFd(int fd) noexcept : fd_(fd) {}
  /// Takes over what @p other holds; @p other holds nothing after.
  OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
  /// Closes what this holds, then takes over what @p other holds.
  OwnedFd& operator=(OwnedFd&& other) noexcept;
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  /// Closes the descriptor held.
  ~OwnedFd() { reset(); }
  /// The descriptor, still owned here (-1 when none).
  int get() const noexcept { return fd_; }
  /// Gives up ownership: the caller closes it now.
  int release() noexcept;
  /// Closes the descriptor held (if any) and holds @p fd.
  void reset(int fd = -1) noexcept;
  /// Whether a descriptor is held.
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

/// A fresh folder only this user can enter (mkdtemp, mode 0700) under $XDG_RUNTIME_DIR, else
/// /tmp; removed, with what is in it, when destroyed.
class PrivateDirectory {
 public:
  /// Creates `<base>/<prefix>XXXXXX`; $XDG_RUNTIME_DIR is preferred because it is this user's
  /// own tmpfs, while /tmp is shared with everyone.
  /// @throws IpcError naming mkdtemp and the reason.
  explicit PrivateDirectory(const std::string& prefix);
  PrivateDirectory(const PrivateDirectory&) = delete;
  PrivateDirectory& operator=(const PrivateDirectory&) = delete;
  /// Removes the folder and everything in it; never throws (it runs on error paths).
  ~PrivateDirectory();
  /// The absolute path of the folder.
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// A listening Unix-domain stream socket bound to @p socketPath (close-on-exec). An existing file
/// at that path is not removed: bind fails instead, so two runs never steal each other's socket.
/// @throws IpcError naming the call (socket, bind, listen) and the reason, or for a path longer
///         than a socket address holds.
OwnedFd listenOn(const std::string& socketPath, int backlog);

/// A socket connected to @p socketPath (close-on-exec), retrying until @p timeout while the
/// listener is not there yet (no socket file, nobody listening, or its backlog full): a worker may
/// start before its parent listens. @throws IpcError naming connect, the path and the last reason.
OwnedFd connectTo(const std::string& socketPath, std::chrono::milliseconds timeout);

/// Who is at the other end of a connected socket, as the kernel recorded it (SO_PEERCRED).
struct PeerCredentials {
  pid_t pid = 0;  ///< Process id at connect time.
  uid_t uid = 0;  ///< Its user.
  gid_t gid = 0;  ///< Its group.
};

/// SO_PEERCRED of @p connectedSocket. @throws IpcError.
PeerCredentials peerCredentials(int connectedSocket);

/// One accepted connection and who made it.
struct Accepted {
  OwnedFd socket;        ///< The connection (close-on-exec).
  PeerCredentials peer;  ///< SO_PEERCRED of it.
};

/// Waits at most @p timeout for one connection on @p listeningSocket (poll, then accept4).
/// @throws IpcError on timeout ("no connection within N ms") or a failed call.
Accepted acceptWithin(int listeningSocket, std::chrono::milliseconds timeout);

/// Why @p peer may not talk to us, or "" when it may: its uid must be @p expectedUid and its pid
/// one of @p expectedPids (the workers this process started).
std::string whyPeerIsRefused(const PeerCredentials& peer, uid_t expectedUid,
                             const std::vector<pid_t>& expectedPids);

/// The most payload bytes a message may carry: a bound on what a bad length field can make the
/// receiver allocate.
inline constexpr std::size_t kMaxPayloadBytes = 1 << 20;
/// The most descriptors a message may carry (the receiver's ancillary buffer holds this many).
inline constexpr std::size_t kMaxDescriptors = 16;
/// The first field of every message header ('MIPC' read as a little-endian number): a stream out
/// of step, or a stranger's bytes, is refused instead of being read as a length.
inline constexpr std::uint32_t kMessageMagic = 0x4350494D;

/// One received message: its type, its payload, the descriptors that came with it (owned).
struct Message {
  std::uint32_t type = 0;             ///< The sender's message type.
  std::vector<std::uint8_t> payload;  ///< The payload, all of it.
  std::vector<OwnedFd> descriptors;   ///< Received descriptors (close-on-exec), owned.
};

/**
 * Sends one message: a header of three uint32 in host byte order (kMessageMagic, @p type, payload
 * size) with @p descriptors as SCM_RIGHTS ancillary data in the same sendmsg (the receiving
 * process gets its own descriptors for the same open files), then the payload. Blocks until all
 * is sent (MSG_NOSIGNAL: a closed peer is an IpcError, not SIGPIPE).
 * @throws IpcError, also for more than kMaxPayloadBytes or kMaxDescriptors.
 */
void sendMessage(int socket, std::uint32_t type, const void* payload, std::size_t bytes,
                 const std::vector<int>& descriptors = {});

/**
 * Receives one whole message within @p timeout (all of it: a slow sender's pieces are joined).
 * Descriptors arrive close-on-exec (MSG_CMSG_CLOEXEC).
 * @throws IpcError with one clear reason: "the peer closed the connection" (it exited or died),
 *         no message within the timeout, a header without the magic number, a payload larger
 *         than kMaxPayloadBytes, a message cut short, or descriptors cut off (MSG_CTRUNC); any
 *         descriptors received with a bad message are closed.
 */
Message receiveMessage(int socket, std::chrono::milliseconds timeout);

}  // namespace memsamples::ipc
