// Unit tests of the `page` and `steps` checks: the README's page shape (starting from the good
// test-data README, testdata/samples/02_demo, broken one rule at a time), and the step numbers of
// the lesson, its @file header and the README's `## Flow`, passing and failing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
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

// The good page: the README of the test data's 02_demo.
std::string goodPage() {
  std::ifstream in(std::string(MEMSAMPLES_LESSON_SHAPE_TESTDATA) + "/samples/02_demo/README.md");
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty());
  return text.str();
}

// A picture check that finds every picture, and one that finds none.
std::string found(const std::string&) {
  return "";
}
std::string missing(const std::string&) {
  return "names x, which does not exist";
}

std::vector<std::string> problemsOf(const std::string& readme) {
  return ls::pageProblems(readme, "02_demo", found);
}

// @p count lines "A line.\n".
std::string textLines(std::size_t count) {
  std::string text;
  for (std::size_t k = 0; k < count; ++k)
    text += "A line.\n";
  return text;
}

}  // namespace

// ------------------------------------------------------------------ the page shape

TEST(Page, TheGoodPagePasses) {
  EXPECT_TRUE(problemsOf(goodPage()).empty()) << joined(problemsOf(goodPage()));
  const ls::PictureLink picture = ls::firstPicture(goodPage());
  EXPECT_EQ(picture.line, 7u);
  EXPECT_EQ(picture.alt, "Two buffers and the copy between them");
  EXPECT_EQ(picture.path, "../../docs/images/02_demo.svg");
}

TEST(Page, TheTitleComesFirst) {
  std::vector<std::string> problems = problemsOf("\n" + goodPage());
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0],
            "README.md line 1: the README must start with its title, `# 02_demo — <what it "
            "teaches>`");
  problems = ls::pageProblems(goodPage(), "03_other", found);
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("`# 03_other — "), std::string::npos);
}

TEST(Page, FifteenLinesOfWhatAndWhyPassSixteenFail) {
  // The good page has 3 lines of what-and-why; the picture line does not count.
  const std::string what = "It is never built.\n";
  EXPECT_TRUE(problemsOf(replaced(goodPage(), what, what + textLines(12))).empty());
  const std::vector<std::string> problems =
      problemsOf(replaced(goodPage(), what, what + textLines(13)));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0].rfind("README.md: 16 lines of what-and-why between the title and the "
                              "first `## ` heading, over 15",
                              0),
            0u)
      << problems[0];
}

TEST(Page, APictureLinkToAnSvgByLineForty) {
  const std::string picture = "![Two buffers and the copy between them](../../docs/images/02_demo.svg)";
  // None.
  std::vector<std::string> problems = problemsOf(replaced(goodPage(), picture, "No picture."));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0],
            "README.md: has no picture link `![what it shows](../../docs/images/02_demo.svg)` on "
            "a line of its own between the title and the first `## ` heading");
  // Inside a sentence, it is not the page's picture.
  problems = problemsOf(replaced(goodPage(), picture, "See " + picture + "."));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("has no picture link"), std::string::npos);
  // Line 40 passes (blank lines are no what-and-why), line 41 fails.
  const std::string blank = "\n";
  std::string blanks;
  for (int k = 0; k < 32; ++k)
    blanks += blank;
  problems = problemsOf(replaced(goodPage(), picture, blanks + picture));
  EXPECT_EQ(ls::firstPicture(replaced(goodPage(), picture, blanks + picture)).line, 39u);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  problems = problemsOf(replaced(goodPage(), picture, blanks + "\n\n" + picture));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0],
            "README.md line 41: the picture stands here, after line 40 (a reader meets it right "
            "after the what-and-why)");
  // Below the first heading, it is not the page's picture.
  problems = problemsOf(replaced(replaced(goodPage(), picture, ""), "## The core\n",
                                 "## The core\n" + picture + "\n"));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("has no picture link"), std::string::npos) << problems[0];
}

