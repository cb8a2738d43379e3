// memsamples_ipc_bad_input_check <memMapIPC>
//
// Plays 07_memMapIPC's parent to a real worker and gives it what a broken or hostile parent
// could: a VMM job whose descriptors are not CUDA exports (/dev/null), and a message that is not
// one (a wrong magic number). Each time the worker must answer with one clear error (kFailed,
// naming the call or the framing problem) and exit 1, and leave nothing behind (it is reaped).
// Exit 2 (Skipped) when the worker cannot start because this machine cannot run CUDA programs
// (machine_waiver.hpp: an old driver, no usable device): it then has no input to refuse.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "ipc_channel.hpp"
#include "ipc_protocol.hpp"
#include "machine_waiver.hpp"
#include "worker_processes.hpp"

namespace ipc = memsamples::ipc;

namespace {

constexpr std::chrono::seconds kTimeout{60};

/// A worker that reported, instead of its Hello, that this machine cannot run it.
struct MachineWaiver {
  std::string reason;
};

/// Starts a worker on device 0, accepts it, reads its Hello; then @p misbehave, and checks that
/// the worker reports an error containing @p expected and exits with 1.
bool expectWorkerRefuses(const std::string& program, const std::string& what,
                         const std::string& expected, void (*misbehave)(int socket)) {
  const ipc::PrivateDirectory folder("memMapIPC-check");
  const std::string socketPath = folder.path() + "/socket";
  const ipc::OwnedFd listener = ipc::listenOn(socketPath, 1);
  ipc::WorkerGroup group;
  const pid_t pid = group.start(
      program, {"memMapIPC", "--worker", socketPath, std::to_string(getpid()), "0", "0"});
  ipc::Accepted worker = ipc::acceptWithin(listener.get(), kTimeout);
  const ipc::Message hello = ipc::receiveMessage(worker.socket.get(), kTimeout);
  const std::string failure(hello.payload.begin(), hello.payload.end());
  if (hello.type == ipc::kFailed && memsamples::test::saysMachineCannotRunCuda(failure)) {
    (void)group.waitFor(pid, kTimeout);
    throw MachineWaiver{failure};
  }
  (void)ipc::payloadAs<ipc::Hello>(hello, ipc::kHello);
  misbehave(worker.socket.get());
  std::string reported = "(no kFailed message)";
  try {
    const ipc::Message answer = ipc::receiveMessage(worker.socket.get(), kTimeout);
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

void sendWrongDescriptors(int socket) {
  ipc::Job job;
  job.path = ipc::SharePath::VmmDescriptor;
  job.allocations = 3;
  job.allocationBytes = 2u << 20;
  job.elements = 1024;
  job.count = 1024;
  std::vector<ipc::OwnedFd> nulls;
  std::vector<int> raw;
  for (int i = 0; i < 3; ++i) {
    nulls.emplace_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw.push_back(nulls.back().get());
  }
  ipc::send(socket, ipc::kJob, job, raw);
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " <memMapIPC>\n";
    return 1;
  }
  try {
    bool ok = true;
    ok &= expectWorkerRefuses(argv[1], "descriptors that are not CUDA exports",
                              "cuMemImportFromShareableHandle failed", sendWrongDescriptors);
    ok &= expectWorkerRefuses(argv[1], "a job without its descriptors", "came with 0 descriptors",
                              sendMissingDescriptors);
    ok &= expectWorkerRefuses(argv[1], "a message with a wrong magic number", "magic",
                              sendWrongMessage);
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
