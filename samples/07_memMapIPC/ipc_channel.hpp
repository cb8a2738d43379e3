/**
 * @file ipc_channel.hpp
 * @brief The memMapIPC sample's channel between the parent and one worker: a socket pair made
 *        before the worker exists, framed messages over it that may carry file descriptors
 *        (SCM_RIGHTS), and a timeout on every wait.
 *
 * No CUDA here: plain POSIX, unit tested in ctest/unit/memMapIPC. What travels over it (the
 * shareable handles, each worker's job) is the lesson's, in memMapIPC.cpp.
 *
 * Why each piece:
 * - **A socket pair, not a socket path.** socketpair() makes two connected ends and nothing
 *   else: no name in any folder that another process could find, connect to or replace. The
 *   parent keeps one end and hands the other to the worker it starts, as descriptor 3 (see
 *   worker_processes.hpp). Holding the descriptor is the only way in: it is the capability.
 * - **SOCK_SEQPACKET.** Connected and reliable like a stream, but the kernel keeps each send a
 *   record of its own, so a message is never merged with the next one's bytes.
 * - **Close-on-exec everywhere** (SOCK_CLOEXEC, MSG_CMSG_CLOEXEC, closeOnExec() on the driver's
 *   exported descriptors): a descriptor, and with a VMM export the memory behind it, never
 *   reaches a program that a process starts.
 * - **Every wait has a timeout** (poll), a send's as well as a receive's: a peer that hangs,
 *   dies or stops reading is an error, not a hang.
 */
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memsamples::ipc {

/// A failure of the channel (a system call, a timeout, a malformed message, a wrong descriptor).
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
  OwnedFd& operator=(OwnedFd&& other) noexcept {
    reset(other.release());  // a self-move gives the descriptor straight back
    return *this;
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  /// Closes the descriptor held.
  ~OwnedFd() { reset(); }
  /// The descriptor, still owned here (-1 when none).
  int get() const noexcept { return fd_; }
  /// Gives up ownership: the caller closes it now.
  int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the descriptor held (if any, answer ignored) and holds @p fd.
  void reset(int fd = -1) noexcept;
  /// Closes the descriptor now and checks the answer. @throws IpcError naming close.
  void close();
  /// Sets FD_CLOEXEC on the descriptor held, so that no program started later inherits it.
  /// @throws IpcError naming fcntl (a descriptor that is not open, for one).
  void closeOnExec();
  /// Whether a descriptor is held.
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

/// Both ends of a connected Unix socket pair.
struct SocketPair {
  OwnedFd parentEnd;  ///< The end the parent keeps.
  OwnedFd workerEnd;  ///< The end the worker gets (as kWorkerSocket), closed here after the start.
};

/// A new socket pair: socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC), with no name anywhere.
/// @throws IpcError naming socketpair.
SocketPair makeSocketPair();

/// The descriptor number at which a worker finds its end of the socket pair.
inline constexpr int kWorkerSocket = 3;

/**
 * The worker's end of its socket pair, checked: @p argument (the number on the command line)
 * must name an open AF_UNIX SOCK_SEQPACKET socket. It is made close-on-exec (it came without).
 * @throws IpcError that says what is wrong and how a worker is started: by its parent, which
 *         hands it one end of a socket pair as descriptor 3.
 */
OwnedFd adoptWorkerSocket(const std::string& argument);

/// The most payload bytes a message may carry: a bound on what a bad length field can make the
/// receiver allocate.
inline constexpr std::size_t kMaxPayloadBytes = 1 << 20;
/// The most bytes one record of the socket carries: a longer payload goes as several records (a
/// record must fit the socket's send buffer whole).
inline constexpr std::size_t kMaxRecordBytes = 64 << 10;
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

/// How long a send may wait for room in the socket: a peer that reads nothing for this long
/// (hung, or stopped) makes the send an IpcError instead of a hang.
inline constexpr std::chrono::seconds kSendTimeout{60};

/**
 * Sends one message: a header of three uint32 in host byte order (kMessageMagic, @p type, payload
 * size) as one record with @p descriptors as SCM_RIGHTS ancillary data (the receiving process
 * gets its own descriptors for the same open files), then the payload in records of at most
 * kMaxRecordBytes. Waits for room in the socket (poll) at most @p timeout in all; never blocks in
 * sendmsg itself (MSG_DONTWAIT). MSG_NOSIGNAL: a closed peer is an IpcError, not SIGPIPE.
 * @throws IpcError, also for more than kMaxPayloadBytes or kMaxDescriptors, and when the peer
 *         leaves no room for the message within @p timeout ("could not send within N ms").
 */
void sendMessage(int socket, std::uint32_t type, const void* payload, std::size_t bytes,
                 const std::vector<int>& descriptors = {},
                 std::chrono::milliseconds timeout = kSendTimeout);

/**
 * Receives one whole message within @p timeout (a sender's records are joined until the header's
 * length is read). Descriptors arrive close-on-exec (MSG_CMSG_CLOEXEC).
 * @throws IpcError with one clear reason: "the peer closed the connection" (it exited or died),
 *         no message within the timeout, a header without the magic number, a payload larger
 *         than kMaxPayloadBytes, a message cut short, a record longer than what the message still
 *         needed (MSG_TRUNC), or descriptors cut off (MSG_CTRUNC); any descriptors received with
 *         a bad message are closed.
 */
Message receiveMessage(int socket, std::chrono::milliseconds timeout);

}  // namespace memsamples::ipc