TEST(Page, ThePictureIsARelativeLinkToACommittedSvg) {
  const std::string path = "../../docs/images/02_demo.svg";
  for (const std::string& bad : {std::string("https://example.com/02_demo.svg"),
                                 std::string("/docs/images/02_demo.svg"),
                                 std::string("../../docs/images/02_demo.png")}) {
    const std::vector<std::string> problems = problemsOf(replaced(goodPage(), path, bad));
    ASSERT_EQ(problems.size(), 1u) << bad << joined(problems);
    EXPECT_EQ(problems[0], "README.md line 7: the picture `" + bad +
                               "` must be a relative link to a committed .svg file, e.g. "
                               "`![what it shows](../../docs/images/02_demo.svg)`");
  }
  const std::vector<std::string> problems = ls::pageProblems(goodPage(), "02_demo", missing);
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0], "README.md line 7: the picture `" + path +
                             "` names x, which does not exist");
}

TEST(Page, TheFirstLayerHeadingsInOrder) {
  // The core before the flow.
  std::string readme = replaced(goodPage(), "## Flow\n", "## The kore\n");
  readme = replaced(readme, "## The core\n", "## Flow\n");
  readme = replaced(readme, "## The kore\n", "## The core\n");
  std::vector<std::string> problems = problemsOf(readme);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(countContaining(problems, "heading number 1 must be `## Flow`"), 1u)
      << joined(problems);
  EXPECT_EQ(countContaining(problems, "line 9 has `## The core`"), 1u) << joined(problems);

  // Another heading in the first layer.
  problems = problemsOf(replaced(goodPage(), "## Try this\n", "## Options\n## Try this\n"));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("heading number 4 must be `## Try this`"), std::string::npos);

  // No Going deeper: the old `## Details`.
  problems = problemsOf(replaced(goodPage(), "## Going deeper\n", "## Details\n"));
  ASSERT_EQ(problems.size(), 2u) << joined(problems);
  EXPECT_NE(problems[0].find("heading number 5 must be `## Going deeper`"), std::string::npos);
  EXPECT_EQ(problems[1], "README.md: has no `## Going deeper` heading");

  // No headings at all.
  problems = problemsOf("# 02_demo — x\n");
  EXPECT_NE(joined(problems).find("the README has no more `## ` headings"), std::string::npos);
}

TEST(Page, TheFlowHasOneToTenSteps) {
  const std::string flow = "3. The copy measured.\n";
  std::string more;
  for (int k = 4; k <= 10; ++k)
    more += std::to_string(k) + ". More.\n";
  EXPECT_TRUE(problemsOf(replaced(goodPage(), flow, flow + more)).empty());
  std::vector<std::string> problems =
      problemsOf(replaced(goodPage(), flow, flow + more + "11. One too many.\n"));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0], "README.md: `## Flow` has 11 numbered steps, over 10");
  problems = problemsOf(replaced(replaced(replaced(goodPage(), "1. The driver", "The driver"),
                                          "2. Two", "Two"),
                                 flow, ""));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0], "README.md: `## Flow` has no numbered steps (`1. ...`)");
}

TEST(Page, TheCoreHoldsTheCopy) {
  const std::vector<std::string> problems =
      problemsOf(replaced(goodPage(), "<!-- core: demo.cpp -->\n", ""));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0],
            "README.md line 15: `## The core` holds no `<!-- core: FILE -->` line with the copy "
            "of the core after it");
}

TEST(Page, RunItShowsTheCommandAndOneShortOutput) {
  const std::string command = "```sh\n./build/bin/demo\n```\n";
  const std::string output = "```text\n1.00 MiB copied on a made-up device\n```\n";
  std::vector<std::string> problems = problemsOf(replaced(goodPage(), command, ""));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0],
            "README.md line 40: `## Run it` has no ```sh block with the command to run");

  problems = problemsOf(replaced(goodPage(), output, ""));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("has 0 ```text blocks; it shows the output of one run in exactly one"),
            std::string::npos);
  problems = problemsOf(replaced(goodPage(), output, output + output));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_NE(problems[0].find("has 2 ```text blocks"), std::string::npos);
  // An untagged block is neither.
  problems = problemsOf(replaced(goodPage(), "```text\n", "```\n"));
  EXPECT_EQ(countContaining(problems, "has 0 ```text blocks"), 1u) << joined(problems);

  const std::string line = "1.00 MiB copied on a made-up device\n";
  std::string twenty;
  for (int k = 0; k < 20; ++k)
    twenty += line;
  EXPECT_TRUE(problemsOf(replaced(goodPage(), line, twenty)).empty());
  problems = problemsOf(replaced(goodPage(), line, twenty + line));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0].rfind("README.md line 44: the ```text output block holds 21 lines, over "
                              "20",
                              0),
            0u)
      << problems[0];
}

