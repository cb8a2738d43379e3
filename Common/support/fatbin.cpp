// Finding and reading a fatbin: the search of support/fatbin.hpp, and locateFatbin() and
// readBinaryFile() of memsamples.hpp. CUDA-free, unit tested in ctest/unit/common/fatbin_test.cpp
// and, installed and symlinked, by the fatbinLookup.* tests.
#include "support/fatbin.hpp"

#include <unistd.h>

#include <sys/stat.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "memsamples.hpp"

namespace memsamples {
namespace {

bool isRegularFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string parentFolder(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

}  // namespace

std::vector<std::string> fatbinCandidates(const std::string& fileName, const std::string& exePath,
                                          const std::string& overrideDir) {
  std::vector<std::string> candidates;
  if (!overrideDir.empty())
    candidates.push_back(overrideDir + "/" + fileName);
  const std::string exeDir = parentFolder(exePath);
  candidates.push_back(exeDir + "/" + fileName);
  candidates.push_back(exeDir + "/" MEMSAMPLES_FATBIN_FROM_BINDIR "/" + fileName);
  return candidates;
}

std::string findFatbin(const std::string& fileName, const std::string& exePath,
                       const std::string& overrideDir) {
  const std::vector<std::string> candidates = fatbinCandidates(fileName, exePath, overrideDir);
  for (const std::string& candidate : candidates) {
    if (isRegularFile(candidate))
      return candidate;
  }
  std::string message = "cannot find " + fileName + "; tried:";
  for (const std::string& candidate : candidates)
    message += "\n  " + candidate;
  message += "\n(set " + std::string(kFatbinDirVariable) + " to the folder that holds it)";
  throw std::runtime_error(message);
}

std::string executablePath() {
  std::string path(4096, '\0');
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size());
  if (length <= 0 || static_cast<std::size_t>(length) >= path.size()) {
    throw std::runtime_error("cannot resolve /proc/self/exe to find this program's folder");
  }
  path.resize(static_cast<std::size_t>(length));
  return path;
}

std::vector<char> readBinaryFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad())
    throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  if (bytes.empty())
    throw std::runtime_error(path + " is empty");
  return bytes;
}

std::string locateFatbin(const std::string& fileName) {
  const char* overrideDir = std::getenv(kFatbinDirVariable);
  return findFatbin(fileName, executablePath(), overrideDir ? overrideDir : "");
}

}  // namespace memsamples
