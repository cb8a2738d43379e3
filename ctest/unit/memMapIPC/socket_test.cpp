// 07_memMapIPC's meeting point: a folder only this user can enter, a socket in it, connections
// made and accepted within a timeout, and the kernel's word on who connected.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "ipc_channel.hpp"
#include "ipc_test_support.hpp"
#include "test_support.hpp"

namespace ipc = memsamples::ipc;
using memsamples::test::messageOf;
using namespace std::chrono_literals;

namespace {

/// Sets (or unsets) $XDG_RUNTIME_DIR for one test and puts the old value back after it.
class RuntimeDirOverride {
 public:
  explicit RuntimeDirOverride(const char* value) {
    if (const char* old = std::getenv("XDG_RUNTIME_DIR")) {
      old_ = old;
    }
    if (value != nullptr) {
      ::setenv("XDG_RUNTIME_DIR", value, 1);
    } else {
      ::unsetenv("XDG_RUNTIME_DIR");
    }
  }
  ~RuntimeDirOverride() {
    if (old_) {
      ::setenv("XDG_RUNTIME_DIR", old_->c_str(), 1);
    } else {
      ::unsetenv("XDG_RUNTIME_DIR");
    }
  }
  RuntimeDirOverride(const RuntimeDirOverride&) = delete;
  RuntimeDirOverride& operator=(const RuntimeDirOverride&) = delete;

 private:
  std::optional<std::string> old_;
};

unsigned permissionsOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

}  // namespace

TEST(PrivateDirectory, IsOnlyThisUsersAndGoesAwayWithWhatIsInIt) {
  RuntimeDirOverride noRuntimeDir(nullptr);
  std::string path;
  {
    const ipc::PrivateDirectory folder("memMapIPC-test-");
    path = folder.path();
    EXPECT_EQ(path.rfind("/tmp/memMapIPC-test-", 0), 0u) << path;
    EXPECT_EQ(path.size(), std::string("/tmp/memMapIPC-test-").size() + 6);
    ASSERT_TRUE(std::filesystem::is_directory(path));
    EXPECT_EQ(permissionsOf(path), 0700u);
    std::ofstream(path + "/file") << "contents";
    std::filesystem::create_directory(path + "/inner");
    std::ofstream(path + "/inner/file") << "more";
    ASSERT_TRUE(std::filesystem::exists(path + "/inner/file"));
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << path;
}

TEST(PrivateDirectory, EachIsNew) {
  const ipc::PrivateDirectory first("memMapIPC-test-");
  const ipc::PrivateDirectory second("memMapIPC-test-");
  EXPECT_NE(first.path(), second.path());
}

TEST(PrivateDirectory, PrefersTheUsersRuntimeFolder) {
  const ipc::PrivateDirectory runtime("memMapIPC-runtime-");
  RuntimeDirOverride inRuntime(runtime.path().c_str());
  const ipc::PrivateDirectory folder("memMapIPC-test-");
  EXPECT_EQ(folder.path().rfind(runtime.path() + "/memMapIPC-test-", 0), 0u) << folder.path();
  EXPECT_EQ(permissionsOf(folder.path()), 0700u);
}

TEST(PrivateDirectory, FallsBackToTmpWhenTheRuntimeFolderIsMissing) {
  RuntimeDirOverride missing("/nonexistent/memMapIPC-runtime");
  const ipc::PrivateDirectory folder("memMapIPC-test-");
  EXPECT_EQ(folder.path().rfind("/tmp/memMapIPC-test-", 0), 0u) << folder.path();
}

TEST(PrivateDirectory, NamesMkdtempWhenItFails) {
  RuntimeDirOverride noRuntimeDir(nullptr);
  EXPECT_EQ(messageOf<ipc::IpcError>([] { ipc::PrivateDirectory("no/such/folder/x-"); }),
            "mkdtemp /tmp/no/such/folder/x-XXXXXX failed: No such file or directory");
}

TEST(OwnedFd, ClosesOnDestructionResetAndMoveButNotAfterRelease) {
  const int before = ipc::test::openDescriptorCount();
  {
    ipc::OwnedFd held(::dup(STDERR_FILENO));
    ASSERT_TRUE(held);
    EXPECT_EQ(ipc::test::openDescriptorCount(), before + 1);
    ipc::OwnedFd other(::dup(STDERR_FILENO));
    EXPECT_EQ(ipc::test::openDescriptorCount(), before + 2);
    held = std::move(other);  // the first one is closed
    EXPECT_EQ(ipc::test::openDescriptorCount(), before + 1);
    EXPECT_FALSE(other);  // NOLINT(bugprone-use-after-move): moved-from holds nothing
    held.reset();
    EXPECT_FALSE(held);
    EXPECT_EQ(ipc::test::openDescriptorCount(), before);
    ipc::OwnedFd released(::dup(STDERR_FILENO));
    const int raw = released.release();
    EXPECT_FALSE(released);
    EXPECT_EQ(ipc::test::openDescriptorCount(), before + 1);
    ::close(raw);
  }
  EXPECT_EQ(ipc::test::openDescriptorCount(), before);
}

TEST(Sockets, ConnectAcceptAndTheKernelSaysItIsUs) {
  const ipc::PrivateDirectory folder("memMapIPC-test-");
  const std::string path = folder.path() + "/socket";
  const ipc::OwnedFd listener = ipc::listenOn(path, 4);
  EXPECT_TRUE(ipc::test::isCloseOnExec(listener.get()));
  const ipc::OwnedFd client = ipc::connectTo(path, 5s);
  EXPECT_TRUE(ipc::test::isCloseOnExec(client.get()));
  const ipc::Accepted accepted = ipc::acceptWithin(listener.get(), 5s);
  EXPECT_TRUE(ipc::test::isCloseOnExec(accepted.socket.get()));
  EXPECT_EQ(accepted.peer.pid, ::getpid());
  EXPECT_EQ(accepted.peer.uid, ::getuid());
  EXPECT_EQ(accepted.peer.gid, ::getgid());
  EXPECT_EQ(ipc::whyPeerIsRefused(accepted.peer, ::getuid(), {::getpid()}), "");
  // The client's view: the listener, recorded when it called listen().
  const ipc::PeerCredentials server = ipc::peerCredentials(client.get());
  EXPECT_EQ(server.pid, ::getpid());
  EXPECT_EQ(server.uid, ::getuid());
  // The connection is a blocking socket again (connectTo connects without blocking).
  EXPECT_EQ(::fcntl(client.get(), F_GETFL) & O_NONBLOCK, 0);
}

TEST(Sockets, ConnectWaitsForAListenerThatComesLater) {
  const ipc::PrivateDirectory folder("memMapIPC-test-");
  const std::string path = folder.path() + "/socket";
  ipc::OwnedFd listener;
  // The listener appears while connectTo is already retrying: that is the case under test.
  std::thread late([&] {
    std::this_thread::sleep_for(200ms);
    listener = ipc::listenOn(path, 4);
  });
  std::optional<ipc::OwnedFd> client;
  std::string error;
  try {
    client = ipc::connectTo(path, 10s);
  } catch (const ipc::IpcError& e) {
    error = e.what();
  }
  late.join();
  EXPECT_EQ(error, "");
  ASSERT_TRUE(client && *client);
  const ipc::Accepted accepted = ipc::acceptWithin(listener.get(), 5s);
  EXPECT_EQ(accepted.peer.pid, ::getpid());
}

TEST(Sockets, AcceptTimesOutCleanlyWithNoClient) {
  const ipc::PrivateDirectory folder("memMapIPC-test-");
  const ipc::OwnedFd listener = ipc::listenOn(folder.path() + "/socket", 4);
  const int before = ipc::test::openDescriptorCount();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::acceptWithin(listener.get(), 50ms); }),
            "no connection within 50 ms");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_EQ(ipc::test::openDescriptorCount(), before);
  // The listener still works after a timeout.
  const ipc::OwnedFd client = ipc::connectTo(folder.path() + "/socket", 5s);
  EXPECT_EQ(ipc::acceptWithin(listener.get(), 5s).peer.pid, ::getpid());
}

