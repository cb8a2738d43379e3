// Unit tests of the `core` check: marker lines and regions, the teardown table, the README's
// copies of the regions, and the whole check on a scratch sample folder, passing and failing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lesson_shape.hpp"
#include "lesson_shape_fixture.hpp"

namespace ls = memsamples::lesson_shape;
using Lines = std::vector<std::string>;
using memsamples::lesson_shape::test::codeLines;
using memsamples::lesson_shape::test::countContaining;
using memsamples::lesson_shape::test::joined;
using memsamples::lesson_shape::test::replaced;
using memsamples::lesson_shape::test::SampleFolder;

// ------------------------------------------------------------------ marker lines and regions

TEST(CoreRegions, OneRegionBetweenTwoMarkerLines) {
  const ls::CoreScan scan = ls::scanCoreRegions(
      {{"demo.cpp", "int main() {\n  //! [core]\n  a();\n\n  b();\n  //! [core]  \n}\n"}});
  EXPECT_TRUE(scan.problems.empty()) << joined(scan.problems);
  ASSERT_EQ(scan.regions.size(), 1u);
  EXPECT_EQ(scan.regions[0].tag, "core");
  EXPECT_EQ(scan.regions[0].file, "demo.cpp");
  EXPECT_EQ(scan.regions[0].openLine, 2u);
  EXPECT_EQ(scan.regions[0].closeLine, 6u);
  EXPECT_EQ(scan.regions[0].lines, (Lines{"  a();", "", "  b();"}));
}

TEST(CoreRegions, ASecondSideMayLiveInAnotherFile) {
  const ls::CoreScan scan =
      ls::scanCoreRegions({{"demo.cpp", "//! [core]\na();\n//! [core]\n"},
                           {"demo_peer.cpp", "\t//! [core-b]\r\nb();\r\n\t//! [core-b]\r\n"}});
  EXPECT_TRUE(scan.problems.empty()) << joined(scan.problems);
  ASSERT_EQ(scan.regions.size(), 2u);
  EXPECT_EQ(scan.regions[1].tag, "core-b");
  EXPECT_EQ(scan.regions[1].file, "demo_peer.cpp");
  EXPECT_EQ(scan.regions[1].lines, (Lines{"b();"}));
}

TEST(CoreRegions, NoRegionFails) {
  for (const std::string& text :
       {std::string("a();\n"), std::string("// [core]\na();\n// [core]\n"),
        std::string("//! [core] the calls\na();\n//! [core]x\n"),
        std::string("//! [core-b]\na();\n//! [core-b]\n")}) {
    const ls::CoreScan scan = ls::scanCoreRegions({{"demo.cpp", text}});
    EXPECT_EQ(countContaining(scan.problems, "has a `//! [core]` region"), 1u)
        << text << joined(scan.problems);
  }
}

TEST(CoreRegions, AMissingEndMarkerFails) {
  const ls::CoreScan scan = ls::scanCoreRegions({{"demo.cpp", "x;\n//! [core]\na();\n"}});
  EXPECT_TRUE(scan.regions.empty());
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0],
            "demo.cpp line 2: the `//! [core]` region is not closed (a second `//! [core]` line "
            "ends it)");
}

TEST(CoreRegions, ASplitOrRepeatedRegionFails) {
  ls::CoreScan scan = ls::scanCoreRegions(
      {{"demo.cpp", "//! [core]\na();\n//! [core]\n//! [core]\nb();\n//! [core]\n"}});
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0],
            "demo.cpp has 4 `//! [core]` lines (line 1, 3, 4, 6); a core is one contiguous "
            "region between two of them");
  scan = ls::scanCoreRegions({{"a.cpp", "//! [core]\na();\n"}, {"b.hpp", "b();\n//! [core]\n"}});
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_NE(scan.problems[0].find("in more than one file: a.cpp (line 1), b.hpp (line 2)"),
            std::string::npos)
      << scan.problems[0];
}

