// Unit tests of the `readme` and `steps` checks: the README's opening layout, and the step
// numbers of the lesson, its @file header and the README's `## Flow`, passing and failing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lesson_shape.hpp"
#include "lesson_shape_fixture.hpp"

namespace ls = memsamples::lesson_shape;
using Numbers = std::vector<int>;
using memsamples::lesson_shape::test::countContaining;
using memsamples::lesson_shape::test::joined;
using memsamples::lesson_shape::test::replaced;
using memsamples::lesson_shape::test::SampleFolder;

namespace {

// A README in the layout, with @p intro lines of what-and-why and @p core lines of text before
// the copy's code block.
std::string goodReadme(std::size_t intro = 3, std::size_t core = 1) {
  std::string text = "# 02_demo — a demo\n";
  for (std::size_t k = 0; k < intro; ++k)
    text += "What and why.\n\n";
  text += "## The core\n";
  for (std::size_t k = 0; k < core; ++k)
    text += "A sentence.\n";
  return text +
         "<!-- core: demo.cpp -->\n```cpp\na();\n```\n\n## Run it\n```\n$ demo\n```\n"
         "## Flow\n1. One.\n   1. Inner.\n2. Two.\n\n## Details\n### More\n"
         "## Demonstrated API calls\nIn the core: `cuA`.\n";
}

}  // namespace

// ------------------------------------------------------------------ README layout

TEST(ReadmeLayout, TheLayoutPasses) {
  EXPECT_TRUE(ls::readmeLayoutProblems(goodReadme(), "02_demo").empty())
      << joined(ls::readmeLayoutProblems(goodReadme(), "02_demo"));
  // Headings inside code blocks do not count; `###` headings are inside their section.
  const std::string readme = replaced(goodReadme(), "## Run it\n```\n", "## Run it\n```\n## x\n");
  EXPECT_TRUE(ls::readmeLayoutProblems(readme, "02_demo").empty())
      << joined(ls::readmeLayoutProblems(readme, "02_demo"));
}

TEST(ReadmeLayout, TheTitleComesFirst) {
  std::vector<std::string> problems = ls::readmeLayoutProblems("\n" + goodReadme(), "02_demo");
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0],
            "README.md line 1: the README must start with its title, `# 02_demo — <what it "
            "teaches>`");
  problems = ls::readmeLayoutProblems(goodReadme(), "03_other");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("`# 03_other — "), std::string::npos);
}

TEST(ReadmeLayout, FifteenLinesOfIntroPassSixteenFail) {
  EXPECT_TRUE(ls::readmeLayoutProblems(goodReadme(15), "02_demo").empty());
  const std::vector<std::string> problems = ls::readmeLayoutProblems(goodReadme(16), "02_demo");
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0].rfind("README.md: 16 lines of text between the title and the first `## "
                              "` heading, over the limit of 15",
                              0),
            0u)
      << problems[0];
}

TEST(ReadmeLayout, TheOpeningHeadingsInOrder) {
  // Run it before The core.
  std::string readme = replaced(goodReadme(), "## The core\n", "## Run it\n");
  readme = replaced(readme, "\n## Run it\n```", "\n## The core\n```");
  std::vector<std::string> problems = ls::readmeLayoutProblems(readme, "02_demo");
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("heading number 1 must be `## The core`"), std::string::npos);
  EXPECT_NE(problems[0].find("line 8 has `## Run it`"), std::string::npos) << problems[0];

  // Another heading between them.
  readme = replaced(goodReadme(), "## Flow\n", "## Options\n## Flow\n");
  problems = ls::readmeLayoutProblems(readme, "02_demo");
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("heading number 3 must be `## Flow`"), std::string::npos);

  // No headings at all.
  problems = ls::readmeLayoutProblems("# 02_demo — x\n```\n```\n", "02_demo");
  EXPECT_NE(joined(problems).find("the README has no more `## ` headings"), std::string::npos);
}

