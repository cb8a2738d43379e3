// What the memMapIPC parent and worker accept as a message (ipc_protocol.hpp): the right type
// and size, or one clear error; a worker's kFailed text becomes the parent's error; and a job
// that lies about its slice, or a message out of order, is refused by the worker.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
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
  EXPECT_STREQ(ipc::pathName(static_cast<ipc::SharePath>(3)), "unknown path");
  const std::int64_t first = ipc::monotonicNanoseconds();
  EXPECT_GT(first, 0);
  EXPECT_GE(ipc::monotonicNanoseconds(), first);
}

namespace {

/// A job that a worker accepts: 3 VMM allocations of 4 MiB (a granularity of 2 MiB) for 1 Mi
/// floats, and the slice [256 Ki, 768 Ki).
ipc::Job goodJob() {
  ipc::Job job;
  job.path = ipc::SharePath::VmmDescriptor;
  job.allocations = 3;
  job.allocationBytes = 4u << 20;
  job.granularity = 2u << 20;
  job.elements = 1u << 20;
  job.first = 1u << 18;
  job.count = 1u << 19;
  return job;
}

constexpr std::uint64_t kMax = UINT64_MAX;

}  // namespace

TEST(JobChecks, AGoodJobAndItsEdgesPass) {
  ipc::Job job = goodJob();
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3), "");
  job.first = job.elements;  // an empty slice at the very end
  job.count = 0;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3), "");
  job.first = 0;
  job.count = job.elements;  // the whole vector
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3), "");
  job.granularity = job.allocationBytes;  // one granule each
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3), "");
  job.elements = job.allocationBytes / 4;  // exactly full
  job.count = job.elements;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3), "");
  job.allocations = 1;  // a handoff: A alone, one descriptor
  EXPECT_EQ(ipc::whyJobIsRefused(job, 1), "");
  job.path = ipc::SharePath::LegacyIpc;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 0), "");
  job.path = ipc::SharePath::Pool;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 1), "");
}

TEST(JobChecks, SlicesThatWouldWrapAroundAreRefused) {
  // Each of these passed the old test `first + count > elements || elements * 4 >
  // allocationBytes`, whose sum and product wrap around in 64 bits.
  ipc::Job job = goodJob();
  job.elements = (kMax / 4) + 2;  // elements * 4 wraps to 4
  job.count = 1;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3),
            "its 4611686018427387905 floats per vector do not fit its 4194304-byte allocations");
  job = goodJob();
  job.first = kMax - 3;  // first + count wraps to 4
  job.count = 8;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3),
            "its slice starts at 18446744073709551612, past the end of 1048576");
  job = goodJob();
  job.first = 16;
  job.count = kMax - 7;  // first + count wraps to 8
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3),
            "its slice of 18446744073709551608 floats from 16 runs past the end of 1048576");
  job = goodJob();
  job.first = job.elements - 10;
  job.count = 11;  // one past the end, no wrap at all
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3),
            "its slice of 11 floats from 1048566 runs past the end of 1048576");
  job = goodJob();
  job.allocationBytes = 4 * job.elements - 1;  // one byte short
  job.path = ipc::SharePath::LegacyIpc;        // (a VMM job would fail its granularity first)
  EXPECT_EQ(ipc::whyJobIsRefused(job, 0),
            "its 1048576 floats per vector do not fit its 4194303-byte allocations");
  job.path = ipc::SharePath::VmmDescriptor;
  job.granularity = 1;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3),
            "its 1048576 floats per vector do not fit its 4194303-byte allocations");
}

TEST(JobChecks, PathsAllocationsAndDescriptorsMustAgree) {
  ipc::Job job = goodJob();
  job.path = static_cast<ipc::SharePath>(7);
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3), "it is for an unknown path 7");
  job = goodJob();
  job.allocations = 0;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 0), "it has 0 allocations; a job has 1 to 3");
  job.allocations = 4;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 4), "it has 4 allocations; a job has 1 to 3");
  job = goodJob();
  EXPECT_EQ(ipc::whyJobIsRefused(job, 0),
            "a VMM + descriptor job of 3 allocations came with 0 descriptors");
  job.path = ipc::SharePath::LegacyIpc;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 1),
            "a legacy IPC handle job of 3 allocations came with 1 descriptors");
  job.path = ipc::SharePath::Pool;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3),
            "a memory pool job of 3 allocations came with 3 descriptors");
}

