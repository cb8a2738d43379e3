// The `readme` and `steps` checks of the lesson shape: the README's opening layout, and the step
// numbers of the lesson, its `@file` header and the README's `## Flow`; see lesson_shape.hpp.
#include <algorithm>

#include "lesson_shape.hpp"
#include "lesson_shape_internal.hpp"

namespace memsamples::lesson_shape {
namespace {

using namespace internal;

const char* const kDetails = "## Details";
const char* const kApiHeading = "## Demonstrated API calls";

// A level-2 heading of a README, outside fenced code.
struct Heading {
  std::string text;
  std::size_t line = 0;  // 1-based
};

std::vector<Heading> levelTwoHeadings(const std::vector<std::string>& lines) {
  std::vector<Heading> headings;
  bool fenced = false;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    if (isFence(lines[k]))
      fenced = !fenced;
    else if (!fenced && startsWith(lines[k], "## "))
      headings.push_back({trimRight(lines[k]), k + 1});
  }
  return headings;
}

// The index in @p headings of the first heading @p text at or after @p from, or npos.
std::size_t findHeading(const std::vector<Heading>& headings, const std::string& text,
                        std::size_t from = 0) {
  for (std::size_t k = from; k < headings.size(); ++k) {
    if (headings[k].text == text)
      return k;
  }
  return std::string::npos;
}

std::string atLine(std::size_t line) {
  return "README.md line " + std::to_string(line);
}

}  // namespace

std::vector<std::string> readmeLayoutProblems(const std::string& readme,
                                              const std::string& folderName) {
  std::vector<std::string> problems;
  const std::vector<std::string> lines = splitLines(readme);
  const std::string title = "# " + folderName + " ";
  if (lines.empty() || !startsWith(lines[0], title)) {
    problems.push_back(atLine(1) + ": the README must start with its title, `" + title +
                       "— <what it teaches>`");
  }
  const std::vector<Heading> headings = levelTwoHeadings(lines);

  // The what-and-why: the non-blank lines between the title and the first `## ` heading.
  const std::size_t introEnd = headings.empty() ? lines.size() : headings[0].line - 1;
  std::size_t intro = 0;
  for (std::size_t k = 1; k < introEnd; ++k)
    intro += trim(lines[k]).empty() ? 0 : 1;
  if (intro > kIntroLineLimit) {
    problems.push_back("README.md: " + std::to_string(intro) +
                       " lines of text between the title and the first `## ` heading, over "
                       "the limit of " +
                       std::to_string(kIntroLineLimit) +
                       " (say what and why in short; the rest goes to `## Details`)");
  }

  const std::vector<std::string>& opening = openingHeadings();
  for (std::size_t k = 0; k < opening.size(); ++k) {
    if (k < headings.size() && headings[k].text == opening[k])
      continue;
    const std::string found = k < headings.size()
                                  ? atLine(headings[k].line) + " has `" + headings[k].text + "`"
                                  : "the README has no more `## ` headings";
    problems.push_back("README.md: `## ` heading number " + std::to_string(k + 1) + " must be `" +
                       opening[k] + "` (the README opens with `## The core`, `## Run it`, " +
                       "`## Flow`, in this order), but " + found);
    break;
  }

  const std::size_t details = findHeading(headings, kDetails);
  const std::size_t api = findHeading(headings, kApiHeading);
  const std::size_t flow = findHeading(headings, opening.back());
  if (details == std::string::npos) {
    problems.push_back("README.md: has no `" + std::string(kDetails) +
                       "` heading (after `## Flow`: everything else goes there)");
  } else if (flow != std::string::npos && details < flow) {
    problems.push_back(atLine(headings[details].line) + ": `" + kDetails +
                       "` must come after `## Flow` (" + atLine(headings[flow].line) + ")");
  }
  if (api == std::string::npos) {
    problems.push_back("README.md: has no `" + std::string(kApiHeading) + "` heading");
  } else if (details != std::string::npos && api < details) {
    problems.push_back(atLine(headings[details].line) + ": `" + kDetails + "` must come before `" +
                       kApiHeading + "` (" + atLine(headings[api].line) + ")");
  }

  std::size_t firstFence = 0;
  for (std::size_t k = 0; k < lines.size() && firstFence == 0; ++k)
    firstFence = isFence(lines[k]) ? k + 1 : 0;
  if (firstFence == 0) {
    problems.push_back("README.md: has no fenced code block (the core's copy is the first)");
  } else if (firstFence > kFirstCodeBlockLimit) {
    problems.push_back(atLine(firstFence) + ": the first fenced code block opens here, after " +
                       "line " + std::to_string(kFirstCodeBlockLimit) +
                       " (a reader sees the core's code first)");
  }
  return problems;
}

std::vector<int> lessonSteps(const std::string& lesson) {
  std::vector<int> steps;
  for (const std::string& line : splitLines(lesson)) {
    const std::string text = trimLeft(line);
    if (startsWith(text, "// ")) {
      const int number = numberFollowedBy(text, 3, ". ");
      if (number >= 0)
        steps.push_back(number);
    }
  }
  return steps;
}

