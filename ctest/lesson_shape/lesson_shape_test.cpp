// Unit tests of the lesson-shape checker: README call lists, comment and string stripping, call
// matching, the `calls` check on a scratch sample folder, and what every check does with a missing
// or empty folder.
#include "lesson_shape.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lesson_shape_fixture.hpp"

namespace ls = memsamples::lesson_shape;
using Calls = std::vector<std::string>;
using memsamples::lesson_shape::test::SampleFolder;

// ------------------------------------------------------------------ README "Demonstrated API
// calls"

TEST(ApiSection, CallsBeforeViaAreTheFolderCalls) {
  const ls::ApiSection section = ls::parseApiSection(
      "# 01_x\n\n## Application flow\n1. `cuNotListed` here\n\n"
      "## Demonstrated API calls\n"
      "`cuMemCreate`, `cuMemMap` (twice: `cuMemMap`),\n`cuMemSetAccess`.\n"
      "Via Common: `cuInit`, `cuCtxCreate`.\n"
      "Via 02_vectorAddMMAP: `cuMemRelease`.\n\n## Build\n`cuAfterTheSection`\n");
  EXPECT_TRUE(section.found);
  EXPECT_TRUE(section.hasViaCommon);
  EXPECT_EQ(section.folderCalls, (Calls{"cuMemCreate", "cuMemMap", "cuMemSetAccess"}));
}

TEST(ApiSection, OnlyBacktickedNamesStartingWithCuCount) {
  const ls::ApiSection section = ls::parseApiSection(
      "## Demonstrated API calls\n"
      "cuPlainWord, `cuMemAdvise` (`_v2`), `CU_MEM_ACCESS_FLAGS_PROT_READWRITE`, `mbind`,\n"
      "`cuMemCreate(CU_MEM_LOCATION_TYPE_HOST_NUMA)`, `cuda.h`, ``cuDouble``, `cu Spaced`,\n"
      "`cuLast` and an unclosed ` tick\nVia Common: `cuInit`\n");
  EXPECT_EQ(section.folderCalls, (Calls{"cuMemAdvise", "cuMemCreate", "cuDouble", "cuLast"}));
}

TEST(ApiSection, CodeSpanMayWrapALine) {
  const ls::ApiSection section = ls::parseApiSection(
      "## Demonstrated API calls\nsee `cuMemMap\n` and `cuMemUnmap`\n"
      "Via Common: -\n");
  EXPECT_EQ(section.folderCalls, (Calls{"cuMemMap", "cuMemUnmap"}));
}

TEST(ApiSection, AViaParagraphEndsAtABlankLine) {
  const ls::ApiSection section = ls::parseApiSection(
      "## Demonstrated API calls\n`cuA`\n\nVia Common: `cuB`,\n`cuC` (timing)\n\n"
      "`Helper` (a helper of the folder) calls `cuD`.\n");
  EXPECT_EQ(section.folderCalls, (std::vector<std::string>{"cuA", "cuD"}));
}

TEST(ApiSection, MissingSectionOrViaCommon) {
  EXPECT_FALSE(ls::parseApiSection("# x\n## Demonstrated API call\n`cuInit`\n").found);
  const ls::ApiSection noCommon =
      ls::parseApiSection("## Demonstrated API calls\n`cuInit`\nVia 02_vectorAddMMAP: `cuA`\n");
  EXPECT_TRUE(noCommon.found);
  EXPECT_FALSE(noCommon.hasViaCommon);
  EXPECT_EQ(noCommon.folderCalls, (Calls{"cuInit"}));
  // "Via Common:" is a line of its own, not words inside another line or another section.
  EXPECT_FALSE(ls::parseApiSection("## Demonstrated API calls\n`cuA`, and Via Common: `cuB`\n")
                   .hasViaCommon);
  EXPECT_FALSE(ls::parseApiSection("## Demonstrated API calls\n`cuA`\n## Next\nVia Common: `cuB`\n")
                   .hasViaCommon);
}

TEST(ApiSection, IndentedViaLineAndSubheadingsStayInside) {
  const ls::ApiSection section = ls::parseApiSection(
      "## Demonstrated API calls  \r\n### Driver\n`cuA`\n  Via Common: `cuB`\n`cuC`\n");
  EXPECT_TRUE(section.hasViaCommon);
  EXPECT_EQ(section.folderCalls, (Calls{"cuA"}));
}

TEST(ApiSection, FencedCodeIsSkipped) {
  const ls::ApiSection section = ls::parseApiSection(
      "## Demonstrated API calls\n```\n## not a heading `cuInFence`\nVia nothing\n```\n`cuA`\n"
      "Via Common: `cuB`\n");
  EXPECT_TRUE(section.hasViaCommon);
  EXPECT_EQ(section.folderCalls, (Calls{"cuA"}));
}

