/**
 * @file memMapIPC_worker.hpp
 * @brief The worker role of the memMapIPC sample (memMapIPC_worker.cpp).
 */
#pragma once

#include <string>
#include <vector>

namespace memsamples::ipc {

/**
 * Runs a worker: `memMapIPC --worker <socket> <parent pid> <index> <device>` (the arguments after
 * `--worker`). It connects to the parent's socket, says Hello, and serves the parent's messages
 * until told to quit; errors are printed on stderr and sent to the parent as kFailed.
 * @return the process's exit code: 0 after kQuit, 1 after an error.
 */
int workerMain(const std::vector<std::string>& args);

}  // namespace memsamples::ipc
