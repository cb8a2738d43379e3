// Unit tests of the `breathe`, `helpers` and `folder` checks: line measures, declarations and
// the project calls a lesson makes, each check passing and failing on a scratch sample folder.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "lesson_shape.hpp"
#include "lesson_shape_fixture.hpp"

namespace ls = memsamples::lesson_shape;
using Names = std::set<std::string>;
using memsamples::lesson_shape::test::codeLines;
using memsamples::lesson_shape::test::countContaining;
using memsamples::lesson_shape::test::joined;
using memsamples::lesson_shape::test::replaced;
using memsamples::lesson_shape::test::SampleFolder;

namespace {

// The names projectCalls() counts, as the lesson writes them.
std::vector<std::string> written(const std::string& lesson, const ls::ProjectNames& names) {
  std::vector<std::string> calls;
  for (const ls::ProjectCall& call : ls::projectCalls(lesson, names))
    calls.push_back(call.written);
  return calls;
}

}  // namespace

// ------------------------------------------------------------------ breathe

TEST(Breathe, WidthCountsCharactersNotBytes) {
  EXPECT_EQ(ls::displayWidth(""), 0u);
  EXPECT_EQ(ls::displayWidth("abc"), 3u);
  EXPECT_EQ(ls::displayWidth("a — b × c"), 9u);  // the dash and the cross are 3 and 2 bytes
}

TEST(Breathe, LongBlankAndCodeLines) {
  const std::string code =
      "// only a comment\n"
      "\n"
      "   \t\n"
      "int a = 1;  // code and comment\n"
      "/* a block\n"
      "   comment */\n"
      "    \"a string line is code\"\n"
      "#include <x>\n" +
      std::string(89, 'x') + "\n" + std::string(90, 'y') + "\n" + "// " + std::string(97, 'z');
  const ls::Breath breath = ls::measureBreath(code);
  EXPECT_EQ(breath.lines, 11u);
  EXPECT_EQ(breath.longLines, 2u);  // 90 characters and the 100-character comment
  EXPECT_EQ(breath.blankLines, 2u);
  EXPECT_EQ(breath.codeLines, 5u);  // int, the string, #include, the two lines of x and y
}

TEST(Breathe, TheLimitsPassAtTheBoundAndFailPastIt) {
  // 100 lines: 5 long and 10 blank pass; 6 long or 9 blank fail.
  ls::Breath breath{100, 5, 10, 85};
  EXPECT_TRUE(ls::breathProblems("demo.cpp", breath).empty());
  breath.longLines = 6;
  std::vector<std::string> problems = ls::breathProblems("demo.cpp", breath);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "demo.cpp: 6 of 100 lines are 90 characters or longer (6.0 %), over 5 % (split long "
            "statements)");
  breath = {100, 5, 9, 85};
  problems = ls::breathProblems("demo.cpp", breath);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "demo.cpp: 9 of 100 lines are blank (9.0 %), under 10 % (a blank line between steps)");
  breath = {400, 0, 100, 250};
  EXPECT_TRUE(ls::breathProblems("demo.cpp", breath).empty());
  breath.codeLines = 251;
  problems = ls::breathProblems("demo.cpp", breath);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "demo.cpp: 251 code lines (neither blank nor only comment), over the limit of 250 "
            "(comments and blank lines are free)");
}

TEST_F(SampleFolder, BreathePassesWithCommentsFree) {
  // 250 code lines, 60 blank lines and any number of comment lines pass.
  std::string lesson;
  for (int k = 0; k < 60; ++k)
    lesson += "// Why the next lines are there, in a full sentence.\n\n";
  write("demo.cpp", lesson + codeLines(250));
  const ls::Report report = ls::checkBreathe(folder_);
  EXPECT_TRUE(report.problems.empty()) << joined(report.problems);
  EXPECT_EQ(report.summary, folder_ +
                                "/demo.cpp: 370 lines; 0 of 90+ characters (0.0 %, at most 5 %); "
                                "60 blank (16.2 %, at least 10 %); 250 code lines (at most 250)");
}

