// timeOnStream() and timeRounds() through a link seam: Common's real timing code against a fake driver
// (fake_timing_driver.cpp) that logs every call and runs host functions on a thread.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "fake_timing_driver.hpp"
#include "memsamples.hpp"
#include "support/stage_timer.hpp"
#include "support/timing.hpp"

namespace ms = memsamples;
namespace mt = memsamples::test;

namespace {

CUstream const kStream = reinterpret_cast<CUstream>(0x5);

std::ptrdiff_t lastIndexOf(const std::vector<std::string>& log, const std::string& call) {
  const auto found = std::find(log.rbegin(), log.rend(), call);
  return found == log.rend() ? -1 : std::distance(log.begin(), found.base()) - 1;
}

std::ptrdiff_t firstIndexOf(const std::vector<std::string>& log, const std::string& call) {
  const auto found = std::find(log.begin(), log.end(), call);
  return found == log.end() ? -1 : std::distance(log.begin(), found);
}

}  // namespace

TEST(TimeOnStream, TimedRunsAreQueuedBehindAGateSoNoLaunchGapIsTimed) {
  mt::timingDriver() = {};
  const ms::TimingStats stats =
      ms::timeOnStream(kStream, 2, 5, [] { mt::enterTimingDriver("work"); });
  EXPECT_EQ(stats.samples, 5);
  EXPECT_DOUBLE_EQ(stats.medianMs, 2.0);
  const std::vector<std::string> log = mt::timingDriver().log();
  EXPECT_EQ(std::count(log.begin(), log.end(), "work"), 7);
  EXPECT_EQ(std::count(log.begin(), log.end(), "cuEventRecord"), 10);
  // The gate is queued after the warm-up and before the first timed event; its host function
  // returns only once every timed event and run has been queued behind it.
  const std::ptrdiff_t gate = firstIndexOf(log, "cuLaunchHostFunc");
  ASSERT_GE(gate, 0) << "no gate: the GPU may idle between an event and the work it times";
  EXPECT_EQ(std::count(log.begin(), log.begin() + gate, "work"), 2);
  EXPECT_LT(gate, firstIndexOf(log, "cuEventRecord"));
  EXPECT_GT(firstIndexOf(log, "host function returned"), lastIndexOf(log, "cuEventRecord"));
  EXPECT_GT(firstIndexOf(log, "host function returned"), lastIndexOf(log, "work"));
}

TEST(TimeOnStream, ManyRepetitionsAreGatedInBatchesOf32) {
  // A batch never fills the stream's command queue, which would block the host at the gate.
  mt::timingDriver() = {};
  ms::timeOnStream(kStream, 0, 70, [] { mt::enterTimingDriver("work"); });
  const std::vector<std::string> log = mt::timingDriver().log();
  std::vector<int> recordsPerGate;
  for (const std::string& call : log) {
    if (call == "cuLaunchHostFunc") {
      recordsPerGate.push_back(0);
    } else if (call == "cuEventRecord" && !recordsPerGate.empty()) {
      ++recordsPerGate.back();
    } else if (call == "host function returned") {
      EXPECT_EQ(recordsPerGate.back() % 2, 0) << "a gate opened in the middle of a repetition";
    }
  }
  EXPECT_EQ(recordsPerGate, (std::vector<int>{64, 64, 12}));
  EXPECT_EQ(std::count(log.begin(), log.end(), "host function returned"), 3);
}

