// 07_memMapIPC's messages: a header, a payload, descriptors passed with SCM_RIGHTS, over a
// SOCK_SEQPACKET socket pair, and every way a peer can get one wrong (bad magic, a huge length, a
// message cut short, a record too long, too many descriptors, silence) turned into one clear
// error, with no descriptor leaked.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "ipc_channel.hpp"
#include "ipc_test_support.hpp"
#include "test_support.hpp"

namespace ipc = memsamples::ipc;
namespace itest = memsamples::ipc::test;
using memsamples::test::messageOf;
using namespace std::chrono_literals;

namespace {

std::string textOf(const std::vector<std::uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

/// Whether anything is waiting to be read on @p socket right now.
bool hasData(int socket) {
  pollfd entry{socket, POLLIN, 0};
  return ::poll(&entry, 1, 0) == 1;
}

}  // namespace

TEST(Framing, TypeAndPayloadMakeTheRoundTrip) {
  auto [a, b] = itest::socketPair();
  const std::string text = "hello, worker";
  ipc::sendMessage(a.get(), 7, text.data(), text.size());
  const ipc::Message message = ipc::receiveMessage(b.get(), 5s);
  EXPECT_EQ(message.type, 7u);
  EXPECT_EQ(textOf(message.payload), text);
  EXPECT_TRUE(message.descriptors.empty());
  EXPECT_FALSE(hasData(b.get()));  // exactly one message was read, nothing more
}

TEST(Framing, MessagesStayApartInTheStream) {
  auto [a, b] = itest::socketPair();
  ipc::sendMessage(a.get(), 1, "one", 3);
  ipc::sendMessage(a.get(), 2, nullptr, 0);
  ipc::sendMessage(a.get(), 3, "three", 5);
  const ipc::Message first = ipc::receiveMessage(b.get(), 5s);
  const ipc::Message second = ipc::receiveMessage(b.get(), 5s);
  const ipc::Message third = ipc::receiveMessage(b.get(), 5s);
  EXPECT_EQ(first.type, 1u);
  EXPECT_EQ(textOf(first.payload), "one");
  EXPECT_EQ(second.type, 2u);
  EXPECT_TRUE(second.payload.empty());
  EXPECT_EQ(third.type, 3u);
  EXPECT_EQ(textOf(third.payload), "three");
}

TEST(Framing, ZeroLengthPayload) {
  auto [a, b] = itest::socketPair();
  ipc::sendMessage(a.get(), 0xFFFFFFFFu, nullptr, 0);
  const ipc::Message message = ipc::receiveMessage(b.get(), 5s);
  EXPECT_EQ(message.type, 0xFFFFFFFFu);
  EXPECT_TRUE(message.payload.empty());
}

TEST(Framing, MaximumPayloadArrivesWhole) {
  auto [a, b] = itest::socketPair();
  std::vector<std::uint8_t> payload(ipc::kMaxPayloadBytes);
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<std::uint8_t>(i * 7 + i / 256);
  }
  // More than a socket buffer holds: the sender blocks until the receiver reads, so it runs on
  // its own thread.
  std::string sendError;
  std::thread sender([&, fd = a.get()] {
    try {
      ipc::sendMessage(fd, 9, payload.data(), payload.size());
    } catch (const ipc::IpcError& e) {
      sendError = e.what();
    }
  });
  std::string receiveError;
  ipc::Message message;
  try {
    message = ipc::receiveMessage(b.get(), 10s);
  } catch (const ipc::IpcError& e) {
    receiveError = e.what();
  }
  sender.join();
  EXPECT_EQ(sendError, "");
  EXPECT_EQ(receiveError, "");
  EXPECT_EQ(message.type, 9u);
  EXPECT_TRUE(message.payload == payload);
}

TEST(Framing, SlowSendersPiecesAreJoined) {
  auto [a, b] = itest::socketPair();
  const itest::RawHeader header{ipc::kMessageMagic, 5, 10};
  const char* payload = "0123456789";
  // Pieces of the header and the payload, apart in time: each read gets only part of it.
  std::thread sender([&, fd = a.get()] {
    const auto* bytes = reinterpret_cast<const char*>(&header);
    itest::writeRaw(fd, bytes, 5);
    std::this_thread::sleep_for(30ms);
    itest::writeRaw(fd, bytes + 5, sizeof(header) - 5);
    std::this_thread::sleep_for(30ms);
    itest::writeRaw(fd, payload, 4);
    std::this_thread::sleep_for(30ms);
    itest::writeRaw(fd, payload + 4, 6);
  });
  std::string error;
  ipc::Message message;
  try {
    message = ipc::receiveMessage(b.get(), 10s);
  } catch (const ipc::IpcError& e) {
    error = e.what();
  }
  sender.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(message.type, 5u);
  EXPECT_EQ(textOf(message.payload), "0123456789");
}