TEST(Sockets, ConnectToAMissingSocketFailsAfterItsTimeout) {
  const ipc::PrivateDirectory folder("memMapIPC-test-");
  const std::string path = folder.path() + "/missing";
  const int before = ipc::test::openDescriptorCount();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::connectTo(path, 100ms); }),
            "connect " + path + " failed: No such file or directory (still failing after 100 ms)");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_EQ(ipc::test::openDescriptorCount(), before);
}

TEST(Sockets, ConnectToAFileNobodyListensOnIsRefusedAfterItsTimeout) {
  const ipc::PrivateDirectory folder("memMapIPC-test-");
  const std::string path = folder.path() + "/socket";
  {
    const ipc::OwnedFd closedListener = ipc::listenOn(path, 4);
  }  // the socket file stays, nobody listens
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::connectTo(path, 50ms); }),
            "connect " + path + " failed: Connection refused (still failing after 50 ms)");
}

TEST(Sockets, BindRefusesAPathInUse) {
  const ipc::PrivateDirectory folder("memMapIPC-test-");
  const std::string path = folder.path() + "/socket";
  const ipc::OwnedFd first = ipc::listenOn(path, 4);
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::listenOn(path, 4); }),
            "bind " + path + " failed: Address already in use");
}

TEST(Sockets, RefusesAPathLongerThanASocketAddress) {
  const std::string path = "/tmp/" + std::string(120, 'x');
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::listenOn(path, 4); }),
            "socket path '" + path + "' is 125 bytes long; a Unix socket path holds 1 to 107");
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::connectTo(path, 10ms); }),
            "socket path '" + path + "' is 125 bytes long; a Unix socket path holds 1 to 107");
}

TEST(Sockets, PeerCredentialsOfANonSocketNamesTheCall) {
  EXPECT_EQ(messageOf<ipc::IpcError>([] { ipc::peerCredentials(-1); }),
            "getsockopt SO_PEERCRED failed: Bad file descriptor");
}

TEST(WhyPeerIsRefused, AcceptsOnlyTheExpectedUserAndWorkers) {
  const ipc::PeerCredentials worker{1234, 1000, 1000};
  EXPECT_EQ(ipc::whyPeerIsRefused(worker, 1000, {1233, 1234}), "");
  EXPECT_EQ(ipc::whyPeerIsRefused(worker, 0, {1234}), "peer pid 1234 runs as uid 1000, not uid 0");
  EXPECT_EQ(ipc::whyPeerIsRefused(worker, 1000, {1235, 1236}),
            "peer pid 1234 is not a worker this process started (pids 1235, 1236)");
  EXPECT_EQ(ipc::whyPeerIsRefused(worker, 1000, {}),
            "peer pid 1234 is not a worker this process started (none started)");
  // The uid is judged first: a stranger of another user is named for that.
  EXPECT_EQ(ipc::whyPeerIsRefused(worker, 0, {}), "peer pid 1234 runs as uid 1000, not uid 0");
}
