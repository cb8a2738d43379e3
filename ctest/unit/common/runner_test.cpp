// runSample(): the one place where outcomes become output and exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "memsamples.hpp"
#include "support/devices.hpp"

namespace ms = memsamples;

namespace {

struct Run {
  int exitCode = -1;
  std::string out;
  std::string err;
};

Run run(std::vector<std::string> args, const std::function<ms::Verdict(ms::Report&)>& body) {
  ms::CommonOptions options;
  ms::CommandLine cli("sample", "Test sample.");
  cli.addCommonOptions(options);
  std::vector<const char*> argv{"sample"};
  for (const auto& arg : args)
    argv.push_back(arg.c_str());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  Run result;
  result.exitCode = ms::runSample(cli, options, static_cast<int>(argv.size()), argv.data(), body);
  result.out = testing::internal::GetCapturedStdout();
  result.err = testing::internal::GetCapturedStderr();
  return result;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(Runner, PassAndFail) {
  auto pass = run({}, [](ms::Report& report) {
    report.out() << "hello\n";
    return ms::Verdict::Pass;
  });
  EXPECT_EQ(pass.exitCode, ms::kExitPass);
  EXPECT_TRUE(contains(pass.out, "hello\nResult = PASS\n"));
  auto fail = run({}, [](ms::Report&) { return ms::Verdict::Fail; });
  EXPECT_EQ(fail.exitCode, ms::kExitFail);
  EXPECT_TRUE(contains(fail.out, "Result = FAIL"));
}

TEST(Runner, WaivedPrintsTheReasonAndReturnsTwo) {
  auto waived = run({}, [](ms::Report&) -> ms::Verdict { throw ms::WaivedError("no VMM"); });
  EXPECT_EQ(waived.exitCode, ms::kExitWaived);
  EXPECT_TRUE(contains(waived.out, "WAIVED: no VMM\n"));
}

TEST(Runner, ErrorsAreFailuresWithTheMessage) {
  auto failed = run({}, [](ms::Report&) -> ms::Verdict {
    throw ms::CudaError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc failed at x.cpp:1: oom");
  });
  EXPECT_EQ(failed.exitCode, ms::kExitFail);
  EXPECT_TRUE(contains(failed.err, "sample: error: cuMemAlloc failed at x.cpp:1: oom"));
  EXPECT_TRUE(contains(failed.out, "Result = FAIL"));
}

// Fake compute-mode sources for runSample(): what the driver would say about every device.
std::vector<int> oneExclusiveDevice() {
  return {CU_COMPUTEMODE_DEFAULT, CU_COMPUTEMODE_EXCLUSIVE_PROCESS};
}
std::vector<int> everyDeviceInDefaultMode() {
  return {CU_COMPUTEMODE_DEFAULT, CU_COMPUTEMODE_DEFAULT};
}

// Installs a compute-mode source for one test, and takes it out again.
class ComputeModes {
 public:
  explicit ComputeModes(ms::ComputeModeSource source) : saved_(ms::computeModeSource()) {
    ms::setComputeModeSource(source);
  }
  ~ComputeModes() { ms::setComputeModeSource(saved_); }
  ComputeModes(const ComputeModes&) = delete;
  ComputeModes& operator=(const ComputeModes&) = delete;

 private:
  ms::ComputeModeSource saved_;
};

ms::Verdict deviceUnavailable(ms::Report&) {
  throw ms::CudaError(CUDA_ERROR_DEVICE_UNAVAILABLE, "cuCtxCreate failed at x.cpp:5: busy");
}

TEST(Runner, ADeviceInUseByAnotherProcessWaives) {
  // In compute mode EXCLUSIVE_PROCESS, cuCtxCreate refuses a second process: the machine's state
  // at that moment, not a fault of the sample, so no FAIL; the waiver names the device and mode.
  ComputeModes modes(&oneExclusiveDevice);
  auto busy = run({"--json", "-"}, &deviceUnavailable);
  EXPECT_EQ(busy.exitCode, ms::kExitWaived);
  EXPECT_TRUE(contains(busy.err,
                       "WAIVED: cuCtxCreate failed at x.cpp:5: busy (another process "
                       "holds the device, or its compute mode forbids this one: device 1 is in "
                       "compute mode EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS))\n"))
      << busy.err;
  EXPECT_TRUE(contains(busy.out, "\"verdict\": \"WAIVED\", \"reason\": \"cuCtxCreate failed"));
  EXPECT_FALSE(contains(busy.err, "error:"));
}

TEST(Runner, AnUnavailableDeviceThatNoComputeModeExplainsFails) {
  // Every device in DEFAULT mode, or no way to ask: a bug (a context made twice, a wrong device)
  // must not become a waiver.
  for (ms::ComputeModeSource source : {&everyDeviceInDefaultMode, ms::ComputeModeSource{}}) {
    ComputeModes modes(source);
    auto failed = run({}, &deviceUnavailable);
    EXPECT_EQ(failed.exitCode, ms::kExitFail);
    EXPECT_TRUE(contains(failed.err, "sample: error: cuCtxCreate failed at x.cpp:5: busy (no "
                                     "device is in an exclusive or prohibited compute mode"))
        << failed.err;
    EXPECT_TRUE(contains(failed.out, "Result = FAIL"));
    EXPECT_FALSE(contains(failed.out + failed.err, "WAIVED"));
  }
}

TEST(Runner, TheExplanationNamesEachExclusiveOrProhibitedDevice) {
  EXPECT_EQ(ms::deviceUnavailableExplanation({}), "");
  EXPECT_EQ(ms::deviceUnavailableExplanation({CU_COMPUTEMODE_DEFAULT}), "");
  EXPECT_EQ(ms::deviceUnavailableExplanation(
                {CU_COMPUTEMODE_PROHIBITED, CU_COMPUTEMODE_DEFAULT, CU_COMPUTEMODE_EXCLUSIVE_PROCESS}),
            "device 0 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED), device 2 is in "
            "compute mode EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS)");
}

TEST(Runner, UsageErrorsBeforeAndDuringTheBody) {
  bool ran = false;
  auto bad = run({"--nope"}, [&](ms::Report&) {
    ran = true;
    return ms::Verdict::Pass;
  });
  EXPECT_FALSE(ran);
  EXPECT_EQ(bad.exitCode, ms::kExitFail);
  EXPECT_TRUE(contains(bad.err, "sample: unknown option '--nope'\nRun 'sample --help'"));
  auto late = run({}, [](ms::Report&) -> ms::Verdict { throw ms::UsageError("--device 7 bad"); });
  EXPECT_EQ(late.exitCode, ms::kExitFail);
  EXPECT_TRUE(contains(late.err, "--device 7 bad"));
}

TEST(Runner, HelpExitsZeroWithoutRunning) {
  bool ran = false;
  auto help = run({"--help"}, [&](ms::Report&) {
    ran = true;
    return ms::Verdict::Pass;
  });
  EXPECT_FALSE(ran);
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_TRUE(contains(help.out, "Usage: sample"));
}

TEST(Runner, JsonToStdoutKeepsStdoutMachineReadable) {
  auto result = run({"--json", "-"}, [](ms::Report& report) {
    report.out() << "human text\n";
    report.json().set("gbps", 1.5);
    return ms::Verdict::Pass;
  });
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(result.out,
            "{\"sample\": \"sample\", \"verdict\": \"PASS\", \"results\": {\"gbps\": 1.5}}\n");
  EXPECT_TRUE(contains(result.err, "human text"));
}

TEST(Runner, JsonFileRecordsWaiverReason) {
  char path[] = "/tmp/memsamples_json_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  auto result = run({"--json", path, "--quiet"},
                    [](ms::Report&) -> ms::Verdict { throw ms::WaivedError("no \"GPU\""); });
  EXPECT_EQ(result.exitCode, ms::kExitWaived);
  EXPECT_EQ(result.out, "WAIVED: no \"GPU\"\n");  // --quiet keeps only the verdict
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(),
            "{\"sample\": \"sample\", \"verdict\": \"WAIVED\", \"reason\": \"no \\\"GPU\\\"\", "
            "\"results\": {}}\n");
  unlink(path);
}

TEST(Runner, UnwritableJsonPathFailsBeforeTheBody) {
  bool ran = false;
  auto result = run({"--json", "/nonexistent/dir/f.json"}, [&](ms::Report&) {
    ran = true;
    return ms::Verdict::Pass;
  });
  EXPECT_FALSE(ran);
  EXPECT_EQ(result.exitCode, ms::kExitFail);
  EXPECT_TRUE(contains(result.err, "cannot open --json file '/nonexistent/dir/f.json'"));
}