TEST(ApiSection, CoreAndElsewhereParagraphsAreFolderCalls) {
  const ls::ApiSection section = ls::parseApiSection(
      "## Demonstrated API calls\n"
      "In the core: `cuMemAlloc`, `cuMemcpyHtoD`,\n`cuMemFree`.\n\n"
      "Elsewhere in this folder: `cuMemGetInfo`.\n\n"
      "Via Common: `cuInit`, `cuDeviceGet`.\n\n"
      "Via 02_vectorAddMMAP: `cuMemMap`.\n");
  EXPECT_TRUE(section.hasCoreParagraph);
  EXPECT_TRUE(section.hasViaCommon);
  EXPECT_EQ(section.coreCalls, (Calls{"cuMemAlloc", "cuMemcpyHtoD", "cuMemFree"}));
  EXPECT_EQ(section.folderCalls,
            (Calls{"cuMemAlloc", "cuMemcpyHtoD", "cuMemFree", "cuMemGetInfo"}));
}

TEST(ApiSection, TheCoreParagraphEndsAtABlankLineOrAnotherParagraph) {
  const ls::ApiSection section = ls::parseApiSection(
      "## Demonstrated API calls\nIn the core: `cuA`\nElsewhere in this folder: `cuB`\n"
      "In the core: `cuC`\nVia Common: `cuD`\n\n`cuE`\n");
  EXPECT_EQ(section.coreCalls, (Calls{"cuA", "cuC"}));
  EXPECT_EQ(section.folderCalls, (Calls{"cuA", "cuB", "cuC", "cuE"}));
  // "In the core:" starts a line; inside a sentence it is plain text.
  EXPECT_FALSE(ls::parseApiSection("## Demonstrated API calls\nCalls In the core: `cuA`\n")
                   .hasCoreParagraph);
}

// ------------------------------------------------------------------ comments and strings

TEST(Strip, CommentsAndStringsBecomeSpacesLinesKept) {
  const std::string code =
      "a(); // cuA(\n"
      "b(); /* cuB(\n cuC( */ c();\n"
      "s = \"cuD( // not a comment\"; d();\n";
  const std::string stripped = ls::stripCommentsAndStrings(code);
  EXPECT_EQ(stripped.size(), code.size());
  const auto spaces = [](std::size_t n) { return std::string(n, ' '); };
  EXPECT_EQ(stripped, "a(); " + spaces(7) + "\n" +                  // "// cuA("
                          "b(); " + spaces(7) + "\n" + spaces(8) +  // "/* cuB(", " cuC( */"
                          " c();\n" +                               //
                          "s = " + spaces(23) + "; d();\n");        // the string literal
}

TEST(Strip, EscapesAndCharacterLiterals) {
  const std::string stripped =
      ls::stripCommentsAndStrings("x(\"say \\\"cuA(\\\" \\\\\"); q = '\"'; e = '\\''; cuB(1);\n");
  EXPECT_FALSE(ls::containsCall(stripped, "cuA"));
  EXPECT_TRUE(ls::containsCall(stripped, "cuB"));
  EXPECT_NE(stripped.find("x("), std::string::npos);
}

TEST(Strip, DigitSeparatorsAreNotCharacterLiterals) {
  const std::string stripped =
      ls::stripCommentsAndStrings("n = 1'000'000; cuA(n); c = u8'x'; m = 0x1'F; cuB(m);\n");
  EXPECT_TRUE(ls::containsCall(stripped, "cuA"));
  EXPECT_TRUE(ls::containsCall(stripped, "cuB"));
}

TEST(Strip, RawStrings) {
  const std::string stripped = ls::stripCommentsAndStrings(
      "a = R\"(cuA( \" */ )\"; cuB();\n"
      "b = R\"x(cuC( )\" still inside )x\"; cuD();\n"
      "c = u8R\"(cuE()\"; d = LR\"--(cuF()--\"; cuG();\n");
  for (const char* inside : {"cuA", "cuC", "cuE", "cuF"})
    EXPECT_FALSE(ls::containsCall(stripped, inside)) << inside;
  for (const char* outside : {"cuB", "cuD", "cuG"})
    EXPECT_TRUE(ls::containsCall(stripped, outside)) << outside;
}

TEST(Strip, QuotesAndSlashesInsideCommentsDoNotOpenAnything) {
  const std::string stripped = ls::stripCommentsAndStrings(
      "/* it's \" open */ cuA(); // don't \"\n cuB(); /* // */ cuC();\n");
  EXPECT_TRUE(ls::containsCall(stripped, "cuA"));
  EXPECT_TRUE(ls::containsCall(stripped, "cuB"));
  EXPECT_TRUE(ls::containsCall(stripped, "cuC"));
}

