// The `breathe`, `helpers` and `folder` checks of the lesson shape: how the lesson's files
// breathe, which project functions the lesson calls, and the size of the folder; see
// lesson_shape.hpp.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>

#include "lesson_shape.hpp"
#include "lesson_shape_internal.hpp"

namespace memsamples::lesson_shape {
namespace {

using namespace internal;

// The words of @p text, split at spaces.
std::set<std::string> wordSet(const std::string& text) {
  std::set<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;)
    words.insert(word);
  return words;
}

const std::set<std::string>& keywords() {
  static const std::set<std::string> words = wordSet(
      "alignas alignof and asm auto bool break case catch char class co_await co_return co_yield "
      "const const_cast consteval constexpr constinit continue decltype default delete do double "
      "dynamic_cast else enum explicit export extern false float for friend goto if inline int "
      "long mutable namespace new noexcept not nullptr operator or private protected public "
      "register reinterpret_cast requires return short signed sizeof static static_assert "
      "static_cast struct switch template this thread_local throw true try typedef typeid "
      "typename union unsigned using virtual void volatile while xor");
  return words;
}

// Words after which a name starts an expression (so `return f(x)` is a call, while
// `Verdict f(x)` declares f).
const std::set<std::string>& expressionKeywords() {
  static const std::set<std::string> words = wordSet(
      "return co_return co_yield co_await throw else case do new delete and or not xor "
      "sizeof goto");
  return words;
}

bool isDriverName(const std::string& name) {
  return name.size() > 2 && name[0] == 'c' && name[1] == 'u' &&
         std::isupper(static_cast<unsigned char>(name[2])) != 0;
}

bool startsLowerCase(const std::string& name) {
  return !name.empty() && std::islower(static_cast<unsigned char>(name[0])) != 0;
}

bool isIdentifierStart(const std::string& code, std::size_t i) {
  const char c = code[i];
  return (std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_') &&
         (i == 0 || !isIdentifierChar(code[i - 1]));
}

std::size_t identifierEnd(const std::string& code, std::size_t i) {
  while (i < code.size() && isIdentifierChar(code[i]))
    ++i;
  return i;
}

std::size_t skipSpaces(const std::string& code, std::size_t i) {
  while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i])) != 0)
    ++i;
  return i;
}

// The position after the white space that ends just before @p i, going back.
std::size_t skipSpacesBack(const std::string& code, std::size_t i) {
  while (i > 0 && std::isspace(static_cast<unsigned char>(code[i - 1])) != 0)
    --i;
  return i;
}

// The identifier that ends at @p end (possibly empty), going back: its start.
std::size_t identifierStartBack(const std::string& code, std::size_t end) {
  while (end > 0 && isIdentifierChar(code[end - 1]))
    --end;
  return end;
}

// True when @p head holds @p word as a whole word.
bool hasWord(const std::string& head, const std::string& word) {
  for (std::size_t at = head.find(word); at != std::string::npos; at = head.find(word, at + 1)) {
    const bool before = at == 0 || !isIdentifierChar(head[at - 1]);
    const std::size_t end = at + word.size();
    if (before && (end >= head.size() || !isIdentifierChar(head[end])))
      return true;
  }
  return false;
}

// Preprocessor lines (and their continuation lines) become spaces.
std::string withoutPreprocessor(const std::string& code) {
  std::string out = code;
  bool continued = false;
  std::size_t start = 0;
  while (start < out.size()) {
    std::size_t end = out.find('\n', start);
    if (end == std::string::npos)
      end = out.size();
    const std::string line = out.substr(start, end - start);
    const bool directive = continued || startsWith(trimLeft(line), "#");
    if (directive) {
      continued = !trimRight(line).empty() && trimRight(line).back() == '\\';
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(start),
                out.begin() + static_cast<std::ptrdiff_t>(end), ' ');
    }
    start = end + 1;
  }
  return out;
}

// After a template argument list that opens at @p open (`<`): the position after its `>`, or
// npos when it is not one (a `;`, brace, `&&`, `||` or unbalanced `)` comes first).
std::size_t templateArgumentsEnd(const std::string& code, std::size_t open) {
  int depth = 0;
  int parens = 0;
  for (std::size_t k = open; k < code.size() && k < open + 200; ++k) {
    const char c = code[k];
    if (c == '<')
      ++depth;
    else if (c == '>' && --depth == 0)
      return k + 1;
    else if (c == '(')
      ++parens;
    else if (c == ')' && --parens < 0)
      return std::string::npos;
    else if (c == ';' || c == '{' || c == '}' || code.compare(k, 2, "&&") == 0 ||
             code.compare(k, 2, "||") == 0)
      return std::string::npos;
  }
  return std::string::npos;
}