TEST(CoreRegions, ALongCoreIsNoProblem) {
  // The line cap is retired: a core holds the technique's whole sequence, however long.
  const ls::CoreScan scan =
      ls::scanCoreRegions({{"demo.cpp", "//! [core]\n" + codeLines(300) + "//! [core]\n"}});
  EXPECT_TRUE(scan.problems.empty()) << joined(scan.problems);
  ASSERT_EQ(scan.regions.size(), 1u);
  EXPECT_EQ(scan.regions[0].lines.size(), 300u);
}

TEST(CoreRegions, AStrayMentionOfTheTagFails) {
  const ls::CoreScan scan = ls::scanCoreRegions(
      {{"demo.cpp", "// the [core] below\n//! [core]\na(); // [core-b] too\n//! [core]\n"},
       {"other.cpp", "// a file without markers may say [core]\n"}});
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0].rfind("demo.cpp line 1, 3: mentions `[core]`", 0), 0u)
      << scan.problems[0];
}

TEST(CoreRegions, OverlappingRegionsFail) {
  const ls::CoreScan scan = ls::scanCoreRegions(
      {{"demo.cpp", "//! [core]\na();\n//! [core-b]\nb();\n//! [core]\nc();\n//! [core-b]\n"}});
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0],
            "demo.cpp: the `//! [core]` (lines 1-5) and `//! [core-b]` (lines 3-7) regions "
            "overlap");
}

// ------------------------------------------------------------------ teardown

TEST(Teardown, EveryCreatingCallOfTheBriefHasItsRelease) {
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"cuCtxCreate", "cuCtxDestroy"},
      {"cuModuleLoadData", "cuModuleUnload"},
      {"cuMemAlloc", "cuMemFree"},
      {"cuMemAllocManaged", "cuMemFree"},
      {"cuMemHostAlloc", "cuMemFreeHost"},
      {"cuMemHostRegister", "cuMemHostUnregister"},
      {"cuStreamCreate", "cuStreamDestroy"},
      {"cuEventCreate", "cuEventDestroy"},
      {"cuMemAddressReserve", "cuMemAddressFree"},
      {"cuMemCreate", "cuMemRelease"},
      {"cuMemMap", "cuMemUnmap"},
      {"mmap", "munmap"},
      {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease"},
      {"cuCtxEnablePeerAccess", "cuCtxDisablePeerAccess"},
      {"cuMemPoolCreate", "cuMemPoolDestroy"},
      {"cuMemAllocAsync", "cuMemFreeAsync"},
      {"cuMemAllocFromPoolAsync", "cuMemFreeAsync"}};
  ASSERT_EQ(ls::teardownTable().size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(ls::teardownTable()[k].create, expected[k].first);
    EXPECT_EQ(ls::teardownTable()[k].release, expected[k].second);
    // Each row on its own: created and released passes, created only fails.
    const std::string create = expected[k].first + "(x);\n";
    EXPECT_TRUE(ls::missingReleases(create + expected[k].second + "(x);\n").empty());
    const std::vector<ls::CreateRelease> missing = ls::missingReleases(create);
    ASSERT_FALSE(missing.empty()) << create;
    EXPECT_EQ(missing.back().release, expected[k].second);
  }
}

TEST(Teardown, OnlyCallsCount) {
  EXPECT_TRUE(ls::missingReleases("").empty());
  // cuMemAllocManaged is not cuMemAlloc, and one cuMemFree serves both.
  const std::vector<ls::CreateRelease> managed = ls::missingReleases("cuMemAllocManaged(&p);");
  ASSERT_EQ(managed.size(), 1u);
  EXPECT_STREQ(managed[0].create, "cuMemAllocManaged");
  EXPECT_TRUE(ls::missingReleases("cuMemAlloc(&a); cuMemAllocManaged(&b); cuMemFree(a.release());")
                  .empty());
  // A release named in a comment or a string is not written as a call.
  const std::string code = ls::stripCommentsAndStrings(
      "check(cuMemAlloc(a.out(), n), \"cuMemAlloc\");\n// cuMemFree(a) later\n"
      "log(\"cuMemFree(\");\n");
  ASSERT_EQ(ls::missingReleases(code).size(), 1u);
  // mmap and munmap are system calls, written with or without ::.
  EXPECT_TRUE(ls::missingReleases("p = ::mmap(0, n); ::munmap(p, n);").empty());
  EXPECT_EQ(ls::missingReleases("p = mmap(0, n);").size(), 1u);
}