TEST_F(SampleFolder, BreatheFailsOnTheLessonAndOnTheFileOfTheCore) {
  write("demo.cpp", "\n" + codeLines(9));  // 10 % blank: passes
  write("demo_core.cpp", "//! [core]\n" + codeLines(10, 95) + "//! [core]\n");
  write("other.cpp", codeLines(300, 120));  // neither the lesson nor a core: not measured
  const ls::Report report = ls::checkBreathe(folder_);
  ASSERT_EQ(report.problems.size(), 2u) << joined(report.problems);
  EXPECT_EQ(report.problems[0].rfind(folder_ + "/demo_core.cpp: 10 of 12 lines are 90", 0), 0u)
      << report.problems[0];
  EXPECT_EQ(report.problems[1].rfind(folder_ + "/demo_core.cpp: 0 of 12 lines are blank", 0), 0u)
      << report.problems[1];
  EXPECT_NE(report.summary.find("/demo.cpp: 10 lines;"), std::string::npos) << report.summary;
  EXPECT_NE(report.summary.find("\n" + folder_ + "/demo_core.cpp: 12 lines;"), std::string::npos);
}

TEST_F(SampleFolder, BreatheFailsOnTooManyCodeLinesOrNoLesson) {
  EXPECT_EQ(ls::checkBreathe(folder_).problems.size(), 1u);  // no lesson file
  std::string lesson;
  for (int k = 0; k < 30; ++k)
    lesson += "\n";
  write("demo.cpp", lesson + codeLines(251));
  const ls::Report report = ls::checkBreathe(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("251 code lines"), std::string::npos);
}

// ------------------------------------------------------------------ declarations

TEST(Declarations, FunctionsAtNamespaceScope) {
  const Names names = ls::declaredFunctions(
      "#pragma once\n#define MACRO(x) hidden(x)\n"
      "namespace memsamples {\n"
      "std::string deviceName(CUdevice device);\n"
      "[[nodiscard]] int deviceOrdinal(CUdevice d) noexcept;\n"
      "template <typename T>\nT readValue(const char* p);\n"
      "std::vector<int> parseIdList(std::string_view list);\n"
      "inline double* raw(double* p) { return helperInBody(p); }\n"
      "const Thing& thing(\n    int a);\n"
      "CUresult cuMemWeakImport(int);\n"
      "void check(CUresult result, const char* call);\n"
      "inline constexpr int kSize = sizeOf(3);\n"
      "using Fn = void (*)(int);\n"
      "static_assert(sizeof(int) == 4);\n"
      "class Owner {\n public:\n  CUdeviceptr release() noexcept;\n};\n"
      "struct Plain { int member(int); };\n"
      "namespace detail {\nbool nested(int);\n}  // namespace detail\n"
      "}  // namespace memsamples\n"
      "extern \"C\" {\nlong mbind(void* p);\n}\n"
      "extern \"C\" int setMode(int);\n"
      "// void commented(int);\n");
  EXPECT_EQ(names, (Names{"check", "deviceName", "deviceOrdinal", "nested", "parseIdList", "raw",
                          "readValue", "thing"}));
}

TEST(Declarations, TheLessonsOwnFunctions) {
  EXPECT_EQ(ls::declaredFunctions("namespace {\nms::Verdict runDemo(const Options& o);\n"
                                  "void printRow(std::ostream& out) {\n  out << 1;\n}\n}\n"
                                  "int main(int argc, char** argv) { return run(argc); }\n"),
            (Names{"main", "printRow", "runDemo"}));
}

TEST(Declarations, Namespaces) {
  EXPECT_EQ(ls::declaredNamespaces("namespace memsamples::vmm {\n}\nnamespace {\n}\n"
                                   "namespace std { template <> struct hash<X>; }\n"
                                   "inline namespace v1 {}\nnamespace fs = std::filesystem;\n"
                                   "// namespace commented {\n"),
            (Names{"memsamples", "v1", "vmm"}));
}

// ------------------------------------------------------------------ project calls

