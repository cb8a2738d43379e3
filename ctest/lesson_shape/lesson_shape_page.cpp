// The `page` and `steps` checks of the lesson shape: the README's page shape, and the step
// numbers of the lesson, its `@file` header and the README's `## Flow`; see lesson_shape.hpp.
#include <algorithm>
#include <system_error>

#include "lesson_shape.hpp"
#include "lesson_shape_internal.hpp"

namespace memsamples::lesson_shape {
namespace {

using namespace internal;

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

// @p line parsed as a picture link `![alt](path)` (white space around it aside).
bool parsePicture(const std::string& line, PictureLink& picture) {
  const std::string text = trim(line);
  const std::size_t close = text.find("](");
  if (!startsWith(text, "![") || close == std::string::npos || text.back() != ')')
    return false;
  picture.alt = text.substr(2, close - 2);
  picture.path = text.substr(close + 2, text.size() - close - 3);
  return picture.path.find_first_of(" \t()") == std::string::npos;
}

// The 0-based line range [begin, end) of the body of the section under the level-2 heading at
// 1-based line @p headingLine: up to the next `#` or `##` heading outside fenced code.
std::pair<std::size_t, std::size_t> sectionBody(const std::vector<std::string>& lines,
                                                std::size_t headingLine) {
  bool fenced = false;
  std::size_t end = headingLine;
  for (; end < lines.size(); ++end) {
    if (isFence(lines[end]))
      fenced = !fenced;
    else if (!fenced && (startsWith(lines[end], "# ") || startsWith(lines[end], "## ")))
      break;
  }
  return {headingLine, end};
}

// One fenced code block: its info string (```sh -> "sh"), where it opens and how many lines it
// holds.
struct Fenced {
  std::string info;
  std::size_t line = 0;  // 1-based line of the opening fence
  std::size_t lines = 0;
};

std::vector<Fenced> fencedBlocks(const std::vector<std::string>& lines, std::size_t begin,
                                 std::size_t end) {
  std::vector<Fenced> blocks;
  for (std::size_t k = begin; k < end; ++k) {
    if (!isFence(lines[k]))
      continue;
    Fenced block;
    block.info = trim(trimLeft(lines[k]).substr(3));
    block.line = k + 1;
    std::size_t close = k + 1;
    while (close < end && !isFence(lines[close]))
      ++close;
    block.lines = close - k - 1;
    blocks.push_back(block);
    k = close;
  }
  return blocks;
}

// The problems of the `## Run it` section (lines [begin, end)).
void checkRunIt(const std::vector<std::string>& lines, std::size_t headingLine,
                std::vector<std::string>& problems) {
  const auto [begin, end] = sectionBody(lines, headingLine);
  std::size_t commands = 0;
  std::vector<Fenced> outputs;
  for (const Fenced& block : fencedBlocks(lines, begin, end)) {
    commands += block.info == "sh" ? 1 : 0;
    if (block.info == "text")
      outputs.push_back(block);
  }
  const std::string where = atLine(headingLine) + ": `## Run it` ";
  if (commands == 0)
    problems.push_back(where + "has no ```sh block with the command to run");
  if (outputs.size() != 1) {
    problems.push_back(where + "has " + std::to_string(outputs.size()) +
                       " ```text blocks; it shows the output of one run in exactly one");
  }
  for (const Fenced& output : outputs) {
    if (output.lines > kRunOutputLineLimit) {
      problems.push_back(atLine(output.line) + ": the ```text output block holds " +
                         std::to_string(output.lines) + " lines, over " +
                         std::to_string(kRunOutputLineLimit) +
                         " (show the lines a reader looks at; the rest goes below "
                         "`## Going deeper`)");
    }
  }
}

// The problems of the `## Try this` section.
void checkTryThis(const std::vector<std::string>& lines, std::size_t headingLine,
                  std::vector<std::string>& problems) {
  const auto [begin, end] = sectionBody(lines, headingLine);
  std::size_t experiments = 0;
  bool fenced = false;
  for (std::size_t k = begin; k < end; ++k) {
    if (isFence(lines[k]))
      fenced = !fenced;
    if (fenced || !(startsWith(lines[k], "- ") || startsWith(lines[k], "* ")))
      continue;
    const std::string& prefix = tryThisPrefix();
    if (!startsWith(lines[k], prefix) || lines[k].find('`', prefix.size()) == std::string::npos) {
      problems.push_back(atLine(k + 1) + ": a `## Try this` bullet starts \"" + prefix +
                         "\" and holds the whole command in that one code span (the build "
                         "runs it as a test): `" + lines[k] + "`");
      continue;
    }
    ++experiments;
  }
  if (experiments < kTryThisMinimum) {
    problems.push_back(atLine(headingLine) + ": `## Try this` has " +
                       std::to_string(experiments) + " experiments (bullets \"" +
                       tryThisPrefix() + "...`\"), fewer than " +
                       std::to_string(kTryThisMinimum));
  }
}

}  // namespace

PictureLink firstPicture(const std::string& readme) {
  const std::vector<std::string> lines = splitLines(readme);
  bool fenced = false;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    if (isFence(lines[k]))
      fenced = !fenced;
    PictureLink picture;
    if (!fenced && parsePicture(lines[k], picture)) {
      picture.line = k + 1;
      return picture;
    }
  }
  return {};
}