// ------------------------------------------------------------------ README copies

TEST(CoreCopies, ACopyIsTheFencedBlockAfterTheLine) {
  const ls::CoreCopies found = ls::parseCoreCopies(
      "# 02_demo — x\n\n## The core\nThe calls:\n<!-- core: demo.cpp -->\n```cpp\n  a();\n\n"
      "```\n<!-- core-b: peer/b.cpp -->  \n```\nb();\n```\n## Run it\n");
  EXPECT_TRUE(found.problems.empty()) << joined(found.problems);
  ASSERT_EQ(found.copies.size(), 2u);
  EXPECT_EQ(found.copies[0].tag, "core");
  EXPECT_EQ(found.copies[0].file, "demo.cpp");
  EXPECT_EQ(found.copies[0].markerLine, 5u);
  EXPECT_TRUE(found.copies[0].inCoreSection);
  EXPECT_EQ(found.copies[0].lines, (Lines{"  a();", ""}));
  EXPECT_EQ(found.copies[1].tag, "core-b");
  EXPECT_EQ(found.copies[1].file, "peer/b.cpp");
  EXPECT_EQ(found.copies[1].lines, (Lines{"b();"}));
}

TEST(CoreCopies, MalformedLinesFail) {
  for (const char* line :
       {"<!--core: demo.cpp -->", "<!-- core:demo.cpp -->", "<!-- core: demo.cpp-->",
        "<!-- core demo.cpp -->", "<!-- core: -->", "<!-- core: a b.cpp -->",
        "  <!-- core: demo.cpp -->", "<!-- core-c: demo.cpp -->"}) {
    const ls::CoreCopies found = ls::parseCoreCopies(std::string(line) + "\n```\na();\n```\n");
    EXPECT_TRUE(found.copies.empty()) << line;
    ASSERT_EQ(found.problems.size(), 1u) << line;
    EXPECT_NE(found.problems[0].find("is not a core line"), std::string::npos) << line;
  }
  // Other HTML comments are none of the checker's business.
  EXPECT_TRUE(ls::parseCoreCopies("<!-- corrected -->\n<!-- score -->\n").problems.empty());
}

TEST(CoreCopies, NoBlockDirectlyAfterOrAnUnclosedBlockFails) {
  ls::CoreCopies found = ls::parseCoreCopies("<!-- core: demo.cpp -->\n\n```cpp\na();\n```\n");
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_NE(found.problems[0].find("must be followed directly by a fenced code block"),
            std::string::npos);
  found = ls::parseCoreCopies("<!-- core: demo.cpp -->\n```cpp\na();\n");
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_EQ(found.problems[0],
            "README.md line 2: the code block after `<!-- core: demo.cpp -->` is never closed");
  // A core line inside another code block is no copy, but the docs build would replace it.
  found = ls::parseCoreCopies("```\n<!-- core: demo.cpp -->\n```\n");
  EXPECT_TRUE(found.copies.empty());
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_NE(found.problems[0].find("line 2: `<!-- core: demo.cpp -->` stands inside a code block"),
            std::string::npos);
}

TEST(CoreCopies, ACopyOutsideTheCoreSectionIsMarked) {
  const ls::CoreCopies found = ls::parseCoreCopies(
      "## The core\n```\n## not a heading\n```\n## Details\n<!-- core: demo.cpp -->\n```\n```\n");
  ASSERT_EQ(found.copies.size(), 1u);
  EXPECT_FALSE(found.copies[0].inCoreSection);
  EXPECT_TRUE(found.copies[0].lines.empty());
}