TEST(Page, TryThisHasTwoCommandsOrMore) {
  const std::string second = "- `./build/bin/demo --size 4K --iterations 3`: a small copy is bound by latency.\n";
  std::vector<std::string> problems = problemsOf(replaced(goodPage(), second, ""));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0].rfind("README.md line 49: `## Try this` has 1 experiments", 0), 0u)
      << problems[0];

  // A bullet that does not start with the command fails, and does not count.
  problems = problemsOf(replaced(goodPage(), second, "- Run `./build/bin/demo --size 4K`.\n"));
  ASSERT_EQ(problems.size(), 2u) << joined(problems);
  EXPECT_EQ(problems[0].rfind("README.md line 52: a `## Try this` bullet starts", 0), 0u)
      << problems[0];
  EXPECT_NE(problems[1].find("has 1 experiments"), std::string::npos);
  // An unclosed code span is not a command.
  problems = problemsOf(replaced(goodPage(), second, "- `./build/bin/demo --size 4K\n"));
  EXPECT_EQ(countContaining(problems, "holds the whole command in that one code span"), 1u)
      << joined(problems);
}

TEST(Page, GoingDeeperByLine150ThenTheCallList) {
  const std::string deeper = "What to look for: the size and the device.\n";
  // Going deeper is line 54 of the good page.
  EXPECT_TRUE(problemsOf(replaced(goodPage(), deeper, deeper + textLines(96))).empty());
  std::vector<std::string> problems =
      problemsOf(replaced(goodPage(), deeper, deeper + textLines(97)));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0].rfind("README.md line 151: `## Going deeper` stands here, after line 150",
                              0),
            0u)
      << problems[0];

  problems = problemsOf(replaced(goodPage(), "## Demonstrated API calls\n", "## Calls\n"));
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0], "README.md: has no `## Demonstrated API calls` heading");

  std::string readme = replaced(goodPage(), "## Demonstrated API calls\n", "## Calls\n");
  readme = replaced(readme, "## Flow\n", "## Demonstrated API calls\n## Flow\n");
  problems = problemsOf(readme);
  EXPECT_EQ(countContaining(problems, "`## Demonstrated API calls` must come after `## Going "
                                      "deeper`"),
            1u)
      << joined(problems);
}

TEST(Page, HeadingsInCodeBlocksDoNotCount) {
  const std::string readme = replaced(goodPage(), "```text\n", "```text\n## Going deeper\n");
  EXPECT_TRUE(problemsOf(readme).empty()) << joined(problemsOf(readme));
}

TEST_F(SampleFolder, PagePassesAndFailsOnAFolder) {
  const std::string demo = std::string(MEMSAMPLES_LESSON_SHAPE_TESTDATA) + "/samples/02_demo";
  ls::Report report = ls::checkPage(demo);
  EXPECT_TRUE(report.problems.empty()) << joined(report.problems);
  EXPECT_EQ(report.summary, demo +
                                "/README.md: picture ../../docs/images/02_demo.svg (line 7); "
                                "headings Flow, The core, Run it, Try this, Going deeper, "
                                "Demonstrated API calls");
  // Here the picture is not there.
  write("README.md", goodPage());
  report = ls::checkPage(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  const std::string svg = dir_.path() + "/docs/images/02_demo.svg";
  EXPECT_EQ(report.problems[0], folder_ + "/README.md line 7: the picture "
                                          "`../../docs/images/02_demo.svg` names " +
                                    svg + ", which does not exist (commit the SVG there)");
  // A file that is no SVG.
  std::filesystem::create_directories(dir_.path() + "/docs/images");
  std::ofstream(svg) << "not a picture\n";
  report = ls::checkPage(folder_);
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("which holds no `<svg` element"), std::string::npos);
  std::ofstream(svg) << "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n";
  EXPECT_TRUE(ls::checkPage(folder_).problems.empty());
  std::filesystem::remove(folder_ + "/README.md");
  EXPECT_EQ(ls::checkPage(folder_).problems.size(), 1u);
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

// A README whose `## Flow` numbers 1 and 2 (with a nested list).
std::string goodReadme() {
  return "# 02_demo — a demo\n\n## Flow\n1. One.\n   1. Inner.\n2. Two.\n\n## The core\n";
}

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