// Going back from the `>` just before @p end: the position of its `<`, or npos.
std::size_t templateArgumentsStartBack(const std::string& code, std::size_t end) {
  int depth = 0;
  for (std::size_t k = end; k > 0 && end - k < 200; --k) {
    const char c = code[k - 1];
    if (c == '>')
      ++depth;
    else if (c == '<' && --depth == 0)
      return k - 1;
    else if (c == ';' || c == '{' || c == '}')
      return std::string::npos;
  }
  return std::string::npos;
}

std::string percent(std::size_t part, std::size_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%",
                whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

// The functions and namespaces that the .hpp files under @p dir declare (recursively when
// @p recursive); the number of headers read is returned.
std::size_t addHeaderNames(const fs::path& dir, bool recursive, ProjectNames& names) {
  std::vector<fs::path> headers;
  std::error_code error;
  if (recursive) {
    for (const auto& entry : fs::recursive_directory_iterator(dir, error)) {
      if (entry.is_regular_file() && entry.path().extension() == ".hpp")
        headers.push_back(entry.path());
    }
  } else {
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      if (entry.is_regular_file() && entry.path().extension() == ".hpp")
        headers.push_back(entry.path());
    }
  }
  for (const fs::path& header : headers) {
    bool ok = false;
    const std::string text = readFile(header, ok);
    const std::set<std::string> functions = declaredFunctions(text);
    names.functions.insert(functions.begin(), functions.end());
    if (!recursive) {  // the folder's own namespaces and types; Common's are memsamples
      const std::set<std::string> spaces = declaredNamespaces(text);
      names.namespaces.insert(spaces.begin(), spaces.end());
      static const std::regex typePattern(R"(\b(?:class|struct)\s+([A-Z]\w*))");
      const std::string code = stripCommentsAndStrings(text);
      for (std::sregex_iterator it(code.begin(), code.end(), typePattern), end; it != end; ++it)
        names.types.insert((*it)[1].str());
    }
  }
  return headers.size();
}

}  // namespace

// ------------------------------------------------------------------ breathe

std::size_t displayWidth(const std::string& line) {
  std::size_t width = 0;
  for (const char c : line)
    width += (static_cast<unsigned char>(c) & 0xC0) == 0x80 ? 0 : 1;
  return width;
}

Breath measureBreath(const std::string& code) {
  Breath breath;
  const std::vector<std::string> lines = splitLines(code);
  const std::vector<std::string> stripped = splitLines(stripComments(code));
  breath.lines = lines.size();
  for (std::size_t k = 0; k < lines.size(); ++k) {
    breath.longLines += displayWidth(lines[k]) >= kLongLineWidth ? 1 : 0;
    breath.blankLines += trim(lines[k]).empty() ? 1 : 0;
    breath.codeLines += k < stripped.size() && !trim(stripped[k]).empty() ? 1 : 0;
  }
  return breath;
}

std::vector<std::string> breathProblems(const std::string& name, const Breath& breath) {
  std::vector<std::string> problems;
  if (breath.longLines * 100 > kLongLinePercent * breath.lines) {
    problems.push_back(name + ": " + std::to_string(breath.longLines) + " of " +
                       std::to_string(breath.lines) + " lines are " +
                       std::to_string(kLongLineWidth) + " characters or longer (" +
                       percent(breath.longLines, breath.lines) + "), over " +
                       std::to_string(kLongLinePercent) + " % (split long statements)");
  }
  if (breath.blankLines * 100 < kBlankLinePercent * breath.lines) {
    problems.push_back(name + ": " + std::to_string(breath.blankLines) + " of " +
                       std::to_string(breath.lines) + " lines are blank (" +
                       percent(breath.blankLines, breath.lines) + "), under " +
                       std::to_string(kBlankLinePercent) + " % (a blank line between steps)");
  }
  if (breath.codeLines > kCodeLineLimit) {
    problems.push_back(name + ": " + std::to_string(breath.codeLines) +
                       " code lines (neither blank nor only comment), over the limit of " +
                       std::to_string(kCodeLineLimit) + " (comments and blank lines are free)");
  }
  return problems;
}

