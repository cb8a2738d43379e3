/**
 * @file fatbin.hpp
 * @brief The search behind memsamples::locateFatbin(): where a sample looks for its kernels, as
 *        functions of plain paths so that unit tests can check every case without a GPU.
 *
 * A fatbin is looked for in an explicit folder first, then next to the executable, then in the
 * install layout, and never relative to the current directory: a sample behaves the same
 * wherever it is started from. Nothing here touches the CUDA driver.
 */
#pragma once

#include <string>
#include <vector>

namespace memsamples {

/// The environment variable that names a folder to search for fatbins first.
inline constexpr const char* kFatbinDirVariable = "CUDA_MEMORY_SAMPLES_FATBIN_DIR";

/**
 * The places a fatbin is looked for, in order:
 * 1. @p overrideDir, when not empty (the explicit choice wins over anything found implicitly);
 * 2. the executable's own folder (the build tree, and installs that keep both in one folder);
 * 3. the install layout: `<exe folder>/../share/cuda-memory-samples/` (with the default
 *    CMAKE_INSTALL_BINDIR and MEMSAMPLES_FATBIN_INSTALL_DIR; the relative path is fixed at
 *    configure time).
 * @param fileName the fatbin's file name, e.g. "vectorAdd_kernel.fatbin".
 * @param exePath the resolved executable path (symlinks followed).
 * @param overrideDir a folder to search first, or empty.
 * @return the candidate paths, whether they exist or not. Throws nothing but std::bad_alloc.
 */
std::vector<std::string> fatbinCandidates(const std::string& fileName, const std::string& exePath,
                                          const std::string& overrideDir);

/// The first of fatbinCandidates() that is a regular file.
/// @throws std::runtime_error listing every path tried and naming kFatbinDirVariable when none is.
std::string findFatbin(const std::string& fileName, const std::string& exePath,
                       const std::string& overrideDir);

/// The running executable's path with symlinks resolved, read from /proc/self/exe.
/// @throws std::runtime_error when /proc/self/exe cannot be read.
std::string executablePath();

}  // namespace memsamples
