// Fatbin lookup: the search order, the install layout, symlinks, and the message on a miss.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "support/fatbin.hpp"
#include "temp_dir.hpp"

namespace ms = memsamples;
using memsamples::test::TempDir;

TEST(Fatbin, CandidatesInOrderAndNeverTheCurrentDirectory) {
  const auto candidates = ms::fatbinCandidates("k.fatbin", "/opt/ms/bin/sample", "/override");
  ASSERT_EQ(candidates.size(), 3u);
  EXPECT_EQ(candidates[0], "/override/k.fatbin");
  EXPECT_EQ(candidates[1], "/opt/ms/bin/k.fatbin");
  EXPECT_EQ(candidates[2], "/opt/ms/bin/../share/cuda-memory-samples/k.fatbin");
  for (const auto& candidate : ms::fatbinCandidates("k.fatbin", "/opt/ms/bin/sample", "")) {
    EXPECT_EQ(candidate.front(), '/') << candidate;
  }
  EXPECT_EQ(ms::fatbinCandidates("k.fatbin", "/opt/ms/bin/sample", "").size(), 2u);
}

TEST(Fatbin, FoundNextToTheExecutable) {
  TempDir dir;
  dir.touch("bin/k.fatbin");
  dir.touch("share/cuda-memory-samples/k.fatbin");
  EXPECT_EQ(ms::findFatbin("k.fatbin", dir.path() + "/bin/sample", ""),
            dir.path() + "/bin/k.fatbin");
}

TEST(Fatbin, FoundInTheInstallLayout) {
  TempDir dir;
  dir.touch("share/cuda-memory-samples/k.fatbin");
  dir.touch("bin/.keep");
  EXPECT_EQ(ms::findFatbin("k.fatbin", dir.path() + "/bin/sample", ""),
            dir.path() + "/bin/../share/cuda-memory-samples/k.fatbin");
}

TEST(Fatbin, OverrideWins) {
  TempDir dir;
  dir.touch("bin/k.fatbin");
  dir.touch("elsewhere/k.fatbin");
  EXPECT_EQ(ms::findFatbin("k.fatbin", dir.path() + "/bin/sample", dir.path() + "/elsewhere"),
            dir.path() + "/elsewhere/k.fatbin");
}

TEST(Fatbin, FolderWithTheRightNameIsNotAFile) {
  TempDir dir;
  dir.touch("bin/k.fatbin/inside");
  EXPECT_THROW(ms::findFatbin("k.fatbin", dir.path() + "/bin/sample", ""), std::runtime_error);
}

TEST(Fatbin, MissNamesEveryPathTried) {
  TempDir dir;
  try {
    ms::findFatbin("k.fatbin", dir.path() + "/bin/sample", "/nowhere");
    FAIL();
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    for (const auto& candidate :
         ms::fatbinCandidates("k.fatbin", dir.path() + "/bin/sample", "/nowhere")) {
      EXPECT_NE(message.find(candidate), std::string::npos) << message;
    }
    EXPECT_NE(message.find(ms::kFatbinDirVariable), std::string::npos);
  }
}

TEST(Fatbin, CurrentDirectoryIsIgnored) {
  TempDir dir;
  dir.touch("k.fatbin");
  char previous[4096];
  ASSERT_NE(getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(chdir(dir.path().c_str()), 0);
  EXPECT_THROW(ms::findFatbin("k.fatbin", "/nonexistent/bin/sample", ""), std::runtime_error);
  ASSERT_EQ(chdir(previous), 0);
}

TEST(ReadBinaryFile, ReturnsEveryByteIncludingZeros) {
  TempDir dir;
  const std::string path = dir.path() + "/k.fatbin";
  const std::string content("\x7f" "ELF\0\0\x01", 7);
  std::ofstream(path, std::ios::binary) << content;
  const std::vector<char> bytes = ms::readBinaryFile(path);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), content);
}

TEST(ReadBinaryFile, AMissingOrEmptyFileIsAnErrorNamingThePath) {
  TempDir dir;
  try {
    ms::readBinaryFile(dir.path() + "/missing.fatbin");
    FAIL() << "no error for a missing file";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("cannot open " + dir.path() + "/missing.fatbin"),
              std::string::npos)
        << error.what();
  }
  std::ofstream(dir.path() + "/empty.fatbin").flush();
  try {
    ms::readBinaryFile(dir.path() + "/empty.fatbin");
    FAIL() << "no error for an empty file";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("empty.fatbin is empty"), std::string::npos)
        << error.what();
  }
}
