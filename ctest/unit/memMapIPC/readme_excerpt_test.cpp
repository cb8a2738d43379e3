// The README of 07_memMapIPC shows the SCM_RIGHTS lines of ipc_channel.cpp (the `// [scm-rights]`
// region) under a line `<!-- excerpt: ipc_channel.cpp scm-rights -->`: this test keeps that copy
// identical to the source, as lessonShape.core does for the cores.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> linesOf(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file) << "cannot read " << path;
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);)
    lines.push_back(line);
  return lines;
}

/// The lines between the two lines that are exactly @p marker (trimmed), or none.
std::vector<std::string> region(const std::vector<std::string>& lines, const std::string& marker) {
  std::vector<std::size_t> at;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const std::size_t first = lines[k].find_first_not_of(' ');
    if (first != std::string::npos && lines[k].substr(first) == marker)
      at.push_back(k);
  }
  if (at.size() != 2)
    return {};
  return {lines.begin() + static_cast<std::ptrdiff_t>(at[0] + 1),
          lines.begin() + static_cast<std::ptrdiff_t>(at[1])};
}

/// The fenced code block right after the line @p marker, or none.
std::vector<std::string> blockAfter(const std::vector<std::string>& lines,
                                    const std::string& marker) {
  for (std::size_t k = 0; k + 1 < lines.size(); ++k) {
    if (lines[k] != marker || lines[k + 1].rfind("```", 0) != 0)
      continue;
    std::vector<std::string> block;
    for (std::size_t j = k + 2; j < lines.size() && lines[j] != "```"; ++j)
      block.push_back(lines[j]);
    return block;
  }
  return {};
}

TEST(ReadmeExcerpt, TheScmRightsLinesAreTheSourcesOwn) {
  const std::string folder = MEMMAPIPC_SOURCE_DIR;
  const std::vector<std::string> source = region(linesOf(folder + "/ipc_channel.cpp"),
                                                 "// [scm-rights]");
  const std::vector<std::string> copy = blockAfter(
      linesOf(folder + "/README.md"), "<!-- excerpt: ipc_channel.cpp scm-rights -->");
  ASSERT_FALSE(source.empty()) << "ipc_channel.cpp has no `// [scm-rights]` region";
  ASSERT_FALSE(copy.empty()) << "README.md shows no block after its excerpt line";
  EXPECT_EQ(copy, source) << "README.md's copy of the [scm-rights] lines differs from "
                             "ipc_channel.cpp: copy the region again";
}

}  // namespace
