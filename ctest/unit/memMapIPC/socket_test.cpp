// 07_memMapIPC's way between two processes: a socket pair (no name anywhere, records kept
// apart), the owner of a descriptor and its checked close and close-on-exec, and the worker's
// check that descriptor 3 really is its end of a pair.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "ipc_channel.hpp"
#include "ipc_test_support.hpp"
#include "test_support.hpp"

namespace ipc = memsamples::ipc;
namespace itest = memsamples::ipc::test;
using memsamples::test::messageOf;

namespace {

const std::string kHow =
    ": a worker is started by its parent (memMapIPC), which hands it one end of a socket pair "
    "as descriptor 3";

/// A descriptor number that is free right now (one just closed).
int freeDescriptor() {
  const int fd = ::dup(STDERR_FILENO);
  ::close(fd);
  return fd;
}

/// getsockopt @p option of @p fd.
int socketOption(int fd, int option) {
  int value = -1;
  socklen_t size = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, SOL_SOCKET, option, &value, &size), 0);
  return value;
}

}  // namespace

TEST(OwnedFd, ClosesOnDestructionResetAndMoveButNotAfterRelease) {
  const int before = itest::openDescriptorCount();
  {
    ipc::OwnedFd held(::dup(STDERR_FILENO));
    ASSERT_TRUE(held);
    EXPECT_EQ(itest::openDescriptorCount(), before + 1);
    ipc::OwnedFd other(::dup(STDERR_FILENO));
    EXPECT_EQ(itest::openDescriptorCount(), before + 2);
    held = std::move(other);  // the first one is closed
    EXPECT_EQ(itest::openDescriptorCount(), before + 1);
    EXPECT_FALSE(other);  // NOLINT(bugprone-use-after-move): moved-from holds nothing
    held.reset();
    EXPECT_FALSE(held);
    EXPECT_EQ(itest::openDescriptorCount(), before);
    ipc::OwnedFd released(::dup(STDERR_FILENO));
    const int raw = released.release();
    EXPECT_FALSE(released);
    EXPECT_EQ(itest::openDescriptorCount(), before + 1);
    ::close(raw);
  }
  EXPECT_EQ(itest::openDescriptorCount(), before);
}

TEST(OwnedFd, CloseClosesNowAndSaysWhenItCannot) {
  const int before = itest::openDescriptorCount();
  ipc::OwnedFd held(::dup(STDERR_FILENO));
  held.close();
  EXPECT_FALSE(held);
  EXPECT_EQ(itest::openDescriptorCount(), before);
  held.close();  // nothing held: nothing to do
  const int stale = freeDescriptor();
  ipc::OwnedFd gone(stale);
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { gone.close(); }),
            "close of descriptor " + std::to_string(stale) + " failed: Bad file descriptor");
  EXPECT_FALSE(gone);
}

TEST(OwnedFd, CloseOnExecIsSetAndItsFailureIsAnError) {
  // F_DUPFD, unlike F_DUPFD_CLOEXEC, makes a descriptor that a started program would inherit.
  ipc::OwnedFd inherited(::fcntl(STDERR_FILENO, F_DUPFD, 3));
  ASSERT_TRUE(inherited);
  ASSERT_FALSE(itest::isCloseOnExec(inherited.get()));
  inherited.closeOnExec();
  EXPECT_TRUE(itest::isCloseOnExec(inherited.get()));
  const int stale = freeDescriptor();
  ipc::OwnedFd gone(stale);
  EXPECT_EQ(
      messageOf<ipc::IpcError>([&] { gone.closeOnExec(); }),
      "fcntl FD_CLOEXEC on descriptor " + std::to_string(stale) + " failed: Bad file descriptor");
  (void)gone.release();
}

TEST(SocketPair, TwoConnectedSeqpacketEndsThatNoOneElseCanReach) {
  const ipc::SocketPair pair = ipc::makeSocketPair();
  for (const int end : {pair.parentEnd.get(), pair.workerEnd.get()}) {
    EXPECT_TRUE(itest::isCloseOnExec(end));
    EXPECT_EQ(socketOption(end, SO_DOMAIN), AF_UNIX);
    EXPECT_EQ(socketOption(end, SO_TYPE), SOCK_SEQPACKET);
    // Unnamed: no path in any folder leads to it.
    sockaddr_storage address{};
    socklen_t size = sizeof(address);
    ASSERT_EQ(::getsockname(end, reinterpret_cast<sockaddr*>(&address), &size), 0);
    EXPECT_EQ(size, sizeof(sa_family_t));
  }
}

TEST(SocketPair, EachSendStaysARecordOfItsOwn) {
  const ipc::SocketPair pair = ipc::makeSocketPair();
  ASSERT_EQ(::send(pair.parentEnd.get(), "one", 3, 0), 3);
  ASSERT_EQ(::send(pair.parentEnd.get(), "three", 5, 0), 5);
  char buffer[16] = {};
  EXPECT_EQ(::recv(pair.workerEnd.get(), buffer, sizeof(buffer), 0), 3);  // not "onethree"
  EXPECT_EQ(::recv(pair.workerEnd.get(), buffer, sizeof(buffer), 0), 5);
}

TEST(AdoptWorkerSocket, TakesItsEndOfAPairAndMakesItCloseOnExec) {
  const ipc::SocketPair pair = ipc::makeSocketPair();
  // As a worker finds it: without close-on-exec (dup2 in posix_spawn cleared it).
  const int inherited = ::fcntl(pair.workerEnd.get(), F_DUPFD, 3);
  ASSERT_GE(inherited, 3);
  ASSERT_FALSE(itest::isCloseOnExec(inherited));
  const ipc::OwnedFd adopted = ipc::adoptWorkerSocket(std::to_string(inherited));
  EXPECT_EQ(adopted.get(), inherited);
  EXPECT_TRUE(itest::isCloseOnExec(inherited));
  ipc::sendMessage(adopted.get(), 7, "hi", 2);
  EXPECT_EQ(ipc::receiveMessage(pair.parentEnd.get(), std::chrono::seconds(5)).type, 7u);
}

TEST(AdoptWorkerSocket, RefusesNoDescriptorOrAWrongOneSayingHowWorkersStart) {
  const int stale = freeDescriptor();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::adoptWorkerSocket(std::to_string(stale)); }),
            "descriptor " + std::to_string(stale) + " is not open" + kHow);
  for (const std::string argument : {"", "abc", "3x", "-1", "2", "0", "99999999999"}) {
    EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::adoptWorkerSocket(argument); }),
              "'" + argument + "' is not a descriptor number above 2" + kHow);
  }
  int ends[2] = {-1, -1};
  ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
  const ipc::OwnedFd readEnd(ends[0]);
  const ipc::OwnedFd writeEnd(ends[1]);
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::adoptWorkerSocket(std::to_string(ends[0])); }),
            "descriptor " + std::to_string(ends[0]) + " is not a socket" + kHow);
  int stream[2] = {-1, -1};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream), 0);
  const ipc::OwnedFd streamEnd(stream[0]);
  const ipc::OwnedFd otherEnd(stream[1]);
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::adoptWorkerSocket(std::to_string(stream[0])); }),
            "descriptor " + std::to_string(stream[0]) +
                " is a socket, but not a Unix SOCK_SEQPACKET one" + kHow);
}
