// memMapIPC_standin_worker: a stand-in for a memMapIPC worker in the unit tests, with no CUDA.
// Started the way the parent starts its workers (`<program> --worker 3 <parent pid> <index>`,
// worker_processes.hpp), it tells the parent which descriptors it found open: one message (type
// 1) on descriptor 3, whose payload has a line "<fd> <target>" for each; then it waits for one
// message from the parent and exits with 0. With
// MEMMAPIPC_STANDIN=exit3 in its environment it exits with 3 at once instead, as a worker that
// dies before it says anything.
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "ipc_channel.hpp"

int main() {
  if (const char* mode = std::getenv("MEMMAPIPC_STANDIN"); mode && std::strcmp(mode, "exit3") == 0)
    return 3;
  DIR* folder = ::opendir("/proc/self/fd");
  if (folder == nullptr)
    return 2;
  std::string list;
  while (const dirent* entry = ::readdir(folder)) {
    if (entry->d_name[0] == '.' || std::atoi(entry->d_name) == ::dirfd(folder))
      continue;  // the listing's own descriptor is not one it inherited
    char target[256] = {};
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    const ssize_t length = ::readlink(link.c_str(), target, sizeof(target) - 1);
    list += std::string(entry->d_name) + " " + (length > 0 ? target : "?") + "\n";
  }
  ::closedir(folder);
  try {  // then it waits for the parent's word (kQuit), as a worker does
    memsamples::ipc::sendMessage(memsamples::ipc::kWorkerSocket, 1, list.data(), list.size());
    (void)memsamples::ipc::receiveMessage(memsamples::ipc::kWorkerSocket, std::chrono::minutes(1));
  } catch (const std::exception&) {
    return 1;
  }
  return 0;
}