TEST(Strip, UnterminatedLiteralsAndComments) {
  EXPECT_EQ(ls::stripCommentsAndStrings("a = \"open\ncuA();"), "a =      \ncuA();");
  EXPECT_EQ(ls::stripCommentsAndStrings("cuA(); /* open\ncuB();"), "cuA();        \n      ");
  // A line comment continued by a trailing backslash goes on on the next line.
  EXPECT_FALSE(ls::containsCall(ls::stripCommentsAndStrings("// a \\\ncuA();\ncuB();"), "cuA"));
}

TEST(Text, SplitLines) {
  EXPECT_TRUE(ls::splitLines("").empty());
  EXPECT_EQ(ls::splitLines("a"), (Calls{"a"}));
  EXPECT_EQ(ls::splitLines("a\n"), (Calls{"a"}));
  EXPECT_EQ(ls::splitLines("a\r\n\nb \r\n"), (Calls{"a", "", "b "}));
  EXPECT_EQ(ls::splitLines("\n\n").size(), 2u);
}

// ------------------------------------------------------------------ call matching

TEST(ContainsCall, WholeNameFollowedByParenthesis) {
  EXPECT_TRUE(ls::containsCall("ms::check(cuMemAlloc(a.out(), n), \"cuMemAlloc\");", "cuMemAlloc"));
  EXPECT_TRUE(ls::containsCall("cuMemAlloc (a, n);", "cuMemAlloc"));
  EXPECT_TRUE(ls::containsCall("check(cuMemAlloc\n    (a, n));", "cuMemAlloc"));
  EXPECT_FALSE(ls::containsCall("cuMemAllocManaged(&p, n, 0);", "cuMemAlloc"));
  EXPECT_TRUE(ls::containsCall("cuMemAllocManaged(&p, n, 0);", "cuMemAllocManaged"));
  EXPECT_FALSE(ls::containsCall("mycuMemAlloc(&p, n);", "cuMemAlloc"));
  EXPECT_FALSE(ls::containsCall("auto f = &cuMemAlloc;", "cuMemAlloc"));
  EXPECT_FALSE(ls::containsCall("cuMemAlloc_v2(&p, n);", "cuMemAlloc"));
  EXPECT_FALSE(ls::containsCall("", "cuMemAlloc"));
  EXPECT_TRUE(ls::containsCall("cuMemAllocManaged(&p); cuMemAlloc(&q);", "cuMemAlloc"));
}

TEST(ContainsCall, MacrosAreCode) {
  EXPECT_TRUE(ls::containsCall("#define ALLOC(p, n) cuMemAlloc(p, n)\n", "cuMemAlloc"));
  EXPECT_TRUE(ls::containsCall("CHECK(cuMemAlloc(&p, n));", "cuMemAlloc"));
  const std::string stripped = ls::stripCommentsAndStrings("#define NAME \"cuMemAlloc(\"\n");
  EXPECT_FALSE(ls::containsCall(stripped, "cuMemAlloc"));
}

TEST(DriverCalls, EveryDistinctCallSorted) {
  EXPECT_EQ(ls::driverCalls("cuMemMap(a); check(cuMemCreate (&h), x); cuMemMap(b);\n"
                            "DriverHandle<CUmodule, cuModuleUnload> m; ecuFake(); cu_lower();\n"
                            "CUresult r = cuInit\n(0); cuda(); cuX;"),
            (std::vector<std::string>{"cuInit", "cuMemCreate", "cuMemMap"}));
  EXPECT_TRUE(ls::driverCalls("").empty());
  EXPECT_TRUE(ls::driverCalls("cu").empty());
  EXPECT_TRUE(ls::driverCalls("cuA").empty());
}

// ------------------------------------------------------------------ names

TEST(Lesson, FileName) {
  EXPECT_EQ(ls::lessonFileName("01_vectorAddDrv"), "vectorAddDrv.cpp");
  EXPECT_EQ(ls::lessonFileName("02_vectorAddMMAP"), "vectorAddMMAP.cpp");
  EXPECT_EQ(ls::lessonFileName("123_x_y"), "x_y.cpp");
  EXPECT_EQ(ls::lessonFileName("plain"), "plain.cpp");
}

// ------------------------------------------------------------------ the checks on a folder

TEST_F(SampleFolder, CallsPassWhenEveryFolderCallIsCalled) {
  write("README.md",
        "## Demonstrated API calls\n`cuMemCreate`, `cuMemMap`.\n"
        "Via Common: `cuInit`.\n");
  write("demo.cpp", "void f() { check(cuMemCreate(&h, n, &p, 0), \"cuMemCreate\"); }\n");
  write("helper.hpp", "inline void g() { cuMemMap(b, n, 0, h, 0); }\n");
  const ls::Report report = ls::checkCalls(folder_);
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
  EXPECT_NE(report.summary.find("2 calls"), std::string::npos) << report.summary;
}

