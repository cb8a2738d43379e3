// What the memMapIPC parent and worker accept as a message (ipc_protocol.hpp): the right type
// and size, or one clear error; a worker's kFailed text becomes the parent's error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ipc_protocol.hpp"

namespace ipc = memsamples::ipc;

namespace {

ipc::Message messageOf(std::uint32_t type, std::size_t bytes) {
  ipc::Message message;
  message.type = type;
  message.payload.assign(bytes, std::uint8_t{7});
  return message;
}

template <typename Call>
std::string errorOf(Call call) {
  try {
    call();
  } catch (const ipc::IpcError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Protocol, APayloadOfTheRightTypeAndSizeIsCopiedOut) {
  ipc::Hello hello{3, 1};
  ipc::Message message = messageOf(ipc::kHello, sizeof hello);
  std::memcpy(message.payload.data(), &hello, sizeof hello);
  const ipc::Hello read = ipc::payloadAs<ipc::Hello>(message, ipc::kHello);
  EXPECT_EQ(read.index, 3u);
  EXPECT_EQ(read.device, 1);
}

TEST(Protocol, AWrongTypeOrSizeIsOneClearError) {
  EXPECT_EQ(errorOf([] { ipc::payloadAs<ipc::Hello>(messageOf(ipc::kDone, 8), ipc::kHello); }),
            "expected message 1 with 8 bytes, got 3 with 8");
  EXPECT_EQ(errorOf([] { ipc::payloadAs<ipc::Hello>(messageOf(ipc::kHello, 5), ipc::kHello); }),
            "expected message 1 with 8 bytes, got 1 with 5");
  EXPECT_EQ(errorOf([] { ipc::expectMessage(messageOf(ipc::kDone, 1), ipc::kDone); }),
            "expected message 3 without payload, got 3 with 1 bytes");
  EXPECT_EQ(errorOf([] { ipc::expectMessage(messageOf(ipc::kReleased, 0), ipc::kDone); }),
            "expected message 3 without payload, got 9 with 0 bytes");
  EXPECT_EQ(errorOf([] { ipc::expectMessage(messageOf(ipc::kDone, 0), ipc::kDone); }),
            "(no error)");
}

TEST(Protocol, AWorkersFailureTextBecomesTheError) {
  const std::string text = "worker 1: cuMemImportFromShareableHandle failed";
  ipc::Message failed;
  failed.type = ipc::kFailed;
  failed.payload.assign(text.begin(), text.end());
  EXPECT_EQ(errorOf([&] { ipc::payloadAs<ipc::BenchDone>(failed, ipc::kBenchDone); }), text);
  EXPECT_EQ(errorOf([&] { ipc::expectMessage(failed, ipc::kDone); }), text);
}

TEST(Protocol, PathNamesAndTheMonotonicClock) {
  EXPECT_STREQ(ipc::pathName(ipc::SharePath::VmmDescriptor), "VMM + descriptor");
  EXPECT_STREQ(ipc::pathName(ipc::SharePath::LegacyIpc), "legacy IPC handle");
  EXPECT_STREQ(ipc::pathName(ipc::SharePath::Pool), "memory pool");
  const std::int64_t first = ipc::monotonicNanoseconds();
  EXPECT_GT(first, 0);
  EXPECT_GE(ipc::monotonicNanoseconds(), first);
}