// ------------------------------------------------------------------ helpers

std::set<std::string> declaredFunctions(const std::string& text) {
  enum class Scope { kNamespace, kExtern, kOther };
  const std::string code = withoutPreprocessor(stripCommentsAndStrings(text));
  std::set<std::string> names;
  std::vector<Scope> scopes;
  std::size_t headStart = 0;  // where the current declaration began
  int parens = 0;
  std::size_t i = 0;
  while (i < code.size()) {
    const char c = code[i];
    if (c == '{' || c == '}' || c == ';') {
      if (c == '{') {
        const std::string head = code.substr(headStart, i - headStart);
        scopes.push_back(hasWord(head, "namespace") ? Scope::kNamespace
                         : hasWord(head, "extern") && head.find('(') == std::string::npos
                             ? Scope::kExtern
                             : Scope::kOther);
      } else if (c == '}' && !scopes.empty()) {
        scopes.pop_back();
      }
      headStart = ++i;
      parens = 0;
      continue;
    }
    if (c == '(' || c == ')') {
      parens += c == '(' ? 1 : -1;
      ++i;
      continue;
    }
    if (!isIdentifierStart(code, i)) {
      ++i;
      continue;
    }
    const std::size_t end = identifierEnd(code, i);
    const std::string name = code.substr(i, end - i);
    const bool atNamespaceScope =
        std::all_of(scopes.begin(), scopes.end(), [](Scope s) { return s == Scope::kNamespace; });
    const std::size_t after = skipSpaces(code, end);
    if (parens == 0 && atNamespaceScope && after < code.size() && code[after] == '(' &&
        startsLowerCase(name) && keywords().count(name) == 0 && !isDriverName(name)) {
      const std::string head = code.substr(headStart, i - headStart);
      const std::size_t before = skipSpacesBack(code, i);
      const char previous = before > headStart ? code[before - 1] : '\0';
      bool typeBefore = previous == '>' || previous == '*' || previous == '&';
      if (isIdentifierChar(previous)) {
        const std::size_t start = identifierStartBack(code, before);
        typeBefore = expressionKeywords().count(code.substr(start, before - start)) == 0;
      }
      if (typeBefore && head.find('=') == std::string::npos && !hasWord(head, "extern") &&
          !hasWord(head, "typedef") && !hasWord(head, "using"))
        names.insert(name);
    }
    i = end;
  }
  return names;
}

std::set<std::string> declaredNamespaces(const std::string& text) {
  const std::string code = stripCommentsAndStrings(text);
  std::set<std::string> spaces;
  static const std::regex opening(R"(\bnamespace\s+([A-Za-z_][\w:\s]*?)\s*\{)");
  for (std::sregex_iterator it(code.begin(), code.end(), opening), end; it != end; ++it) {
    static const std::regex part(R"([A-Za-z_]\w*)");
    const std::string path = (*it)[1].str();
    for (std::sregex_iterator p(path.begin(), path.end(), part), pend; p != pend; ++p) {
      const std::string name = p->str();
      if (name != "inline" && name != "std")
        spaces.insert(name);
    }
  }
  return spaces;
}