TEST_F(SampleFolder, CallsNamesReadmeCallAndFolder) {
  write("README.md", "## Demonstrated API calls\n`cuMemAlloc`, `cuMemMap`\n");
  write("demo.cpp",
        "// cuMemMap(\nvoid f() { cuMemAllocManaged(&p, n, 1); log(\"cuMemMap(\"); }\n");
  write("notes.txt", "cuMemMap(b);\n");  // not code
  const ls::Report report = ls::checkCalls(folder_);
  ASSERT_EQ(report.problems.size(), 4u) << report.summary;
  const std::string readme = folder_ + "/README.md";
  EXPECT_EQ(report.problems[0].rfind(readme + ": ", 0), 0u) << report.problems[0];
  EXPECT_NE(report.problems[0].find("no line starting with \"Via Common:\""), std::string::npos);
  EXPECT_EQ(report.problems[1],
            readme +
                ": `cuMemAlloc` is listed as a call of the folder, but no *.cpp, *.hpp or "
                "*.cu file in " +
                folder_ +
                " calls it outside comments and strings (write "
                "the call there, or list it on a \"Via ...\" line)");
  EXPECT_NE(report.problems[2].find("`cuMemMap`"), std::string::npos);
  EXPECT_EQ(report.problems[3], folder_ + " calls `cuMemAllocManaged`, but " + readme +
                                    " does not list it among the folder's calls (outside the "
                                    "\"Via ...\" paragraphs)");
}

TEST_F(SampleFolder, CallsFindKernelsInCuFiles) {
  write("README.md", "## Demonstrated API calls\n`cuKernelThing`\nVia Common: `cuInit`\n");
  write("k.cu", "__global__ void k() { cuKernelThing(); }\n");
  EXPECT_TRUE(ls::checkCalls(folder_).problems.empty());
}

TEST_F(SampleFolder, CallsWithoutSectionOrReadme) {
  ls::Report report = ls::checkCalls(folder_);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].find("README.md: cannot be read"), std::string::npos);
  write("README.md", "# demo\n## Application flow\n`cuInit`\n");
  report = ls::checkCalls(folder_);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0],
            folder_ + "/README.md: has no \"## Demonstrated API calls\" section");
}

TEST_F(SampleFolder, CallsFailWithNothingToCheck) {
  // A call list without a call of the folder, and a folder without code: nothing was checked.
  write("README.md", "## Demonstrated API calls\nVia Common: `cuInit`.\n");
  ls::Report report = ls::checkCalls(folder_);
  ASSERT_EQ(report.problems.size(), 2u);
  EXPECT_NE(report.problems[0].find("lists no call of the folder itself"), std::string::npos);
  EXPECT_EQ(report.problems[1], folder_ +
                                    ": holds no *.cpp, *.hpp or *.cu file: no code to check the "
                                    "call list against");
}

TEST(Checks, EveryCheckHasAName) {
  EXPECT_EQ(ls::checkNames(), (Calls{"calls", "core", "page", "steps"}));
  const ls::Report report = ls::runCheck("lenght", "samples/01_vectorAddDrv");
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0], "unknown check \"lenght\"");
}

TEST_F(SampleFolder, RunCheckRunsTheNamedCheck) {
  write("demo.cpp", "void run() {}\n");
  for (const std::string& check : ls::checkNames()) {
    const ls::Report direct = check == "calls"  ? ls::checkCalls(folder_)
                              : check == "core" ? ls::checkCore(folder_)
                              : check == "page" ? ls::checkPage(folder_)
                                                : ls::checkSteps(folder_);
    EXPECT_EQ(ls::runCheck(check, folder_).problems, direct.problems) << check;
    EXPECT_FALSE(direct.problems.empty()) << check;
  }
}

TEST_F(SampleFolder, EveryCheckFailsOnAMissingOrAnEmptyFolder) {
  for (const std::string& check : ls::checkNames()) {
    ls::Report report = ls::runCheck(check, folder_ + "/gone");
    ASSERT_EQ(report.problems.size(), 1u) << check;
    EXPECT_EQ(report.problems[0], folder_ +
                                      "/gone: not a folder (a sample folder samples/NN_name was "
                                      "expected): nothing to check");
    report = ls::runCheck(check, folder_ + "/");
    ASSERT_EQ(report.problems.size(), 1u) << check;
    EXPECT_EQ(report.problems[0], folder_ + ": an empty folder: nothing to check");
  }
}

TEST(Checks, TheGoodTestDataPassesEveryCheck) {
  const std::string demo = std::string(MEMSAMPLES_LESSON_SHAPE_TESTDATA) + "/samples/02_demo";
  for (const std::string& check : ls::checkNames()) {
    const ls::Report report = ls::runCheck(check, demo);
    EXPECT_TRUE(report.problems.empty()) << check << ": " << report.problems.front();
  }
}