TEST(TimeOnStream, AnErrorWhileQueuingOpensTheGateAtOnce) {
  mt::timingDriver() = {};
  mt::timingDriver().fail("cuEventRecord", 4, CUDA_ERROR_LAUNCH_FAILED);
  const auto started = std::chrono::steady_clock::now();
  try {
    ms::timeOnStream(kStream, 0, 5, [] { mt::enterTimingDriver("work"); });
    ADD_FAILURE() << "the failed cuEventRecord was not reported";
  } catch (const ms::CudaError& error) {
    EXPECT_NE(std::string(error.what()).find("cuEventRecord"), std::string::npos) << error.what();
  }
  // The gate was opened and its host function has ended before the error left timeOnStream
  // (the stream was waited for), and the 10 s safety timeout played no part.
  const std::vector<std::string> log = mt::timingDriver().log();
  EXPECT_GE(firstIndexOf(log, "host function returned"), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(TimeOnStream, WhereLaunchesBlockTheHostTheRunsAreTimedWithoutAGate) {
  // A launch that returns only once it has run (as under compute-sanitizer) cannot run while the
  // gate holds the stream: the gate gives up after a second, and the rest needs no gate.
  mt::timingDriver() = {};
  const auto started = std::chrono::steady_clock::now();
  const ms::TimingStats stats = ms::timeOnStream(kStream, 0, 40, [] {
    mt::enterTimingDriver("work");
    mt::finishHostFunction();  // "blocks" until the stream has passed the host function
  });
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(stats.samples, 40);
  const std::vector<std::string> log = mt::timingDriver().log();
  EXPECT_EQ(std::count(log.begin(), log.end(), "cuLaunchHostFunc"), 1);
  EXPECT_GE(took, std::chrono::milliseconds(900));
  EXPECT_LT(took, std::chrono::seconds(5));

  // CUDA_LAUNCH_BLOCKING=1 says so before anything is queued: no gate, no wait.
  mt::timingDriver() = {};
  setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  ms::timeOnStream(kStream, 0, 3, [] { mt::enterTimingDriver("work"); });
  unsetenv("CUDA_LAUNCH_BLOCKING");
  EXPECT_EQ(mt::timingDriver().count("cuLaunchHostFunc"), 0);
}

TEST(LaunchesBlockTheHost, OnlyCudaLaunchBlockingOne) {
  const auto with = [](const char* value) {
    return [value](const char* name) -> const char* {
      return std::string(name) == "CUDA_LAUNCH_BLOCKING" ? value : nullptr;
    };
  };
  EXPECT_FALSE(ms::launchesBlockTheHost(with(nullptr)));
  EXPECT_FALSE(ms::launchesBlockTheHost(with("")));
  EXPECT_FALSE(ms::launchesBlockTheHost(with("0")));
  EXPECT_FALSE(ms::launchesBlockTheHost(with("yes")));
  EXPECT_TRUE(ms::launchesBlockTheHost(with("1")));
}

TEST(TimeRounds, EveryStageOfEveryRoundHasItsOwnEventsAndOnlyTimedRoundsAreRead) {
  mt::timingDriver() = {};
  const std::vector<ms::StageTimes> times = ms::timeRounds(
      kStream, 1, 3, {[] { mt::enterTimingDriver("move"); }, [] { mt::enterTimingDriver("work"); }});
  ASSERT_EQ(times.size(), 2u);
  for (const ms::StageTimes& stage : times) {
    EXPECT_DOUBLE_EQ(stage.gpuMs, 2.0);  // the fake's elapsed time
    EXPECT_GE(stage.hostMs, 0.0);
  }
  const std::vector<std::string> log = mt::timingDriver().log();
  // Two events per stage and round, warm-up included; each stage between its own two records.
  EXPECT_EQ(mt::timingDriver().count("cuEventCreate"), 16);
  EXPECT_EQ(mt::timingDriver().count("cuEventRecord"), 16);
  std::vector<std::string> stages;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i] != "move" && log[i] != "work")
      continue;
    stages.push_back(log[i]);
    ASSERT_GT(i, 0u);
    ASSERT_LT(i + 1, log.size());
    EXPECT_EQ(log[i - 1], "cuEventRecord") << "stage " << stages.size();
    EXPECT_EQ(log[i + 1], "cuEventRecord") << "stage " << stages.size();
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"move", "work", "move", "work", "move", "work",
                                              "move", "work"}));
  // Waited for once, after everything is queued; the warm-up round's times are never read.
  EXPECT_EQ(mt::timingDriver().count("cuStreamSynchronize"), 1);
  EXPECT_GT(firstIndexOf(log, "cuStreamSynchronize"), lastIndexOf(log, "work"));
  EXPECT_EQ(mt::timingDriver().count("cuEventElapsedTime"), 6);
  EXPECT_GT(firstIndexOf(log, "cuEventElapsedTime"), firstIndexOf(log, "cuStreamSynchronize"));
}

TEST(TimeRounds, AFailedCallIsReportedByName) {
  mt::timingDriver() = {};
  mt::timingDriver().fail("cuEventElapsedTime", 1, CUDA_ERROR_LAUNCH_FAILED);
  try {
    ms::timeRounds(kStream, 0, 2, {[] { mt::enterTimingDriver("work"); }});
    ADD_FAILURE() << "the failed cuEventElapsedTime was not reported";
  } catch (const ms::CudaError& error) {
    EXPECT_NE(std::string(error.what()).find("cuEventElapsedTime"), std::string::npos)
        << error.what();
  }
}