std::vector<std::string> pageProblems(const std::string& readme, const std::string& folderName,
                                      const PictureCheck& pictureCheck) {
  std::vector<std::string> problems;
  const std::vector<std::string> lines = splitLines(readme);
  const std::string title = "# " + folderName + " ";
  if (lines.empty() || !startsWith(lines[0], title)) {
    problems.push_back(atLine(1) + ": the README must start with its title, `" + title +
                       "— <what it teaches>`");
  }
  const std::vector<Heading> headings = levelTwoHeadings(lines);
  const std::size_t firstHeading = headings.empty() ? lines.size() + 1 : headings[0].line;

  // The what-and-why: the non-blank lines between the title and the first `## ` heading.
  std::size_t intro = 0;
  for (std::size_t k = 1; k + 1 < firstHeading && k < lines.size(); ++k) {
    PictureLink ignored;
    intro += trim(lines[k]).empty() || parsePicture(lines[k], ignored) ? 0 : 1;
  }
  if (intro > kWhatAndWhyLineLimit) {
    problems.push_back("README.md: " + std::to_string(intro) +
                       " lines of what-and-why between the title and the first `## ` heading, " +
                       "over " + std::to_string(kWhatAndWhyLineLimit) +
                       " (say what and why in short; the rest goes below `## Going deeper`)");
  }

  // The picture: the first picture link between the title and the first `## ` heading.
  PictureLink picture;
  for (std::size_t k = 1; k + 1 < firstHeading && k < lines.size() && picture.line == 0; ++k) {
    if (parsePicture(lines[k], picture))
      picture.line = k + 1;
  }
  const std::string example = "`![what it shows](../../docs/images/" + folderName + ".svg)`";
  if (picture.line == 0) {
    problems.push_back("README.md: has no picture link " + example +
                       " on a line of its own between the title and the first `## ` heading");
  } else if (picture.line > kPictureLineLimit) {
    problems.push_back(atLine(picture.line) + ": the picture stands here, after line " +
                       std::to_string(kPictureLineLimit) +
                       " (a reader meets it right after the what-and-why)");
  } else if (picture.path.find("://") != std::string::npos || startsWith(picture.path, "/") ||
             !endsWith(picture.path, ".svg")) {
    problems.push_back(atLine(picture.line) + ": the picture `" + picture.path +
                       "` must be a relative link to a committed .svg file, e.g. " + example);
  } else if (const std::string missing = pictureCheck(picture.path); !missing.empty()) {
    problems.push_back(atLine(picture.line) + ": the picture `" + picture.path + "` " + missing);
  }

  // The headings of the first layer, in order.
  const std::vector<std::string>& layer = pageHeadings();
  for (std::size_t k = 0; k < layer.size(); ++k) {
    if (k < headings.size() && headings[k].text == layer[k])
      continue;
    const std::string found = k < headings.size()
                                  ? atLine(headings[k].line) + " has `" + headings[k].text + "`"
                                  : "the README has no more `## ` headings";
    problems.push_back("README.md: `## ` heading number " + std::to_string(k + 1) + " must be `" +
                       layer[k] + "` (the first layer: `## Flow`, `## The core`, `## Run it`, " +
                       "`## Try this`, then `## Going deeper`), but " + found);
    break;
  }
  for (const std::string& heading : layer) {
    if (findHeading(headings, heading) == std::string::npos)
      problems.push_back("README.md: has no `" + heading + "` heading");
  }

  const FlowSteps flow = flowSteps(readme);
  if (flow.found && flow.steps.empty())
    problems.push_back("README.md: `## Flow` has no numbered steps (`1. ...`)");
  if (flow.steps.size() > kFlowStepLimit) {
    problems.push_back("README.md: `## Flow` has " + std::to_string(flow.steps.size()) +
                       " numbered steps, over " + std::to_string(kFlowStepLimit));
  }
  if (const std::size_t core = findHeading(headings, layer[1]); core != std::string::npos) {
    const auto [begin, end] = sectionBody(lines, headings[core].line);
    bool copied = false;
    for (std::size_t k = begin; k < end; ++k)
      copied = copied || startsWith(lines[k], "<!-- core: ");
    if (!copied) {
      problems.push_back(atLine(headings[core].line) +
                         ": `## The core` holds no `<!-- core: FILE -->` line with the copy of "
                         "the core after it");
    }
  }
  if (const std::size_t run = findHeading(headings, layer[2]); run != std::string::npos)
    checkRunIt(lines, headings[run].line, problems);
  if (const std::size_t tryThis = findHeading(headings, layer[3]); tryThis != std::string::npos)
    checkTryThis(lines, headings[tryThis].line, problems);

  const std::size_t deeper = findHeading(headings, layer[4]);
  const std::size_t api = findHeading(headings, kApiHeading);
  if (deeper != std::string::npos && headings[deeper].line > kFirstLayerLineLimit) {
    problems.push_back(atLine(headings[deeper].line) + ": `" + layer[4] + "` stands here, " +
                       "after line " + std::to_string(kFirstLayerLineLimit) +
                       " (the first layer is what a reader reads in five minutes)");
  }
  if (api == std::string::npos) {
    problems.push_back("README.md: has no `" + std::string(kApiHeading) + "` heading");
  } else if (deeper != std::string::npos && api < deeper) {
    problems.push_back(atLine(headings[api].line) + ": `" + kApiHeading +
                       "` must come after `" + layer[4] + "` (" +
                       atLine(headings[deeper].line) + ")");
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
      flow.found = heading && trimRight(line) == pageHeadings()[0];
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

Report checkPage(const std::string& folderArgument) {
  Report report;
  const fs::path folder = normalizedFolder(folderArgument);
  const fs::path readmePath = folder / "README.md";
  std::string readme;
  if (!readReadme(folder, readme, report.problems))
    return report;
  const PictureCheck picture = [&folder](const std::string& path) -> std::string {
    const fs::path file = (folder / path).lexically_normal();
    std::error_code error;
    if (!fs::is_regular_file(file, error))
      return "names " + file.string() + ", which does not exist (commit the SVG there)";
    bool ok = false;
    if (readFile(file, ok).find("<svg") == std::string::npos || !ok)
      return "names " + file.string() + ", which holds no `<svg` element";
    return "";
  };
  for (const std::string& problem : pageProblems(readme, folder.filename().string(), picture))
    report.problems.push_back((folder / problem).string());
  const std::vector<Heading> headings = levelTwoHeadings(splitLines(readme));
  std::string order;
  for (const Heading& heading : headings)
    order += (order.empty() ? "" : ", ") + heading.text.substr(3);
  const PictureLink first = firstPicture(readme);
  report.summary = readmePath.string() + ": picture " +
                   (first.line == 0 ? std::string("none")
                                    : first.path + " (line " + std::to_string(first.line) + ")") +
                   "; headings " + order;
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