TEST(CoreCopies, CompareNamesTheFirstDifferingLine) {
  ls::CoreRegion region;
  region.tag = "core";
  region.file = "demo.cpp";
  region.openLine = 10;
  region.closeLine = 14;
  region.lines = {"  a();", "", "  b();"};
  ls::CoreCopy copy;
  copy.markerLine = 5;  // so the copy's lines are README lines 7, 8, 9
  copy.lines = region.lines;
  EXPECT_EQ(ls::compareCoreCopy(region, copy), "");

  copy.lines = {"  a();", "", "  b(); "};
  EXPECT_EQ(ls::compareCoreCopy(region, copy),
            "README.md line 9 differs from demo.cpp line 13: the README has `  b(); `, the "
            "source `  b();`");
  copy.lines = {"  a();", ""};
  EXPECT_EQ(ls::compareCoreCopy(region, copy),
            "the README copy of the core region ends at README.md line 9, but demo.cpp line 13 "
            "goes on: `  b();`");
  copy.lines = {"  a();", "", "  b();", "  c();"};
  EXPECT_EQ(ls::compareCoreCopy(region, copy),
            "README.md line 10 is past the end of the core region (its closing marker is "
            "demo.cpp line 14): `  c();`");
}

// ------------------------------------------------------------------ the check on a folder

namespace {

const char* const kLesson =
    "// demo\n"
    "void run() {\n"
    "  //! [core]\n"
    "  ms::OwnedDeviceMemory a;\n"
    "  ms::check(cuMemAlloc(a.out(), n), \"cuMemAlloc\");  // 1. Allocate.\n"
    "\n"
    "  ms::check(cuMemFree(a.release()), \"cuMemFree\");\n"
    "  //! [core]\n"
    "}\n";

const char* const kCopy =
    "<!-- core: demo.cpp -->\n"
    "```cpp\n"
    "  ms::OwnedDeviceMemory a;\n"
    "  ms::check(cuMemAlloc(a.out(), n), \"cuMemAlloc\");  // 1. Allocate.\n"
    "\n"
    "  ms::check(cuMemFree(a.release()), \"cuMemFree\");\n"
    "```\n";

std::string readme(const std::string& copy, const std::string& coreCalls) {
  return "# 02_demo — demo\n\n## The core\nThe calls in order:\n" + copy +
         "## Run it\n## Flow\n1. Allocate.\n## Details\n## Demonstrated API calls\n"
         "In the core: " +
         coreCalls + "\n\nVia Common: `cuInit`.\n";
}

}  // namespace

TEST_F(SampleFolder, CorePasses) {
  write("demo.cpp", kLesson);
  write("README.md", readme(kCopy, "`cuMemAlloc`, `cuMemFree`."));
  const ls::Report report = ls::checkCore(folder_);
  EXPECT_TRUE(report.problems.empty()) << joined(report.problems);
  EXPECT_EQ(report.summary, folder_ +
                                ": core demo.cpp lines 4-7 (4 lines); 2 calls listed "
                                "\"In the core:\"; 1 creating calls in the cores, 1 released "
                                "there; 1 README copies checked");
}

TEST_F(SampleFolder, CoreInAHelperFilePasses) {
  write("demo.cpp", "int main() { demo::run(); }\n");
  write("demo_core.cpp", kLesson);
  const std::string copy = replaced(kCopy, "demo.cpp", "demo_core.cpp");
  write("README.md", readme(copy, "`cuMemAlloc`, `cuMemFree`."));
  const ls::Report report = ls::checkCore(folder_);
  EXPECT_TRUE(report.problems.empty()) << joined(report.problems);
}

TEST_F(SampleFolder, CoreFailsWithoutItsRelease) {
  const std::string lesson = replaced(
      kLesson, "  ms::check(cuMemFree(a.release()), \"cuMemFree\");", "  // freed by the owner");
  write("demo.cpp", lesson + "void later() { cuMemFree(p); }\n");  // outside the core
  write("README.md", readme(kCopy, "`cuMemAlloc`."));
  const ls::Report report = ls::checkCore(folder_);
  EXPECT_EQ(countContaining(report.problems,
                            ": a core calls `cuMemAlloc`, but no core calls "
                            "`cuMemFree`"),
            1u)
      << joined(report.problems);
}

TEST_F(SampleFolder, CoreFailsWhenACoreCallIsElsewhere) {
  write("demo.cpp", std::string(kLesson) + "void later() { cuMemGetInfo(&f, &t); }\n");
  write("README.md", readme(kCopy, "`cuMemAlloc`, `cuMemGetInfo`, `cuMemFree`."));
  const ls::Report report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_EQ(report.problems[0], folder_ +
                                    "/README.md: `cuMemGetInfo` is listed \"In the core:\", but "
                                    "no core region calls it (outside comments and strings)");
}