TEST(Framing, TooLargePayloadIsRefusedOnSendAndNothingIsSent) {
  auto [a, b] = itest::socketPair();
  std::vector<std::uint8_t> payload(ipc::kMaxPayloadBytes + 1);
  EXPECT_EQ(messageOf<ipc::IpcError>(
                [&] { ipc::sendMessage(a.get(), 1, payload.data(), payload.size()); }),
            "a payload of 1048577 bytes is more than the 1048576 a message may carry");
  EXPECT_FALSE(hasData(b.get()));
}

TEST(Framing, TooManyDescriptorsAreRefusedOnSend) {
  auto [a, b] = itest::socketPair();
  const std::vector<int> descriptors(ipc::kMaxDescriptors + 1, STDERR_FILENO);
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::sendMessage(a.get(), 1, "x", 1, descriptors); }),
            "17 descriptors are more than the 16 a message may carry");
  EXPECT_FALSE(hasData(b.get()));
}

TEST(Framing, SendingToAClosedPeerIsAnErrorNotSigpipe) {
  auto [a, b] = itest::socketPair();
  b.reset();
  // Without MSG_NOSIGNAL this would kill the test binary with SIGPIPE.
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::sendMessage(a.get(), 1, "x", 1); }),
            "sendmsg failed: Broken pipe");
}

TEST(Framing, SendingToAPeerThatReadsNothingTimesOut) {
  // The peer never reads: once the socket is full, the send must end with an error within its
  // timeout instead of blocking for ever in sendmsg.
  auto [a, b] = itest::socketPair();
  std::vector<std::uint8_t> payload(ipc::kMaxPayloadBytes);  // more than the socket holds
  std::string sendError = "(still blocked)";
  std::atomic<bool> finished{false};
  std::thread sender([&, fd = a.get()] {
    try {
      ipc::sendMessage(fd, 1, payload.data(), payload.size(), {}, 100ms);
      sendError = "(no error)";
    } catch (const ipc::IpcError& e) {
      sendError = e.what();
    }
    finished = true;
  });
  const auto start = std::chrono::steady_clock::now();
  while (!finished && std::chrono::steady_clock::now() - start < 10s)
    std::this_thread::sleep_for(10ms);
  const bool endedInTime = finished;
  if (!endedInTime)
    b.reset();  // the closed peer ends a sender stuck in sendmsg (EPIPE), so the test can end
  sender.join();
  EXPECT_TRUE(endedInTime) << "the send blocked for 10 s past its 100 ms timeout";
  EXPECT_EQ(sendError.rfind("could not send within 100 ms: the peer reads nothing (", 0), 0u)
      << sendError;
}

TEST(Framing, WrongMagicIsRefused) {
  auto [a, b] = itest::socketPair();
  const itest::RawHeader header{0x12345678, 1, 0};
  itest::writeRaw(a.get(), &header, sizeof(header));
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "a message header without the magic number 0x4350494d (got 0x12345678)");
}

TEST(Framing, OversizedLengthFieldIsRefusedBeforeAnyAllocation) {
  auto [a, b] = itest::socketPair();
  const itest::RawHeader header{ipc::kMessageMagic, 1, 0xFFFFFFF0u};
  itest::writeRaw(a.get(), &header, sizeof(header));
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "a message header announces 4294967280 payload bytes, more than the 1048576 allowed");
}

TEST(Framing, LengthOneOverTheMaximumIsRefused) {
  auto [a, b] = itest::socketPair();
  const itest::RawHeader header{ipc::kMessageMagic, 1,
                                static_cast<std::uint32_t>(ipc::kMaxPayloadBytes + 1)};
  itest::writeRaw(a.get(), &header, sizeof(header));
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "a message header announces 1048577 payload bytes, more than the 1048576 allowed");
}

TEST(Framing, HalfAHeaderThenCloseIsCutShort) {
  auto [a, b] = itest::socketPair();
  const itest::RawHeader header{ipc::kMessageMagic, 1, 4};
  itest::writeRaw(a.get(), &header, 6);
  a.reset();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "message cut short: the peer closed the connection after 6 of at least 12 bytes");
}

TEST(Framing, HalfAPayloadThenCloseIsCutShort) {
  auto [a, b] = itest::socketPair();
  const itest::RawHeader header{ipc::kMessageMagic, 1, 8};
  itest::writeRaw(a.get(), &header, sizeof(header));
  itest::writeRaw(a.get(), "abcd", 4);
  a.reset();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "message cut short: the peer closed the connection after 16 of 20 bytes");
}