std::vector<ProjectCall> projectCalls(const std::string& lesson, const ProjectNames& names) {
  const std::string code = stripCommentsAndStrings(lesson);
  std::set<std::string> spaces = names.namespaces;
  spaces.insert({"ms", "memsamples"});
  // Namespace aliases of project namespaces (`namespace vmm = memsamples::vmm;`), to a fixpoint.
  static const std::regex aliasPattern(R"(\bnamespace\s+([A-Za-z_]\w*)\s*=\s*(?:::\s*)?(\w+))");
  std::vector<std::pair<std::string, std::string>> aliases;
  for (std::sregex_iterator it(code.begin(), code.end(), aliasPattern), end; it != end; ++it)
    aliases.emplace_back((*it)[1].str(), (*it)[2].str());
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [alias, root] : aliases) {
      if (spaces.count(root) != 0 && spaces.insert(alias).second)
        grew = true;
    }
  }
  const std::set<std::string> own = declaredFunctions(lesson);
  // Variables of the folder's own types (`ManagedRun run(...)`, `const Plan& plan = ...`).
  std::map<std::string, std::string> objects;
  static const std::regex variablePattern(
      R"(\b([A-Z]\w*)\s*(?:<[^;(){}]*>)?\s*[&*]?\s*\b([a-z_]\w*)\s*[({=;,)])");
  for (std::sregex_iterator it(code.begin(), code.end(), variablePattern), end; it != end; ++it) {
    if (names.types.count((*it)[1].str()) != 0)
      objects.emplace((*it)[2].str(), (*it)[1].str());
  }
  static const std::set<std::string> ownerMembers = {"get", "out", "release", "reset"};

  std::vector<ProjectCall> calls;
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (!isIdentifierStart(code, i))
      continue;
    const std::size_t end = identifierEnd(code, i);
    const std::string name = code.substr(i, end - i);
    std::size_t next = skipSpaces(code, end);
    if (next < code.size() && code[next] == '<') {
      const std::size_t close = templateArgumentsEnd(code, next);
      next = close == std::string::npos ? next : skipSpaces(code, close);
    }
    const bool call = next < code.size() && code[next] == '(';
    if (!call || !startsLowerCase(name) || keywords().count(name) != 0 || name == "check") {
      i = end - 1;
      continue;
    }
    // The qualifiers written before the name: a::b<T>::name( has the root a.
    std::size_t chainStart = i;
    std::string root;
    bool qualified = false;
    for (;;) {
      const std::size_t p = skipSpacesBack(code, chainStart);
      if (p < 2 || code.compare(p - 2, 2, "::") != 0)
        break;
      qualified = true;
      std::size_t q = skipSpacesBack(code, p - 2);
      if (q > 0 && code[q - 1] == '>') {
        const std::size_t open = templateArgumentsStartBack(code, q);
        if (open == std::string::npos)
          break;
        q = skipSpacesBack(code, open);
      }
      const std::size_t s = identifierStartBack(code, q);
      root = code.substr(s, q - s);
      chainStart = root.empty() ? p - 2 : s;
      if (root.empty())
        break;  // ::name, the global namespace
    }
    const std::size_t before = skipSpacesBack(code, chainStart);
    const bool member = (before > 0 && code[before - 1] == '.') ||
                        (before > 1 && code.compare(before - 2, 2, "->") == 0);
    bool declaration = false;
    if (before > 0 && isIdentifierChar(code[before - 1])) {
      const std::size_t start = identifierStartBack(code, before);
      declaration = expressionKeywords().count(code.substr(start, before - start)) == 0;
    }
    if (member && ownerMembers.count(name) == 0) {
      const std::size_t dot = code[before - 1] == '.' ? before - 1 : before - 2;
      const std::size_t objectEnd = skipSpacesBack(code, dot);
      const std::size_t objectStart = identifierStartBack(code, objectEnd);
      const auto object = objects.find(code.substr(objectStart, objectEnd - objectStart));
      const std::string qualified = object == objects.end() ? "" : object->second + "::" + name;
      const bool seen = std::any_of(calls.begin(), calls.end(),
                                    [&](const ProjectCall& c) { return c.name == qualified; });
      if (!qualified.empty() && !seen)
        calls.push_back({qualified, object->first + "." + name});
      i = end - 1;
      continue;
    }
    const bool counted =
        !member && !declaration &&
        (qualified && !root.empty() ? spaces.count(root) != 0
                                    : names.functions.count(name) != 0 && own.count(name) == 0);
    const bool seen = std::any_of(calls.begin(), calls.end(),
                                  [&](const ProjectCall& c) { return c.name == name; });
    if (counted && !seen) {
      std::string written;
      for (std::size_t k = chainStart; k < end; ++k) {
        if (std::isspace(static_cast<unsigned char>(code[k])) == 0)
          written += code[k];
      }
      calls.push_back({name, written});
    }
    i = end - 1;
  }
  return calls;
}

// ------------------------------------------------------------------ the checks

