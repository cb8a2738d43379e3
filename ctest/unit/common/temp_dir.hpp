// A scratch folder for tests that need real files (fatbin lookup, fake sysfs trees).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace memsamples::test {

// A scratch folder removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/memsamples_test_XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr)
      throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  void touch(const std::string& relative) const {
    const std::filesystem::path file = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << "fatbin";
  }

 private:
  std::string path_;
};

}  // namespace memsamples::test