TEST(ProjectCalls, QualifiedByAProjectNamespace) {
  const ls::ProjectNames names{{"vmm"}, {}};
  EXPECT_EQ(
      written("void f() {\n"
              "  const CUdevice d = ms::selectDevice(options.device);\n"
              "  memsamples::deviceName(d);\n"
              "  ms :: formatBytes (n);\n"
              "  vmm::mapStripedRange(r);\n"
              "  ms::selectDevice(other);\n"  // counted once
              "  auto x = ms::readValue<std::uint64_t>(p);\n"
              "  ms::detail::inner(1);\n"
              "  ms::Owned<int>::make(2);\n"
              "  return ms::runSample(argc, argv);\n"
              "}\n",
              names),
      (std::vector<std::string>{"ms::selectDevice", "memsamples::deviceName", "ms::formatBytes",
                                "vmm::mapStripedRange", "ms::readValue", "ms::detail::inner",
                                "ms::Owned<int>::make", "ms::runSample"}));
}

TEST(ProjectCalls, MembersOfTheFoldersOwnClassesCount) {
  // A run object's members are project functions as much as free ones: hiding twelve calls
  // behind `run.` must not pass the limit. An owner's get/out/release/reset do not count, nor
  // do members of types the folder does not declare.
  const ls::ProjectNames names{{}, {}, {"ManagedRun", "StripedRange", "Plan"}};
  EXPECT_EQ(written("void f() {\n"
                    "  ManagedRun run(report, options);\n"
                    "  const Plan& plan = makePlan();\n"
                    "  StripedRange range(layout);\n"
                    "  ms::CommandLine commandLine(\"x\", \"y\");\n"
                    "  run.measureKernels();\n"
                    "  run.measureKernels();\n"  // counted once
                    "  run . verdict();\n"
                    "  plan.describe(out);\n"
                    "  range.get(); range.release(); range.reset(); range.out();\n"
                    "  commandLine.addSize(1);\n"
                    "  other.measure();\n"
                    "}\n",
                    names),
            (std::vector<std::string>{"run.measureKernels", "run.verdict", "plan.describe"}));
}

TEST(ProjectCalls, WhatDoesNotCount) {
  const ls::ProjectNames names{{}, {"declaredInHeader"}};
  EXPECT_TRUE(written("void f() {\n"
                      "  ms::check(cuMemAlloc(a.out(), n), \"cuMemAlloc\");\n"
                      "  check(cuInit(0), \"cuInit\");\n"
                      "  a.release(); p->get(); a.out();\n"
                      "  report.ms::odd();\n"
                      "  std::sort(v.begin(), v.end()); std::vector<int> v2(3);\n"
                      "  other::helper(1); Widget::create(2);\n"
                      "  notDeclared(3); memcpy(p, q, n);\n"
                      "  // ms::inComment(1);\n"
                      "  log(\"ms::inString(1)\");\n"
                      "  ms::Report report(out); ms::Sizes sizes{1};\n"
                      "  if (x) {} while (y) {} sizeof(int);\n"
                      "}\n",
                      names)
                  .empty());
}

TEST(ProjectCalls, UnqualifiedCallsOfDeclaredFunctions) {
  const ls::ProjectNames names{{}, {"measureDemo", "sizeRun", "printRow", "deviceName"}};
  EXPECT_EQ(written("void printRow(int);\n"  // the lesson's own: not counted
                    "void f() {\n"
                    "  const Sizes s = sizeRun(options);\n"
                    "  printRow(1);\n"
                    "  std::string deviceName(\"declares a variable\");\n"
                    "  measureDemo (s);\n"
                    "  ::sizeRun(options);\n"
                    "  return measureDemo(s);\n"
                    "}\n"
                    "void printRow(int) {}\n",
                    names),
            (std::vector<std::string>{"sizeRun", "measureDemo"}));
}

TEST(ProjectCalls, NamespaceAliasesOfTheProject) {
  const ls::ProjectNames names{{"vmm"}, {}};
  EXPECT_EQ(written("namespace fs = std::filesystem;\n"
                    "namespace sv = memsamples::vmm;\n"
                    "namespace deep = sv::detail;\n"
                    "namespace v = ::vmm;\n"
                    "void f() { fs::exists(p); sv::build(1); deep::helper(2); v::other(3); }\n",
                    names),
            (std::vector<std::string>{"sv::build", "deep::helper", "v::other"}));
}

