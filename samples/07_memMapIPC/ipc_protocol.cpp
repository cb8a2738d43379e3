/**
 * @file ipc_protocol.cpp
 * @brief The memMapIPC message helpers (see ipc_protocol.hpp).
 */
#include "ipc_protocol.hpp"

#include <time.h>

namespace memsamples::ipc {

const char* pathName(SharePath path) {
  switch (path) {
    case SharePath::VmmDescriptor:
      return "VMM + descriptor";
    case SharePath::LegacyIpc:
      return "legacy IPC handle";
    case SharePath::Pool:
      return "memory pool";
  }
  return "unknown path";
}

std::int64_t monotonicNanoseconds() {
  timespec now = {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

void expectNotFailed(const Message& message) {
  if (message.type == kFailed)
    throw IpcError(std::string(message.payload.begin(), message.payload.end()));
}

void expectMessage(const Message& message, MessageType expected) {
  expectNotFailed(message);
  if (message.type != expected || !message.payload.empty()) {
    throw IpcError("expected message " + std::to_string(expected) + " without payload, got " +
                   std::to_string(message.type) + " with " +
                   std::to_string(message.payload.size()) + " bytes");
  }
}

}  // namespace memsamples::ipc