TEST(Framing, EndOfStreamBeforeAMessageSaysThePeerClosed) {
  auto [a, b] = itest::socketPair();
  a.reset();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "the peer closed the connection");
}

TEST(Framing, APeerThatClosedWithOurDataUnreadAlsoSaysThePeerClosed) {
  // A worker that dies before reading what the parent sent: the parent's read gets ECONNRESET,
  // which is the same news as EOF.
  auto [a, b] = itest::socketPair();
  ipc::sendMessage(a.get(), 1, "unread", 6);
  b.reset();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(a.get(), 5s); }),
            "the peer closed the connection");
}

TEST(Framing, SilenceIsATimeout) {
  auto [a, b] = itest::socketPair();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 50ms); }),
            "no message within 50 ms");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

TEST(Framing, APartMessageThenSilenceIsATimeout) {
  auto [a, b] = itest::socketPair();
  const itest::RawHeader header{ipc::kMessageMagic, 1, 8};
  itest::writeRaw(a.get(), &header, sizeof(header));
  itest::writeRaw(a.get(), "ab", 2);
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 50ms); }),
            "no whole message within 50 ms: got 14 of 20 bytes");
}

TEST(Framing, ARecordLongerThanTheMessageStillNeedsIsRefused) {
  // On a SOCK_SEQPACKET socket the rest of a record that does not fit is lost: never a partial
  // read that would put the stream out of step.
  auto [a, b] = itest::socketPair();
  const itest::RawHeader header{ipc::kMessageMagic, 1, 4};
  itest::writeRaw(a.get(), &header, sizeof(header));
  itest::writeRaw(a.get(), "0123456789", 10);
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "a record longer than the 4 bytes the message still needed (the rest was cut off: "
            "MSG_TRUNC)");
  // A header and its payload in one record: the header read cuts it.
  const std::uint8_t both[sizeof(header) + 4] = {};
  itest::writeRaw(a.get(), both, sizeof(both));
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "a record longer than the 12 bytes the message still needed (the rest was cut off: "
            "MSG_TRUNC)");
}

TEST(Framing, APayloadLargerThanARecordTravelsInSeveralAndArrivesWhole) {
  auto [a, b] = itest::socketPair();
  std::vector<std::uint8_t> payload(3 * ipc::kMaxRecordBytes + 5);
  std::iota(payload.begin(), payload.end(), std::uint8_t{1});
  std::string sendError;
  std::thread sender([&, fd = a.get()] {
    try {
      ipc::sendMessage(fd, 3, payload.data(), payload.size());
    } catch (const ipc::IpcError& e) {
      sendError = e.what();
    }
  });
  std::size_t records = 0;
  std::vector<std::uint8_t> record(ipc::kMaxPayloadBytes);
  // The header, then the payload's records, each at most kMaxRecordBytes long.
  for (std::size_t got = 0; got < sizeof(itest::RawHeader) + payload.size(); ++records) {
    const ssize_t bytes = ::recv(b.get(), record.data(), record.size(), 0);
    ASSERT_GT(bytes, 0);
    EXPECT_LE(static_cast<std::size_t>(bytes), ipc::kMaxRecordBytes);
    got += static_cast<std::size_t>(bytes);
  }
  sender.join();
  EXPECT_EQ(sendError, "");
  EXPECT_EQ(records, 1u + 4u);
}

TEST(Framing, ReceivingFromANonSocketNamesTheCall) {
  const int before = itest::openDescriptorCount();
  int pipeEnds[2];
  ASSERT_EQ(::pipe(pipeEnds), 0);
  const ipc::OwnedFd readEnd(pipeEnds[0]);
  const ipc::OwnedFd writeEnd(pipeEnds[1]);
  ASSERT_EQ(::write(writeEnd.get(), "x", 1), 1);
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(readEnd.get(), 5s); }),
            "recvmsg failed: Socket operation on non-socket");
  EXPECT_EQ(itest::openDescriptorCount(), before + 2);
}

TEST(Descriptors, AFilesDescriptorTravelsAndReadsTheSameFile) {
  std::string path = ::testing::TempDir() + "memMapIPC-shared-XXXXXX";
  ipc::OwnedFd file(::mkstemp(path.data()));
  ASSERT_TRUE(file);
  std::ofstream(path) << "what the sender wrote";
  struct stat sent {};
  ASSERT_EQ(::fstat(file.get(), &sent), 0);

  auto [client, server] = itest::socketPair();
  ipc::sendMessage(client.get(), 42, "file", 4, {file.get()});
  file.reset();  // the receiver's copy keeps the open file alive
  ::unlink(path.c_str());

  ipc::Message message = ipc::receiveMessage(server.get(), 5s);
  EXPECT_EQ(message.type, 42u);
  EXPECT_EQ(textOf(message.payload), "file");
  ASSERT_EQ(message.descriptors.size(), 1u);
  const int received = message.descriptors[0].get();
  EXPECT_TRUE(itest::isCloseOnExec(received));
  struct stat got {};
  ASSERT_EQ(::fstat(received, &got), 0);
  EXPECT_EQ(got.st_ino, sent.st_ino);
  EXPECT_EQ(got.st_dev, sent.st_dev);
  char buffer[64] = {};
  const ssize_t bytes = ::pread(received, buffer, sizeof(buffer), 0);
  ASSERT_GT(bytes, 0);
  EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(bytes)), "what the sender wrote");
}