Report checkBreathe(const std::string& folderArgument) {
  Report report;
  const fs::path folder = normalizedFolder(folderArgument);
  const std::string lessonName = lessonFileName(folder.filename().string());
  std::vector<std::string> unread;
  const std::vector<SourceFile> files = readSources(folder, {".cpp", ".hpp"}, unread);
  report.problems.insert(report.problems.end(), unread.begin(), unread.end());
  std::vector<std::string> names = {lessonName};
  for (const CoreRegion& region : scanCoreRegions(files).regions) {
    if (std::find(names.begin(), names.end(), region.file) == names.end())
      names.push_back(region.file);
  }
  for (const std::string& name : names) {
    const auto file = std::find_if(files.begin(), files.end(),
                                   [&](const SourceFile& f) { return f.name == name; });
    const std::string path = (folder / name).string();
    if (file == files.end()) {
      report.problems.push_back(path + ": the lesson file cannot be read");
      continue;
    }
    const Breath breath = measureBreath(file->text);
    for (const std::string& problem : breathProblems(path, breath))
      report.problems.push_back(problem);
    report.summary +=
        (report.summary.empty() ? "" : "\n") + path + ": " + std::to_string(breath.lines) +
        " lines; " + std::to_string(breath.longLines) + " of " + std::to_string(kLongLineWidth) +
        "+ characters (" + percent(breath.longLines, breath.lines) + ", at most " +
        std::to_string(kLongLinePercent) + " %); " + std::to_string(breath.blankLines) +
        " blank (" + percent(breath.blankLines, breath.lines) + ", at least " +
        std::to_string(kBlankLinePercent) + " %); " + std::to_string(breath.codeLines) +
        " code lines (at most " + std::to_string(kCodeLineLimit) + ")";
  }
  return report;
}

Report checkHelpers(const std::string& folderArgument) {
  Report report;
  const fs::path folder = normalizedFolder(folderArgument);
  const fs::path lessonPath = folder / lessonFileName(folder.filename().string());
  bool ok = false;
  const std::string lesson = readFile(lessonPath, ok);
  if (!ok) {
    report.problems.push_back(lessonPath.string() + ": the lesson file cannot be read");
    return report;
  }
  ProjectNames names;
  const std::size_t folderHeaders = addHeaderNames(folder, false, names);
  const fs::path common = folder.parent_path().parent_path() / "Common";
  const std::size_t commonHeaders = addHeaderNames(common, true, names);

  const std::vector<ProjectCall> calls = projectCalls(lesson, names);
  std::string list;
  for (const ProjectCall& call : calls)
    list += (list.empty() ? "" : ", ") + call.written;
  if (calls.size() > kHelperLimit) {
    report.problems.push_back(lessonPath.string() + ": calls " + std::to_string(calls.size()) +
                              " distinct project functions, over the limit of " +
                              std::to_string(kHelperLimit) + ": " + list +
                              " (make sizing, probing and reporting one call each)");
  }
  report.summary = lessonPath.string() + ": " + std::to_string(calls.size()) +
                   " distinct project functions called (at most " + std::to_string(kHelperLimit) +
                   "): " + (list.empty() ? "none" : list) +
                   "\n(counted: calls qualified by ms::, memsamples::, the folder's namespaces or "
                   "an alias of them, and unqualified calls of functions declared in the "
                   "folder's " +
                   std::to_string(folderHeaders) + " .hpp files or in the " +
                   std::to_string(commonHeaders) + " headers of " + common.string() +
                   ", and member calls on variables of the folder's own classes; not counted: check, an "
                   "owner's get/out/release/reset, std:: and the lesson's own functions)";
  return report;
}

Report checkFolder(const std::string& folderArgument) {
  Report report;
  const fs::path folder = normalizedFolder(folderArgument);
  const std::string name = folder.filename().string();
  const std::size_t limit = folderCodeLineLimit(name);
  const std::vector<SourceFile> files = readSources(folder, {".cpp", ".hpp"}, report.problems);
  std::size_t total = 0;
  std::string each;
  for (const SourceFile& file : files) {
    // Code lines only: comments and blank lines never count against an explanation.
    const std::size_t lines = measureBreath(file.text).codeLines;
    total += lines;
    each += (each.empty() ? "" : ", ") + file.name + " " + std::to_string(lines);
  }
  if (total > limit) {
    report.problems.push_back(folder.string() + ": its .cpp and .hpp files hold " +
                              std::to_string(total) + " code lines together, over the limit of " +
                              std::to_string(limit) + " (" + each + ")");
  }
  report.summary = folder.string() + ": " + std::to_string(total) + " code lines in " +
                   std::to_string(files.size()) + " .cpp/.hpp files (at most " +
                   std::to_string(limit) + "): " + each;
  return report;
}

std::size_t folderCodeLineLimit(const std::string& folderName) {
  // 07 is two programs, a parent and its workers, with the channel between them.
  return folderName == "07_memMapIPC" ? kTwoProcessFolderLimit : kFolderLineLimit;
}

}  // namespace memsamples::lesson_shape