namespace {

// A lesson calling @p count distinct Common functions ms::f1, ms::f2, ... and, in a function of
// its own, @p more.
std::string lessonCalling(int count, const std::string& more) {
  std::string lesson = "#include \"memsamples.hpp\"\nnamespace ms = memsamples;\nvoid run() {\n";
  for (int k = 1; k <= count; ++k)
    lesson += "  ms::f" + std::to_string(k) + "();\n";
  return lesson + "  localHelper();\n  ms::check(cuInit(0), \"cuInit\");\n}\n" +
         "void localHelper() {\n" + more + "}\n";
}

const char* const kMore = "  fromFolder();\n  fromCommon();\n";

}  // namespace

TEST_F(SampleFolder, HelpersPassUpToTwelve) {
  write("demo.cpp", lessonCalling(10, kMore));
  write("demo_measure.hpp", "namespace demo {\nvoid fromFolder();\n}\n");
  writeCommon("support/helpers.hpp", "namespace memsamples {\nvoid fromCommon();\n}\n");
  const ls::Report report = ls::checkHelpers(folder_);
  EXPECT_TRUE(report.problems.empty()) << joined(report.problems);
  EXPECT_EQ(
      report.summary.rfind(folder_ + "/demo.cpp: 12 distinct project functions called (at most "
                                     "12): ms::f1, ms::f2, ms::f3, ms::f4, ms::f5, ms::f6, "
                                     "ms::f7, ms::f8, ms::f9, ms::f10, fromFolder, fromCommon\n",
                           0),
      0u)
      << report.summary;
  EXPECT_NE(report.summary.find("the folder's 1 .hpp files or in the 1 headers of " + common_),
            std::string::npos)
      << report.summary;
}

TEST_F(SampleFolder, HelpersFailPastTwelve) {
  write("demo.cpp", lessonCalling(11, kMore));
  write("demo_measure.hpp", "namespace demo {\nvoid fromFolder();\n}\n");
  writeCommon("support/helpers.hpp", "namespace memsamples {\nvoid fromCommon();\n}\n");
  const ls::Report report = ls::checkHelpers(folder_);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0],
            folder_ +
                "/demo.cpp: calls 13 distinct project functions, over the limit of 12: ms::f1, "
                "ms::f2, ms::f3, ms::f4, ms::f5, ms::f6, ms::f7, ms::f8, ms::f9, ms::f10, ms::f11, "
                "fromFolder, fromCommon (make sizing, probing and reporting one call each)");
  std::filesystem::remove(folder_ + "/demo.cpp");
  EXPECT_EQ(ls::checkHelpers(folder_).problems.size(), 1u);
}

// ------------------------------------------------------------------ folder

TEST_F(SampleFolder, FolderUpTo1200CodeLines) {
  write("demo.cpp", codeLines(700) + "\n\n// A comment is free.\n/* So is\n   this one. */\n");
  write("demo_measure.hpp", codeLines(500));
  write("notes.md", codeLines(900));  // not code
  ls::Report report = ls::checkFolder(folder_);
  EXPECT_TRUE(report.problems.empty()) << joined(report.problems);
  EXPECT_EQ(report.summary, folder_ +
                                ": 1200 code lines in 2 .cpp/.hpp files (at most 1200): demo.cpp "
                                "700, demo_measure.hpp 500");
  write("demo_measure.cpp", "x;");
  report = ls::checkFolder(folder_);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0], folder_ +
                                    ": its .cpp and .hpp files hold 1201 code lines together, "
                                    "over the limit of 1200 (demo.cpp 700, demo_measure.cpp 1, "
                                    "demo_measure.hpp 500)");
}

TEST(FolderLimit, TwoProgramsMayHoldMore) {
  EXPECT_EQ(ls::folderCodeLineLimit("07_memMapIPC"), 1500u);
  EXPECT_EQ(ls::folderCodeLineLimit("02_vectorAddMMAP"), 1200u);
}