TEST(JobChecks, AJobSentOverTheSocketIsAcceptedOrRefusedAsAWorkerWould) {
  const ipc::SocketPair pair = ipc::makeSocketPair();
  const auto sendAndAccept = [&](const ipc::Job& job) {
    ipc::send(pair.parentEnd.get(), ipc::kJob, job, {STDERR_FILENO, STDERR_FILENO, STDERR_FILENO});
    const ipc::Message message = ipc::receiveMessage(pair.workerEnd.get(), std::chrono::seconds(5));
    return errorOf([&] { (void)ipc::acceptJob(message); });
  };
  EXPECT_EQ(sendAndAccept(goodJob()), "(no error)");
  ipc::Job lying = goodJob();
  lying.first = kMax - 3;
  lying.count = 8;
  EXPECT_EQ(sendAndAccept(lying),
            "refused a job: its slice starts at 18446744073709551612, past the end of 1048576");
  lying = goodJob();
  lying.elements = (kMax / 4) + 2;
  lying.count = 1;
  EXPECT_EQ(sendAndAccept(lying),
            "refused a job: its 4611686018427387905 floats per vector do not fit its "
            "4194304-byte allocations");
  // Not a job at all: payloadAs() says what came instead.
  ipc::sendMessage(pair.parentEnd.get(), ipc::kJob, "short", 5);
  const ipc::Message shortOne = ipc::receiveMessage(pair.workerEnd.get(), std::chrono::seconds(5));
  EXPECT_EQ(errorOf([&] { (void)ipc::acceptJob(shortOne); }),
            "expected message 2 with " + std::to_string(sizeof(ipc::Job)) + " bytes, got 2 with 5");
}

TEST(JobChecks, EqualSlicesCoverTheVectorOnce) {
  ipc::Job job;
  job.elements = 1025;  // not a multiple of the worker count
  std::uint64_t next = 0;
  for (std::size_t w = 0; w < 3; ++w) {
    job.slice(w, 3);
    EXPECT_EQ(job.first, next);
    EXPECT_GE(job.count, 341u);
    EXPECT_LE(job.count, 342u);
    EXPECT_EQ(ipc::whyJobIsRefused(job, 0).find("slice"), std::string::npos);
    next = job.first + job.count;
  }
  EXPECT_EQ(next, job.elements);
}

TEST(MessageOrder, AWorkerTakesAJobOnlyWithNothingHeldAndAReleaseOnlyWithAJob) {
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kJob, false); }), "(no error)");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kBench, true); }), "(no error)");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kRelease, true); }), "(no error)");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kQuit, true); }), "(no error)");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kQuit, false); }), "(no error)");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kJob, true); }),
            "refused a job: the last job's imports are still held (no release came)");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kRelease, false); }),
            "refused message 8: it needs a job's imports, and none are held");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kBench, false); }),
            "refused message 4: it needs a job's imports, and none are held");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kHello, false); }),
            "refused message 1: not one a worker takes");
  EXPECT_EQ(errorOf([] { ipc::checkOrder(ipc::kDone, true); }),
            "refused message 3: not one a worker takes");
}

TEST(JobChecks, AVmmJobCarriesAGranularityThatDividesItsAllocations) {
  // The importer reserves its address range with the job's granularity as the alignment
  // (cuMemAddressReserve): none, or one that does not divide the allocations, is refused.
  ipc::Job job = goodJob();
  job.granularity = 0;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3),
            "its 4194304-byte VMM allocations are not a multiple of its granularity 0");
  job.granularity = 3u << 20;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 3),
            "its 4194304-byte VMM allocations are not a multiple of its granularity 3145728");
  // The other ways have no granularity to pass on.
  job.granularity = 0;
  job.path = ipc::SharePath::LegacyIpc;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 0), "");
  job.path = ipc::SharePath::Pool;
  EXPECT_EQ(ipc::whyJobIsRefused(job, 1), "");
}

TEST(JobChecks, TheGranularityTravelsWithTheJob) {
  const ipc::SocketPair pair = ipc::makeSocketPair();
  ipc::Job sent = goodJob();
  sent.granularity = 2u << 20;
  sent.allocationBytes = 6u << 20;
  ipc::send(pair.parentEnd.get(), ipc::kJob, sent, {STDERR_FILENO, STDERR_FILENO, STDERR_FILENO});
  const ipc::Message message = ipc::receiveMessage(pair.workerEnd.get(), std::chrono::seconds(5));
  const ipc::Job received = ipc::acceptJob(message);
  EXPECT_EQ(received.granularity, 2u << 20);
  EXPECT_EQ(received.allocationBytes, 6u << 20);
}