FileHeader fileHeaderSteps(const std::string& lesson) {
  FileHeader header;
  const std::size_t open = lesson.find("/**");
  if (open == std::string::npos)
    return header;
  header.found = true;
  const std::size_t close = lesson.find("*/", open + 3);
  const std::string block =
      lesson.substr(open, close == std::string::npos ? std::string::npos : close - open);
  header.hasFileCommand =
      block.find("@file") != std::string::npos || block.find("\\file") != std::string::npos;
  for (const std::string& line : splitLines(block)) {
    const std::string text = trimLeft(line);
    if (startsWith(text, "* ")) {
      const int number = numberFollowedBy(text, 2, ". ");
      if (number >= 0)
        header.steps.push_back(number);
    }
  }
  return header;
}

FlowSteps flowSteps(const std::string& readme) {
  FlowSteps flow;
  bool fenced = false;
  for (const std::string& line : splitLines(readme)) {
    if (isFence(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced)
      continue;
    const bool heading = startsWith(line, "# ") || startsWith(line, "## ");
    if (!flow.found) {
      flow.found = heading && trimRight(line) == openingHeadings().back();
      continue;
    }
    if (heading)
      break;
    const int number = numberFollowedBy(line, 0, ". ");
    if (number >= 0)
      flow.steps.push_back(number);
  }
  return flow;
}

std::string stepOrderProblem(const std::vector<int>& steps) {
  if (steps.empty())
    return "has no numbered steps";
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (steps[k] != static_cast<int>(k + 1)) {
      return "goes " + joinNumbers(steps) +
             " (the steps are numbered 1 to N in order, each number once)";
    }
  }
  return "";
}

Report checkReadme(const std::string& folderArgument) {
  Report report;
  const fs::path folder = normalizedFolder(folderArgument);
  const fs::path readmePath = folder / "README.md";
  std::string readme;
  if (!readReadme(folder, readme, report.problems))
    return report;
  for (const std::string& problem : readmeLayoutProblems(readme, folder.filename().string()))
    report.problems.push_back((folder / problem).string());
  const std::vector<Heading> headings = levelTwoHeadings(splitLines(readme));
  std::string order;
  for (const Heading& heading : headings)
    order += (order.empty() ? "" : ", ") + heading.text.substr(3);
  report.summary = readmePath.string() + ": headings " + order;
  return report;
}

Report checkSteps(const std::string& folderArgument) {
  Report report;
  const fs::path folder = normalizedFolder(folderArgument);
  const fs::path lessonPath = folder / lessonFileName(folder.filename().string());
  const fs::path readmePath = folder / "README.md";
  bool lessonOk = false;
  bool readmeOk = false;
  const std::string lesson = readFile(lessonPath, lessonOk);
  const std::string readme = readFile(readmePath, readmeOk);
  if (!lessonOk)
    report.problems.push_back(lessonPath.string() + ": the lesson file cannot be read");
  if (!readmeOk)
    report.problems.push_back(readmePath.string() + ": cannot be read");
  if (!lessonOk || !readmeOk)
    return report;

  const std::vector<int> steps = lessonSteps(lesson);
  const FileHeader header = fileHeaderSteps(lesson);
  const FlowSteps flow = flowSteps(readme);
  const std::string lessonName = lessonPath.string();
  if (const std::string problem = stepOrderProblem(steps); !problem.empty())
    report.problems.push_back(lessonName + ": the step comments `// N. ` " + problem);
  if (!header.found || !header.hasFileCommand) {
    report.problems.push_back(lessonName + ": the first /** */ block must be the `@file` header" +
                              " (with the numbered list of the steps)");
  } else if (const std::string problem = stepOrderProblem(header.steps); !problem.empty()) {
    report.problems.push_back(lessonName + ": the `@file` header's list ` * N. ` " + problem);
  }
  if (!flow.found) {
    report.problems.push_back(readmePath.string() + ": has no `## Flow` section");
  } else if (const std::string problem = stepOrderProblem(flow.steps); !problem.empty()) {
    report.problems.push_back(readmePath.string() + ": the `## Flow` list " + problem);
  }
  const std::string numbers = "the step comments: " + joinNumbers(steps) +
                              "; the @file header: " + joinNumbers(header.steps) +
                              "; README ## Flow: " + joinNumbers(flow.steps);
  const bool allFound = !steps.empty() && header.hasFileCommand && flow.found;
  if (allFound && (steps != header.steps || steps != flow.steps)) {
    report.problems.push_back(folder.string() + ": the lesson, its @file header and the README's" +
                              " ## Flow must number the same steps (" + numbers + ")");
  }
  report.summary = folder.string() + ": " + numbers;
  return report;
}

}  // namespace memsamples::lesson_shape
