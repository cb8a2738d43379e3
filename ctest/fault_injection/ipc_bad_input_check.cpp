// memsamples_ipc_bad_input_check <memMapIPC>
//
// Plays 07_memMapIPC's parent to a real worker and gives it what a broken or hostile parent
// could: a VMM job whose descriptors are not CUDA exports (/dev/null), a job without its
// descriptors, a message that is not one (a wrong magic number), jobs whose slice would make the
// kernel write outside it if the worker summed or multiplied the numbers without care, and a
// release before any job. Each time the worker must answer with one clear error (kFailed, naming
// the call, the framing problem or the refused job) and exit 1, and leave nothing behind (it is
// reaped). Then it starts the worker the wrong ways: without descriptor 3, with a pipe or a
// stream socket as descriptor 3, with a descriptor argument that is not a number: each time the
// worker must exit 1 with a message that says what is wrong and how a worker is started.
// Exit 2 (Skipped) when the worker cannot start because this machine cannot run CUDA programs
// (machine_waiver.hpp: an old driver, no usable device): it then has no input to refuse.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "ipc_channel.hpp"
#include "ipc_protocol.hpp"
#include "logged_process.hpp"
#include "machine_waiver.hpp"
#include "worker_processes.hpp"

namespace ipc = memsamples::ipc;
namespace mt = memsamples::test;