TEST(ReadmeLayout, DetailsAfterFlowBeforeTheCallList) {
  std::vector<std::string> problems =
      ls::readmeLayoutProblems(replaced(goodReadme(), "## Details\n", "## Notes\n"), "02_demo");
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0],
            "README.md: has no `## Details` heading (after `## Flow`: everything else goes there)");

  std::string readme = replaced(goodReadme(), "## Details\n", "");
  readme += "## Details\n";
  problems = ls::readmeLayoutProblems(readme, "02_demo");
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("`## Details` must come before `## Demonstrated API calls`"),
            std::string::npos);

  problems = ls::readmeLayoutProblems(
      replaced(goodReadme(), "## Demonstrated API calls\n", "## Calls\n"), "02_demo");
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0], "README.md: has no `## Demonstrated API calls` heading");
}

TEST(ReadmeLayout, TheFirstCodeBlockOpensByLineForty) {
  // goodReadme(3, n): the title, 6 intro lines, `## The core`, n lines, the core line: the
  // fence is line 10 + n.
  EXPECT_TRUE(ls::readmeLayoutProblems(goodReadme(3, 30), "02_demo").empty());
  const std::vector<std::string> problems = ls::readmeLayoutProblems(goodReadme(3, 31), "02_demo");
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0],
            "README.md line 41: the first fenced code block opens here, after line 40 (a reader "
            "sees the core's code first)");
  EXPECT_NE(joined(ls::readmeLayoutProblems("# 02_demo — x\n## The core\n", "02_demo"))
                .find("has no fenced code block"),
            std::string::npos);
}

