// A scratch project for the lesson-shape tests: <tmp>/samples/02_demo (the sample folder, whose
// lesson file is demo.cpp) and <tmp>/Common.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/temp_dir.hpp"

namespace memsamples::lesson_shape::test {

class SampleFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(folder_);
    std::filesystem::create_directories(common_);
  }
  /// Writes @p text to @p name in the sample folder.
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(std::filesystem::path(folder_) / name) << text;
  }
  /// Writes @p text to @p name in the Common folder.
  void writeCommon(const std::string& name, const std::string& text) const {
    const std::filesystem::path path = std::filesystem::path(common_) / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  memsamples::test::TempDir dir_;
  std::string folder_ = dir_.path() + "/samples/02_demo";
  std::string common_ = dir_.path() + "/Common";
};

/// The problems of a report, one a line, for a failure message.
inline std::string joined(const std::vector<std::string>& problems) {
  std::string text;
  for (const std::string& problem : problems)
    text += problem + "\n";
  return text;
}

/// How many of @p problems contain @p text.
inline std::size_t countContaining(const std::vector<std::string>& problems,
                                   const std::string& text) {
  std::size_t count = 0;
  for (const std::string& problem : problems)
    count += problem.find(text) != std::string::npos ? 1 : 0;
  return count;
}

/// @p text with its first @p from replaced by @p to (a test failure when there is none).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

/// @p count lines "x;\n", each of @p width characters (width >= 2).
inline std::string codeLines(std::size_t count, std::size_t width = 2) {
  std::string text;
  for (std::size_t k = 0; k < count; ++k)
    text += std::string(width - 1, 'x') + ";\n";
  return text;
}

}  // namespace memsamples::lesson_shape::test
