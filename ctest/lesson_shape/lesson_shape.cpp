// The lesson-shape checks of one sample folder; see lesson_shape.hpp. This file: the shared text
// helpers, comment stripping, the README call list, the `calls` check and the dispatch.
#include "lesson_shape.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "lesson_shape_internal.hpp"

namespace memsamples::lesson_shape {

namespace internal {

bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool startsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string trimLeft(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\n");
  return first == std::string::npos ? std::string() : text.substr(first);
}

std::string trimRight(const std::string& text) {
  const std::size_t last = text.find_last_not_of(" \t\r\n");
  return last == std::string::npos ? std::string() : text.substr(0, last + 1);
}

std::string trim(const std::string& text) {
  return trimRight(trimLeft(text));
}

int numberFollowedBy(const std::string& text, std::size_t pos, const std::string& after) {
  std::size_t end = pos;
  while (end < text.size() && end - pos < 6 &&
         std::isdigit(static_cast<unsigned char>(text[end])) != 0)
    ++end;
  if (end == pos || text.compare(end, after.size(), after) != 0)
    return -1;
  return std::stoi(text.substr(pos, end - pos));
}

std::string joinNumbers(const std::vector<int>& numbers) {
  if (numbers.empty())
    return "none";
  std::string text;
  for (const int number : numbers)
    text += (text.empty() ? "" : ", ") + std::to_string(number);
  return text;
}

bool isFence(const std::string& line) {
  const std::string text = trimLeft(line);
  return startsWith(text, "```") || startsWith(text, "~~~");
}

std::string readFile(const fs::path& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool readReadme(const fs::path& folder, std::string& text, std::vector<std::string>& problems) {
  const fs::path path = folder / "README.md";
  bool ok = false;
  text = readFile(path, ok);
  if (!ok)
    problems.push_back(path.string() + ": cannot be read (every sample folder has a README.md)");
  return ok;
}

fs::path normalizedFolder(const std::string& folder) {
  fs::path path = fs::path(folder).lexically_normal();
  return path.filename().empty() ? path.parent_path() : path;
}

std::vector<SourceFile> readSources(const fs::path& folder,
                                    const std::vector<std::string>& extensions,
                                    std::vector<std::string>& problems) {
  std::vector<fs::path> paths;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() &&
        std::find(extensions.begin(), extensions.end(), ext) != extensions.end())
      paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<SourceFile> files;
  for (const fs::path& path : paths) {
    bool ok = false;
    files.push_back({path.filename().string(), readFile(path, ok)});
    if (!ok)
      problems.push_back(path.string() + ": cannot be read");
  }
  return files;
}

}  // namespace internal

namespace {

using namespace internal;

const char* const kHeading = "## Demonstrated API calls";

// A markdown heading of level 1 or 2 ends the section; `###` and deeper stay inside it.
bool isTopHeading(const std::string& line) {
  return startsWith(line, "# ") || startsWith(line, "## ") || line == "#" || line == "##";
}

// The `cu...` name a code span stands for: `cuMemAlloc` or `cuMemAlloc(...)`; else "".
std::string callNameOf(const std::string& span) {
  const std::string content = trimRight(trimLeft(span));
  std::size_t end = 0;
  while (end < content.size() && isIdentifierChar(content[end]))
    ++end;
  const std::string name = content.substr(0, end);
  if (!startsWith(name, "cu") || (end < content.size() && content[end] != '('))
    return "";
  return name;
}

// Every code span of @p text, as CommonMark reads them: a run of N backticks up to the next run
// of exactly N backticks; an opening run without a closing one is literal text.
std::vector<std::string> codeSpans(const std::string& text) {
  std::vector<std::string> spans;
  std::size_t i = 0;
  while ((i = text.find('`', i)) != std::string::npos) {
    const std::size_t open = i;
    while (i < text.size() && text[i] == '`')
      ++i;
    const std::size_t ticks = i - open;
    std::size_t close = i;
    bool closed = false;
    while ((close = text.find('`', close)) != std::string::npos) {
      std::size_t run = close;
      while (run < text.size() && text[run] == '`')
        ++run;
      if (run - close == ticks) {
        closed = true;
        break;
      }
      close = run;
    }
    if (!closed)
      continue;  // literal backticks; go on after them
    spans.push_back(text.substr(i, close - i));
    i = close + ticks;
  }
  return spans;
}

// The token of identifier characters (and digit separators, dots) that ends just before @p pos.
std::string tokenBefore(const std::string& code, std::size_t pos) {
  std::size_t start = pos;
  while (start > 0 &&
         (isIdentifierChar(code[start - 1]) || code[start - 1] == '.' || code[start - 1] == '\''))
    --start;
  return code.substr(start, pos - start);
}

void blank(std::string& out, std::size_t from, std::size_t to) {
  for (std::size_t k = from; k < to && k < out.size(); ++k) {
    if (out[k] != '\n')
      out[k] = ' ';
  }
}

// Where a quoted literal that opens at @p open (a " or ') ends: after its closing quote, or at
// the end of its line when it is not closed there.
std::size_t quotedEnd(const std::string& code, std::size_t open) {
  const char quote = code[open];
  std::size_t k = open + 1;
  while (k < code.size() && code[k] != quote && code[k] != '\n')
    k += code[k] == '\\' ? 2 : 1;
  return std::min(k < code.size() && code[k] == quote ? k + 1 : k, code.size());
}

// Where a raw string literal whose `"` is at @p open ends (after `)delim"`), or npos when the
// text after the quote is not a raw-string opening.
std::size_t rawStringEnd(const std::string& code, std::size_t open) {
  const std::size_t paren = code.find('(', open + 1);
  if (paren == std::string::npos || paren - open - 1 > 16)
    return std::string::npos;
  const std::string delimiter = code.substr(open + 1, paren - open - 1);
  if (delimiter.find_first_of(" \\)\t\n\"") != std::string::npos)
    return std::string::npos;
  const std::size_t close = code.find(")" + delimiter + "\"", paren + 1);
  return close == std::string::npos ? code.size() : close + delimiter.size() + 2;
}

// The distinct `cu...` names of the code spans of @p text, appended to @p calls.
void addCallNames(const std::string& text, std::vector<std::string>& calls) {
  for (const std::string& span : codeSpans(text)) {
    const std::string name = callNameOf(span);
    if (!name.empty() && std::find(calls.begin(), calls.end(), name) == calls.end())
      calls.push_back(name);
  }
}

// Comments, string and character literals of @p code become spaces.
std::string strip(const std::string& code) {
  std::string out = code;
  std::size_t i = 0;
  while (i < code.size()) {
    const char c = code[i];
    const char next = i + 1 < code.size() ? code[i + 1] : '\0';
    std::size_t end = i + 1;
    if (c == '/' && next == '/') {
      end = i;  // to the end of the line, lines joined by a trailing backslash included
      while (end < code.size() && code[end] != '\n')
        end += code[end] == '\\' && end + 1 < code.size() ? 2 : 1;
    } else if (c == '/' && next == '*') {
      const std::size_t close = code.find("*/", i + 2);
      end = close == std::string::npos ? code.size() : close + 2;
    } else if (c == '"') {
      const std::string prefix = tokenBefore(code, i);
      const bool raw =
          prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR";
      const std::size_t rawEnd = raw ? rawStringEnd(code, i) : std::string::npos;
      end = rawEnd != std::string::npos ? rawEnd : quotedEnd(code, i);
    } else if (c == '\'') {
      const std::string token = tokenBefore(code, i);
      const bool digitSeparator =
          !token.empty() && std::isdigit(static_cast<unsigned char>(token[0])) != 0;
      if (digitSeparator) {
        ++i;
        continue;
      }
      end = quotedEnd(code, i);
    } else {
      ++i;
      continue;
    }
    blank(out, i, end);
    i = end;
  }
  return out;
}

}  // namespace

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

ApiSection parseApiSection(const std::string& readme) {
  ApiSection section;
  std::string folderLines;  // the section without its Via paragraphs
  std::string coreLines;    // its `In the core:` paragraph
  bool inSection = false;
  bool fenced = false;
  enum class Paragraph { kFolder, kCore, kVia } paragraph = Paragraph::kFolder;
  for (std::string line : splitLines(readme)) {
    line = trimRight(line);
    if (!inSection) {
      if (line == kHeading) {
        inSection = true;
        section.found = true;
      }
      continue;
    }
    const std::string text = trimLeft(line);
    if (isFence(text)) {
      fenced = !fenced;
      continue;
    }
    if (fenced)
      continue;
    if (isTopHeading(line))
      break;
    if (startsWith(text, "Via ")) {
      paragraph = Paragraph::kVia;
      section.hasViaCommon = section.hasViaCommon || startsWith(text, "Via Common:");
    } else if (startsWith(text, "In the core:")) {
      paragraph = Paragraph::kCore;
      section.hasCoreParagraph = true;
    } else if (text.empty() || startsWith(text, "Elsewhere in this folder:")) {
      paragraph = Paragraph::kFolder;  // a paragraph ends at a blank line
    }
    if (paragraph != Paragraph::kVia)
      folderLines += line + "\n";
    if (paragraph == Paragraph::kCore)
      coreLines += line + "\n";
  }
  addCallNames(folderLines, section.folderCalls);
  addCallNames(coreLines, section.coreCalls);
  return section;
}

std::string stripCommentsAndStrings(const std::string& code) {
  return strip(code);
}

bool containsCall(const std::string& code, const std::string& name) {
  if (name.empty())
    return false;
  for (std::size_t at = code.find(name); at != std::string::npos; at = code.find(name, at + 1)) {
    if (at > 0 && isIdentifierChar(code[at - 1]))
      continue;
    std::size_t k = at + name.size();
    while (k < code.size() && std::isspace(static_cast<unsigned char>(code[k])) != 0)
      ++k;
    if (k < code.size() && code[k] == '(')
      return true;
  }
  return false;
}

std::vector<std::string> driverCalls(const std::string& code) {
  std::vector<std::string> calls;
  for (std::size_t at = code.find("cu"); at != std::string::npos; at = code.find("cu", at + 1)) {
    if ((at > 0 && isIdentifierChar(code[at - 1])) || at + 2 >= code.size() ||
        std::isupper(static_cast<unsigned char>(code[at + 2])) == 0)
      continue;
    std::size_t end = at + 2;
    while (end < code.size() && isIdentifierChar(code[end]))
      ++end;
    std::size_t next = end;
    while (next < code.size() && std::isspace(static_cast<unsigned char>(code[next])) != 0)
      ++next;
    if (next < code.size() && code[next] == '(')
      calls.push_back(code.substr(at, end - at));
  }
  std::sort(calls.begin(), calls.end());
  calls.erase(std::unique(calls.begin(), calls.end()), calls.end());
  return calls;
}

std::string lessonFileName(const std::string& folderName) {
  std::size_t digits = 0;
  while (digits < folderName.size() &&
         std::isdigit(static_cast<unsigned char>(folderName[digits])) != 0)
    ++digits;
  const bool numbered = digits > 0 && digits < folderName.size() && folderName[digits] == '_';
  return (numbered ? folderName.substr(digits + 1) : folderName) + ".cpp";
}

Report checkCalls(const std::string& folderArgument) {
  Report report;
  const std::string folder = normalizedFolder(folderArgument).string();
  const fs::path readmePath = fs::path(folder) / "README.md";
  const std::string readme = readmePath.string();
  std::string text;
  if (!readReadme(folder, text, report.problems))
    return report;
  const ApiSection section = parseApiSection(text);
  if (!section.found) {
    report.problems.push_back(readme + ": has no \"" + kHeading + "\" section");
    return report;
  }
  if (!section.hasViaCommon) {
    report.problems.push_back(readme + ": its \"" + kHeading +
                              "\" section has no line starting with \"Via Common:\" (the calls "
                              "Common makes for the sample are listed there)");
  }

  if (section.folderCalls.empty()) {
    report.problems.push_back(readme + ": its \"" + kHeading +
                              "\" section lists no call of the folder itself (outside the "
                              "\"Via ...\" paragraphs): nothing to check");
  }
  const std::vector<SourceFile> files =
      readSources(folder, {".cpp", ".hpp", ".cu"}, report.problems);
  if (files.empty()) {
    report.problems.push_back(folder + ": holds no *.cpp, *.hpp or *.cu file: no code to check "
                              "the call list against");
  }
  std::string code;
  for (const SourceFile& file : files)
    code += stripCommentsAndStrings(file.text) + "\n";
  for (const std::string& call : section.folderCalls) {
    if (!containsCall(code, call)) {
      report.problems.push_back(readme + ": `" + call +
                                "` is listed as a call of the folder, but no *.cpp, *.hpp or "
                                "*.cu file in " +
                                folder +
                                " calls it outside comments and strings (write the call "
                                "there, or list it on a \"Via ...\" line)");
    }
  }
  for (const std::string& call : driverCalls(code)) {
    if (std::find(section.folderCalls.begin(), section.folderCalls.end(), call) ==
        section.folderCalls.end()) {
      report.problems.push_back(folder + " calls `" + call + "`, but " + readme +
                                " does not list " +
                                "it among the folder's calls (outside the \"Via ...\" paragraphs)");
    }
  }
  report.summary = readme + ": " + std::to_string(section.folderCalls.size()) +
                   " calls listed for the folder, checked against " + std::to_string(files.size()) +
                   " source files of " + folder;
  return report;
}

const std::vector<std::string>& checkNames() {
  static const std::vector<std::string> names = {"calls", "core", "page", "steps"};
  return names;
}

Report runCheck(const std::string& check, const std::string& folder) {
  using Check = Report (*)(const std::string&);
  static const std::vector<std::pair<std::string, Check>> checks = {
      {"calls", checkCalls}, {"core", checkCore}, {"page", checkPage}, {"steps", checkSteps}};
  Report report;
  const auto named = std::find_if(checks.begin(), checks.end(),
                                  [&](const auto& entry) { return entry.first == check; });
  if (named == checks.end()) {
    report.problems.push_back("unknown check \"" + check + "\"");
    return report;
  }
  // A check that finds nothing to check proves nothing: a missing or empty folder fails.
  std::error_code error;
  const fs::path path = normalizedFolder(folder);
  if (!fs::is_directory(path, error)) {
    report.problems.push_back(path.string() + ": not a folder (a sample folder samples/NN_name " +
                              "was expected): nothing to check");
    return report;
  }
  if (fs::directory_iterator(path, error) == fs::directory_iterator()) {
    report.problems.push_back(path.string() + ": an empty folder: nothing to check");
    return report;
  }
  return named->second(folder);
}

}  // namespace memsamples::lesson_shape