TEST_F(SampleFolder, ReadmePassesAndFails) {
  write("README.md", goodReadme());
  ls::Report report = ls::checkReadme(folder_);
  EXPECT_TRUE(report.problems.empty()) << joined(report.problems);
  EXPECT_EQ(report.summary, folder_ +
                                "/README.md: headings The core, Run it, Flow, Details, "
                                "Demonstrated API calls");
  write("README.md", goodReadme(16));
  report = ls::checkReadme(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_EQ(report.problems[0].rfind(folder_ + "/README.md: 16 lines of text", 0), 0u)
      << report.problems[0];
  std::filesystem::remove(folder_ + "/README.md");
  EXPECT_EQ(ls::checkReadme(folder_).problems.size(), 1u);
}

// ------------------------------------------------------------------ steps

TEST(Steps, StepCommentsOfTheLesson) {
  EXPECT_EQ(ls::lessonSteps("  // 1. The driver.\n// 2. A context.\ncode(); // 3. not alone\n"
                            "//  4. two spaces\n// 5.no space\n//5. no space\n/// 6. doc\n"
                            "\t// 10. Ten.\r\n"),
            (Numbers{1, 2, 10}));
  EXPECT_TRUE(ls::lessonSteps("").empty());
}

TEST(Steps, TheFileHeaderList) {
  const ls::FileHeader header = ls::fileHeaderSteps(
      "/**\n * @file demo.cpp\n * @brief x\n *\n * 1. **cuInit**\n *    more words 2. x\n"
      " *    1. nested\n * 2. Two.\n */\n/** 3. another block */\n// 1. code\n");
  EXPECT_TRUE(header.found);
  EXPECT_TRUE(header.hasFileCommand);
  EXPECT_EQ(header.steps, (Numbers{1, 2}));
  const ls::FileHeader noFile = ls::fileHeaderSteps("/** Just a comment.\n * 1. One.\n */\n");
  EXPECT_TRUE(noFile.found);
  EXPECT_FALSE(noFile.hasFileCommand);
  EXPECT_FALSE(ls::fileHeaderSteps("// 1. One.\n").found);
}

TEST(Steps, TheFlowList) {
  const ls::FlowSteps flow = ls::flowSteps(
      "## The core\n1. not the flow\n## Flow\nSteps:\n1. One.\n   1. nested\n 2. indented\n"
      "```\n3. in code\n```\n2. Two.\n### Sub\n3. Three.\n## Details\n4. later\n");
  EXPECT_TRUE(flow.found);
  EXPECT_EQ(flow.steps, (Numbers{1, 2, 3}));
  EXPECT_FALSE(ls::flowSteps("## Application flow\n1. x\n").found);
}

TEST(Steps, OneToNInOrder) {
  EXPECT_EQ(ls::stepOrderProblem({1}), "");
  EXPECT_EQ(ls::stepOrderProblem({1, 2, 3}), "");
  EXPECT_EQ(ls::stepOrderProblem({}), "has no numbered steps");
  EXPECT_EQ(ls::stepOrderProblem({1, 2, 4}),
            "goes 1, 2, 4 (the steps are numbered 1 to N in order, each number once)");
  EXPECT_NE(ls::stepOrderProblem({1, 2, 2, 3}), "");
  EXPECT_NE(ls::stepOrderProblem({2, 1}), "");
  EXPECT_NE(ls::stepOrderProblem({0, 1}), "");
}

namespace {

const char* const kStepLesson =
    "/**\n * @file demo.cpp\n * @brief Demo.\n *\n * 1. One.\n * 2. Two.\n */\n"
    "void run() {\n  // 1. One.\n  a();\n\n  // 2. Two.\n  b();\n}\n";

}  // namespace

TEST_F(SampleFolder, StepsPass) {
  write("demo.cpp", kStepLesson);
  write("README.md", goodReadme());
  const ls::Report report = ls::checkSteps(folder_);
  EXPECT_TRUE(report.problems.empty()) << joined(report.problems);
  EXPECT_EQ(report.summary, folder_ +
                                ": the step comments: 1, 2; the @file header: 1, 2; README ## "
                                "Flow: 1, 2");
}

TEST_F(SampleFolder, StepsFailWhenTheNumbersDisagree) {
  write("demo.cpp", replaced(kStepLesson, " * 2. Two.\n", " * 2. Two.\n * 3. Three.\n"));
  write("README.md", goodReadme());
  ls::Report report = ls::checkSteps(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_EQ(report.problems[0], folder_ +
                                    ": the lesson, its @file header and the README's ## Flow "
                                    "must number the same steps (the step comments: 1, 2; the "
                                    "@file header: 1, 2, 3; README ## Flow: 1, 2)");

  write("demo.cpp", replaced(kStepLesson, "// 2. Two.", "// 3. Two."));
  report = ls::checkSteps(folder_);
  ASSERT_EQ(report.problems.size(), 2u) << joined(report.problems);
  EXPECT_EQ(report.problems[0], folder_ +
                                    "/demo.cpp: the step comments `// N. ` goes 1, 3 (the steps "
                                    "are numbered 1 to N in order, each number once)");

  write("demo.cpp", kStepLesson);
  write("README.md", replaced(goodReadme(), "2. Two.", "3. Two."));
  report = ls::checkSteps(folder_);
  ASSERT_EQ(report.problems.size(), 2u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("the `## Flow` list goes 1, 3"), std::string::npos);
}

TEST_F(SampleFolder, StepsFailWithoutHeaderFlowOrSteps) {
  write("demo.cpp", "void run() {\n  a();\n}\n");
  write("README.md", "# 02_demo — x\n");
  const ls::Report report = ls::checkSteps(folder_);
  ASSERT_EQ(report.problems.size(), 3u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("the step comments `// N. ` has no numbered steps"),
            std::string::npos);
  EXPECT_NE(report.problems[1].find("the first /** */ block must be the `@file` header"),
            std::string::npos);
  EXPECT_NE(report.problems[2].find("has no `## Flow` section"), std::string::npos);
  std::filesystem::remove(folder_ + "/demo.cpp");
  EXPECT_NE(joined(ls::checkSteps(folder_).problems).find("the lesson file cannot be read"),
            std::string::npos);
}