TEST(Descriptors, TheMostAllowedArriveInOrder) {
  auto [a, b] = itest::socketPair();
  std::vector<ipc::OwnedFd> pipes;
  std::vector<int> writeEnds;
  for (std::size_t i = 0; i < ipc::kMaxDescriptors / 2; ++i) {
    int ends[2];
    ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
    pipes.emplace_back(ends[0]);
    pipes.emplace_back(ends[1]);
    writeEnds.push_back(ends[1]);
    writeEnds.push_back(ends[1]);  // the same one twice: two descriptors in the receiver
  }
  ASSERT_EQ(writeEnds.size(), ipc::kMaxDescriptors);
  ipc::sendMessage(a.get(), 1, nullptr, 0, writeEnds);
  const ipc::Message message = ipc::receiveMessage(b.get(), 5s);
  ASSERT_EQ(message.descriptors.size(), ipc::kMaxDescriptors);
  // Writing through the received descriptors 2i and 2i+1 reaches pipe i.
  for (std::size_t i = 0; i < ipc::kMaxDescriptors; ++i) {
    const char mark = static_cast<char>('a' + i);
    ASSERT_EQ(::write(message.descriptors[i].get(), &mark, 1), 1);
  }
  for (std::size_t i = 0; i < ipc::kMaxDescriptors / 2; ++i) {
    char marks[2] = {};
    ASSERT_EQ(::read(pipes[2 * i].get(), marks, 2), 2);
    EXPECT_EQ(marks[0], static_cast<char>('a' + 2 * i));
    EXPECT_EQ(marks[1], static_cast<char>('a' + 2 * i + 1));
  }
}

TEST(Descriptors, MoreThanAllowedAreAnErrorAndNoneLeaks) {
  auto [a, b] = itest::socketPair();
  const int before = itest::openDescriptorCount();
  const itest::RawHeader header{ipc::kMessageMagic, 1, 0};
  itest::writeRawWithDescriptors(a.get(), &header, sizeof(header),
                                 std::vector<int>(ipc::kMaxDescriptors + 1, STDERR_FILENO));
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "descriptors cut off (MSG_CTRUNC): the peer sent more than the 16 a message may "
            "carry");
  EXPECT_EQ(itest::openDescriptorCount(), before);
}

TEST(Descriptors, ThoseOfARejectedMessageAreClosed) {
  auto [a, b] = itest::socketPair();
  const int before = itest::openDescriptorCount();
  const itest::RawHeader header{0xBADBADu, 1, 0};
  itest::writeRawWithDescriptors(a.get(), &header, sizeof(header), {STDERR_FILENO, STDERR_FILENO});
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "a message header without the magic number 0x4350494d (got 0xbadbad)");
  EXPECT_EQ(itest::openDescriptorCount(), before);
}

TEST(Descriptors, ThoseOfAMessageCutShortAreClosed) {
  auto [a, b] = itest::socketPair();
  const int before = itest::openDescriptorCount();
  const itest::RawHeader header{ipc::kMessageMagic, 1, 100};
  itest::writeRawWithDescriptors(a.get(), &header, sizeof(header), {STDERR_FILENO});
  a.reset();
  EXPECT_EQ(messageOf<ipc::IpcError>([&] { ipc::receiveMessage(b.get(), 5s); }),
            "message cut short: the peer closed the connection after 12 of 112 bytes");
  EXPECT_EQ(itest::openDescriptorCount(), before - 1);  // a was closed
}

TEST(Descriptors, AMessageWithDescriptorsIsClosedWhenDropped) {
  auto [a, b] = itest::socketPair();
  const int before = itest::openDescriptorCount();
  ipc::sendMessage(a.get(), 1, nullptr, 0, {STDERR_FILENO, STDOUT_FILENO});
  {
    const ipc::Message message = ipc::receiveMessage(b.get(), 5s);
    EXPECT_EQ(itest::openDescriptorCount(), before + 2);
  }
  EXPECT_EQ(itest::openDescriptorCount(), before);
}