namespace {

constexpr std::chrono::seconds kTimeout{60};

/// A worker that reported, instead of its Hello, that this machine cannot run it.
struct MachineWaiver {
  std::string reason;
};

/// Starts a worker on device 0 the way the parent does (its end of a socket pair as
/// descriptor 3), says Hello and reads its Hello; then @p misbehave, and checks that the
/// worker reports an error containing @p expected and exits with 1.
bool expectWorkerRefuses(const std::string& program, const std::string& what,
                         const std::string& expected, void (*misbehave)(int socket)) {
  ipc::SocketPair pair = ipc::makeSocketPair();
  ipc::WorkerGroup group;
  const pid_t pid = group.start(program,
                                {"memMapIPC", "--worker", std::to_string(ipc::kWorkerSocket),
                                 std::to_string(getpid()), "0"},
                                pair.workerEnd.get());
  pair.workerEnd.reset();
  const int socket = pair.parentEnd.get();
  ipc::send(socket, ipc::kHello, ipc::Hello{0, 0});
  const ipc::Message hello = ipc::receiveMessage(socket, kTimeout);
  const std::string failure(hello.payload.begin(), hello.payload.end());
  if (hello.type == ipc::kFailed && memsamples::test::saysMachineCannotRunCuda(failure)) {
    (void)group.waitFor(pid, kTimeout);
    throw MachineWaiver{failure};
  }
  (void)ipc::payloadAs<ipc::Hello>(hello, ipc::kHello);
  misbehave(socket);
  std::string reported = "(no kFailed message)";
  try {
    const ipc::Message answer = ipc::receiveMessage(socket, kTimeout);
    if (answer.type == ipc::kFailed)
      reported.assign(answer.payload.begin(), answer.payload.end());
  } catch (const ipc::IpcError& error) {
    reported = std::string("(no answer: ") + error.what() + ")";
  }
  const std::string ended = group.waitFor(pid, kTimeout);
  const bool ok = reported.find(expected) != std::string::npos && ended == "exited with status 1";
  std::cout << what << ": worker said \"" << reported << "\" and " << ended << " -> "
            << (ok ? "ok" : "WRONG") << '\n';
  return ok;
}

/// Starts a worker with @p argument as its descriptor number and @p descriptor3 (or nothing)
/// as descriptor 3, every other one closed; it must exit with 1 saying @p expected.
bool expectWorkerCannotStart(const std::string& program, const std::string& what,
                             const std::string& expected, int descriptor3,
                             const std::string& argument = "3") {
  const mt::OutputLog log("memsamples_ipc_bad_start");
  const pid_t pid = mt::startLogged(
      {program, "--worker", argument, std::to_string(getpid()), "0"}, log, descriptor3);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string output = log.text();
  const bool exitedWith1 = WIFEXITED(status) && WEXITSTATUS(status) == 1;
  const bool ok = exitedWith1 && output.find(expected) != std::string::npos &&
                  output.find("which hands it one end of a socket pair") != std::string::npos;
  std::cout << what << ": worker said \"" << output.substr(0, output.find('\n'))
            << "\", wait status " << status << " -> " << (ok ? "ok" : "WRONG") << '\n';
  return ok;
}

/// A VMM job of three 2 MiB allocations for 1024 floats, sent with three /dev/null descriptors.
void sendVmmJob(int socket, const ipc::Job& job) {
  std::vector<ipc::OwnedFd> nulls;
  std::vector<int> raw;
  for (int i = 0; i < 3; ++i) {
    nulls.emplace_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw.push_back(nulls.back().get());
  }
  ipc::send(socket, ipc::kJob, job, raw);
}

ipc::Job vmmJob() {
  ipc::Job job;
  job.path = ipc::SharePath::VmmDescriptor;
  job.allocations = 3;
  job.allocationBytes = 2u << 20;
  job.granularity = 2u << 20;  // a job the checks accept: the import itself must refuse it
  job.elements = 1024;
  job.count = 1024;
  return job;
}

void sendWrongDescriptors(int socket) {
  sendVmmJob(socket, vmmJob());
}

void sendWrongMessage(int socket) {
  const std::uint32_t header[3] = {0xDEADBEEFu, ipc::kJob, 0};  // not kMessageMagic
  if (write(socket, header, sizeof header) != static_cast<ssize_t>(sizeof header))
    throw ipc::IpcError("write failed");
}

void sendMissingDescriptors(int socket) {
  ipc::Job job;  // a VMM job of 3 allocations, and no descriptor with it
  job.allocations = 3;
  ipc::send(socket, ipc::kJob, job);
}

void sendSliceStartingPastTheEnd(int socket) {
  ipc::Job job = vmmJob();
  job.first = UINT64_MAX - 3;  // first + count wraps around to 4
  job.count = 8;
  sendVmmJob(socket, job);
}

void sendSliceRunningPastTheEnd(int socket) {
  ipc::Job job = vmmJob();
  job.first = 16;
  job.count = UINT64_MAX - 7;  // first + count wraps around to 8
  sendVmmJob(socket, job);
}

void sendMoreFloatsThanTheAllocationsHold(int socket) {
  ipc::Job job = vmmJob();
  job.elements = UINT64_MAX / 4 + 2;  // elements * 4 wraps around to 4
  job.count = 1;
  sendVmmJob(socket, job);
}

void sendReleaseBeforeAnyJob(int socket) {
  ipc::sendMessage(socket, ipc::kRelease, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " <memMapIPC>\n";
    return 1;
  }
  try {
    const std::string program = argv[1];
    bool ok = true;
    ok &= expectWorkerRefuses(program, "descriptors that are not CUDA exports",
                              "cuMemImportFromShareableHandle failed", sendWrongDescriptors);
    ok &= expectWorkerRefuses(program, "a job without its descriptors", "came with 0 descriptors",
                              sendMissingDescriptors);
    ok &= expectWorkerRefuses(program, "a message with a wrong magic number", "magic",
                              sendWrongMessage);
    ok &= expectWorkerRefuses(program, "a slice starting past the end",
                              "refused a job: its slice starts at", sendSliceStartingPastTheEnd);
    ok &= expectWorkerRefuses(program, "a slice running past the end",
                              "refused a job: its slice of", sendSliceRunningPastTheEnd);
    ok &= expectWorkerRefuses(program, "more floats than the allocations hold",
                              "floats per vector do not fit", sendMoreFloatsThanTheAllocationsHold);
    ok &= expectWorkerRefuses(program, "a release before any job", "refused message 8",
                              sendReleaseBeforeAnyJob);

    ok &= expectWorkerCannotStart(program, "no descriptor 3", "descriptor 3 is not open", -1);
    int pipeEnds[2] = {-1, -1};
    if (pipe2(pipeEnds, O_CLOEXEC) != 0)
      throw ipc::IpcError("pipe2 failed");
    const ipc::OwnedFd readEnd(pipeEnds[0]);
    const ipc::OwnedFd writeEnd(pipeEnds[1]);
    ok &= expectWorkerCannotStart(program, "a pipe as descriptor 3",
                                  "descriptor 3 is not a socket", readEnd.get());
    int stream[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream) != 0)
      throw ipc::IpcError("socketpair failed");
    const ipc::OwnedFd streamEnd(stream[0]);
    const ipc::OwnedFd otherEnd(stream[1]);
    ok &= expectWorkerCannotStart(program, "a stream socket as descriptor 3",
                                  "not a Unix SOCK_SEQPACKET one", streamEnd.get());
    ok &= expectWorkerCannotStart(program, "a descriptor argument that is not a number",
                                  "'three' is not a descriptor number above 2", -1, "three");
    std::cout << (ok ? "bad input to a worker: PASS\n" : "bad input to a worker: FAIL\n");
    return ok ? 0 : 1;
  } catch (const MachineWaiver& waiver) {
    std::cout << "WAIVED: " << waiver.reason << '\n';
    return 2;
  } catch (const std::exception& error) {
    std::cout << "error: " << error.what() << '\n';
    return 1;
  }
}