TEST_F(SampleFolder, CoreFailsWithoutTheInTheCoreParagraph) {
  write("demo.cpp", kLesson);
  write("README.md", "## The core\n" + std::string(kCopy) +
                         "## Demonstrated API calls\n`cuMemAlloc`, `cuMemFree`.\n");
  const ls::Report report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("no paragraph starting with \"In the core:\""),
            std::string::npos);
}

TEST_F(SampleFolder, CoreFailsWhenTheReadmeCopyDiffers) {
  write("demo.cpp", kLesson);
  const std::string copy = replaced(kCopy, "// 1. Allocate.", "// 1. Allocate!");
  write("README.md", readme(copy, "`cuMemAlloc`, `cuMemFree`."));
  const ls::Report report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_EQ(report.problems[0],
            folder_ +
                "/README.md line 8 differs from demo.cpp line 5: the README has `  "
                "ms::check(cuMemAlloc(a.out(), n), \"cuMemAlloc\");  // 1. Allocate!`, the source "
                "`  ms::check(cuMemAlloc(a.out(), n), \"cuMemAlloc\");  // 1. Allocate.`");
}

TEST_F(SampleFolder, CoreFailsWithoutACopyOrWithTheWrongOne) {
  write("demo.cpp", kLesson);
  write("README.md", readme("", "`cuMemAlloc`, `cuMemFree`."));
  ls::Report report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_EQ(report.problems[0], folder_ +
                                    "/README.md: has no line `<!-- core: demo.cpp -->` followed "
                                    "by a code block copying the region (demo.cpp lines 4-7)");

  write("README.md",
        readme(replaced(kCopy, "demo.cpp", "other.cpp"), "`cuMemAlloc`, `cuMemFree`."));
  report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("names other.cpp, but the core region is in demo.cpp"),
            std::string::npos);

  write("README.md", readme(std::string(kCopy) + replaced(kCopy, "core:", "core-b:"),
                            "`cuMemAlloc`, `cuMemFree`."));
  report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("copies a core-b region, but the folder has none"),
            std::string::npos);

  write("README.md", readme(std::string(kCopy) + kCopy, "`cuMemAlloc`, `cuMemFree`."));
  report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("has 2 copies of the core region"), std::string::npos);
}

TEST_F(SampleFolder, CoreFailsWhenTheCopyIsNotInTheCoreSection) {
  write("demo.cpp", kLesson);
  write("README.md", "# 02_demo — demo\n## The core\n## Run it\n" + std::string(kCopy) +
                         "## Demonstrated API calls\nIn the core: `cuMemAlloc`, `cuMemFree`.\n");
  const ls::Report report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_EQ(report.problems[0], folder_ +
                                    "/README.md line 4: the copy of the core region stands "
                                    "outside the \"## The core\" section");
}

TEST_F(SampleFolder, CoreFailsWithoutARegionOrWithAnOpenOne) {
  write("demo.cpp", "void run() { ms::check(cuMemAlloc(a.out(), n), \"x\"); }\n");
  write("README.md", readme("", "`cuMemAlloc`."));
  ls::Report report = ls::checkCore(folder_);
  EXPECT_EQ(countContaining(report.problems, folder_ + ": no .cpp or .hpp file of the folder"), 1u)
      << joined(report.problems);
  EXPECT_EQ(countContaining(report.problems, "no core region calls it"), 1u);
  EXPECT_EQ(report.summary.rfind(folder_ + ": no core region;", 0), 0u) << report.summary;

  write("demo.cpp", std::string(kLesson).substr(0, std::string(kLesson).rfind("  //! [core]")));
  report = ls::checkCore(folder_);
  EXPECT_EQ(countContaining(report.problems, folder_ + "/demo.cpp line 3: the `//! [core]` "
                                                       "region is not closed"),
            1u)
      << joined(report.problems);
}

TEST_F(SampleFolder, CoreWithoutReadme) {
  write("demo.cpp", kLesson);
  const ls::Report report = ls::checkCore(folder_);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].find("README.md: cannot be read"), std::string::npos);
}
