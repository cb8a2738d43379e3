// The lesson-shape rules of one sample folder (see the root README, "How a sample reads"):
// - calls:   README "## Demonstrated API calls" lists the driver calls written in the folder
//            itself (plain lines and the paragraphs `In the core:` and `Elsewhere in this
//            folder:`), and in paragraphs starting `Via Common:` (and maybe `Via NN_name`) the
//            calls made elsewhere; every call listed outside the Via paragraphs must appear as a
//            call in the folder's code, and every driver call in the folder's code must be listed;
// - lines:   the lesson file samples/NN_name/name.cpp stays within its line limit (the samples
//            not yet in the core shape);
// - core:    one `//! [core]` region (and maybe one `//! [core-b]`) of at most 90 lines, holding
//            the README's `In the core:` calls and the release of everything it creates, copied
//            exactly into the README after a `<!-- core: FILE -->` line;
// - readme:  the README opens with the title, a short what-and-why, `## The core`, `## Run it`,
//            `## Flow`, later `## Details`, and its first code block within 40 lines;
// - breathe: the lesson file and every file holding a core: few long lines, enough blank lines,
//            at most 250 code lines;
// - helpers: the lesson file calls at most 12 distinct functions of the project;
// - steps:   the lesson's `// N. ` step comments, its `@file` list and the README's `## Flow`
//            list number the same steps 1..N;
// - folder:  the folder's .cpp and .hpp files hold at most 1,200 code lines together (07: 1,500).
// Every function here is pure text processing or plain file reading, so it is unit tested.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace memsamples::lesson_shape {

// ------------------------------------------------------------------ text

/// @p text split at newlines, without them and without a trailing carriage return; a last line
/// without a newline counts, an empty text has no lines.
std::vector<std::string> splitLines(const std::string& text);

/// The number of lines of @p text (a last line without a newline counts).
std::size_t countLines(const std::string& text);

/// @p code with every comment and every string and character literal (raw strings included)
/// replaced by spaces; newlines are kept, so line numbers do not change.
std::string stripCommentsAndStrings(const std::string& code);

/// @p code with every comment replaced by spaces; string and character literals stay.
std::string stripComments(const std::string& code);

/// True when @p code contains @p name as a call: not preceded by an identifier character, and
/// followed by optional whitespace and `(` (so `cuMemAlloc` is not found in `cuMemAllocManaged(`).
bool containsCall(const std::string& code, const std::string& name);

/// Every distinct driver API name (`cu` then an upper-case letter) that @p code calls, sorted:
/// a name not preceded by an identifier character and followed by optional whitespace and `(`.
/// Pass code through stripCommentsAndStrings() first.
std::vector<std::string> driverCalls(const std::string& code);

/// The lesson file of a sample folder: `01_vectorAddDrv` -> `vectorAddDrv.cpp`.
std::string lessonFileName(const std::string& folderName);

// ------------------------------------------------------------------ README call list

/// What the "## Demonstrated API calls" section of a README says.
struct ApiSection {
  bool found = false;                    ///< The heading exists.
  bool hasViaCommon = false;             ///< A line of the section starts with `Via Common:`.
  bool hasCoreParagraph = false;         ///< A line of the section starts with `In the core:`.
  std::vector<std::string> folderCalls;  ///< Backticked `cu...` names outside Via paragraphs.
  std::vector<std::string> coreCalls;    ///< Those of the `In the core:` paragraph.
};

/// Parses @p readme (the whole file). The section runs from its heading to the next heading of
/// level 1 or 2; fenced code blocks inside it are skipped; a paragraph runs from its first line
/// to the next blank line. Paragraphs starting `Via ` list calls made elsewhere; every other line
/// (`In the core:`, `Elsewhere in this folder:`, or plain) lists calls of the folder.
ApiSection parseApiSection(const std::string& readme);

// ------------------------------------------------------------------ the core

/// One core region: the lines between two marker lines `//! [core]` (or `//! [core-b]`).
struct CoreRegion {
  std::string tag;                 ///< "core" or "core-b".
  std::string file;                ///< The file that holds it, relative to the sample folder.
  std::size_t openLine = 0;        ///< 1-based line of the opening marker.
  std::size_t closeLine = 0;       ///< 1-based line of the closing marker.
  std::vector<std::string> lines;  ///< The lines between the markers.
};

/// One source file of a sample folder: its name relative to the folder, and its text.
struct SourceFile {
  std::string name;
  std::string text;
};

/// The core regions of a folder's sources and what is wrong with their markers.
struct CoreScan {
  std::vector<CoreRegion> regions;    ///< In file order; `core` before `core-b` within a file.
  std::vector<std::string> problems;  ///< Unclosed, split, repeated, overlong, overlapping...
};

/// The largest number of lines between the two markers of a core region.
constexpr std::size_t kCoreLineLimit = 90;

/// Finds the core regions of @p files. A marker line is a line whose text, without leading and
/// trailing white space, is exactly `//! [core]` or `//! [core-b]`. Each tag has exactly two
/// marker lines in the whole folder, both in one file, with at most kCoreLineLimit lines between
/// them; the two regions do not overlap; a `core-b` needs a `core`; another line of a file with
/// markers that contains `[core]` or `[core-b]` is a problem (Doxygen's \snippet would take it
/// for a marker).
CoreScan scanCoreRegions(const std::vector<SourceFile>& files);

/// A creating driver (or system) call and the call that releases what it created.
struct CreateRelease {
  const char* create;
  const char* release;
};

/// The one table of creating calls and their releases that the `core` check uses.
const std::vector<CreateRelease>& teardownTable();

/// The rows of teardownTable() whose creating call @p code calls and whose release it does not.
/// Pass code through stripCommentsAndStrings() first.
std::vector<CreateRelease> missingReleases(const std::string& code);

/// A copy of a core region in a README: a line `<!-- core: FILE -->` (or `<!-- core-b: FILE -->`)
/// followed directly by a fenced code block.
struct CoreCopy {
  std::string tag;                 ///< "core" or "core-b".
  std::string file;                ///< FILE, relative to the sample folder.
  std::size_t markerLine = 0;      ///< 1-based README line of the `<!-- ... -->` line.
  bool inCoreSection = false;      ///< It stands in the `## The core` section.
  std::vector<std::string> lines;  ///< The lines of the code block, fences excluded.
};

/// The core copies of a README and what is wrong with their form.
struct CoreCopies {
  std::vector<CoreCopy> copies;
  std::vector<std::string> problems;  ///< Malformed marker lines, no block after one, unclosed.
};

/// Finds the core copies of @p readme. The marker line is, trailing spaces aside, exactly
/// `<!-- core: FILE -->` or `<!-- core-b: FILE -->` from the first column; the next line opens a
/// fence (```), whose lines up to the closing fence are the copy. A line that starts
/// `<!-- core` but does not have that form is a problem.
CoreCopies parseCoreCopies(const std::string& readme);

/// "" when @p copy holds exactly the lines of @p region; otherwise a sentence naming the first
/// line where they differ, with both versions of it.
std::string compareCoreCopy(const CoreRegion& region, const CoreCopy& copy);

// ------------------------------------------------------------------ README layout and steps

/// The three headings a README opens with, in this order, after its title and what-and-why.
inline const std::vector<std::string>& openingHeadings() {
  static const std::vector<std::string> headings = {"## The core", "## Run it", "## Flow"};
  return headings;
}

/// The limits of a README's opening.
constexpr std::size_t kIntroLineLimit = 15;       ///< Non-blank lines before the first `## `.
constexpr std::size_t kFirstCodeBlockLimit = 40;  ///< The line the first ``` must open by.

/// What is wrong with the layout of @p readme of the sample folder @p folderName (one sentence
/// each, with README line numbers). It starts `# <folderName> ` (the title); at most
/// kIntroLineLimit non-blank lines stand between the title and the first `## ` heading; the first
/// three `## ` headings are openingHeadings(); a `## Details` heading follows them, before
/// `## Demonstrated API calls`, which exists; the first fenced code block opens within the first
/// kFirstCodeBlockLimit lines. Headings inside fenced blocks do not count.
std::vector<std::string> readmeLayoutProblems(const std::string& readme,
                                              const std::string& folderName);

/// The numbers of the lesson's step comments in order: lines whose text, without leading white
/// space, starts with `// `, a number and `. `.
std::vector<int> lessonSteps(const std::string& lesson);

/// The first `/** ... */` block of a lesson: whether there is one, whether it holds `@file`, and
/// the numbers of its top-level numbered list (lines whose text, without leading white space,
/// starts with `* `, a number and `. `; deeper items have more spaces and do not count).
struct FileHeader {
  bool found = false;
  bool hasFileCommand = false;
  std::vector<int> steps;
};
FileHeader fileHeaderSteps(const std::string& lesson);

/// The numbers of the top-level numbered list of the README's `## Flow` section: lines starting
/// (first column) with a number and `. `, up to the next `#`/`##` heading; fenced code skipped.
/// found is false when there is no `## Flow` heading.
struct FlowSteps {
  bool found = false;
  std::vector<int> steps;
};
FlowSteps flowSteps(const std::string& readme);

/// "" when @p steps is 1, 2, ..., N (N at least 1); otherwise what is wrong, e.g.
/// "goes 1, 2, 4 (each number once, 1 to N in order)".
std::string stepOrderProblem(const std::vector<int>& steps);

// ------------------------------------------------------------------ code that breathes

/// The limits of a file of the lesson (the lesson file and every file holding a core).
constexpr std::size_t kLongLineWidth = 90;     ///< A line of this many characters or more is long.
constexpr std::size_t kLongLinePercent = 5;    ///< At most this share of the lines is long.
constexpr std::size_t kBlankLinePercent = 10;  ///< At least this share of the lines is blank.
constexpr std::size_t kCodeLineLimit = 250;    ///< Lines that are neither blank nor only comment.

/// The characters of @p line: UTF-8 continuation bytes do not count (`—` is one character).
std::size_t displayWidth(const std::string& line);

/// How a file breathes.
struct Breath {
  std::size_t lines = 0;       ///< All lines.
  std::size_t longLines = 0;   ///< Lines of kLongLineWidth characters or more.
  std::size_t blankLines = 0;  ///< Lines of white space only.
  std::size_t codeLines = 0;   ///< Lines with something left once comments are blanked.
};
Breath measureBreath(const std::string& code);

/// The problems of @p breath of the file @p name against the limits above (none: it breathes).
std::vector<std::string> breathProblems(const std::string& name, const Breath& breath);

// ------------------------------------------------------------------ few helpers

/// The most distinct project functions a lesson file may call.
constexpr std::size_t kHelperLimit = 12;

/// The functions @p code declares or defines at namespace scope (not in classes, not inside
/// `extern "C"`): a name starting with a lower-case letter, followed by `(`, preceded by its
/// return type (a name, `>`, `*` or `&`), with no `=` before it in its declaration; driver
/// names (`cu` + upper case) and keywords are left out.
std::set<std::string> declaredFunctions(const std::string& code);

/// The namespaces @p code opens (`namespace a::b {` gives a and b; `std` is left out).
std::set<std::string> declaredNamespaces(const std::string& code);

/// What counts as the project when a lesson's calls are counted.
struct ProjectNames {
  std::set<std::string> namespaces;  ///< ms, memsamples and the folder headers' namespaces.
  std::set<std::string> functions;   ///< Declared by the folder's .hpp files and Common's.
  std::set<std::string> types;       ///< Classes and structs the folder's .hpp files declare.
};

/// One counted function: its name and how the lesson first writes it (`ms::selectDevice`).
struct ProjectCall {
  std::string name;
  std::string written;
};

/// The distinct project functions @p lesson calls, in order of first call. A call is a name
/// starting with a lower-case letter, followed by optional template arguments, spaces and `(`,
/// not preceded by `.` or `->` (member calls), and not a declaration (a name right after another
/// name). It counts when it is qualified by a project namespace (the leftmost qualifier is in
/// @p names, or a namespace alias the lesson declares for one, e.g.
/// `namespace vmm = memsamples::vmm;`), or when it is unqualified, declared in
/// @p names.functions and not declared by the lesson itself. `check` never counts; `std::` and
/// other non-project qualifiers never do. A member call counts too when its object is a variable
/// the lesson declares with one of @p names.types (the folder's own classes: a run object's
/// members are project functions as much as free ones are), as `Type::name`, except an owner's
/// get(), out(), release() and reset().
std::vector<ProjectCall> projectCalls(const std::string& lesson, const ProjectNames& names);

// ------------------------------------------------------------------ the folder

/// The most code lines (neither blank nor comment) the .cpp and .hpp files of a sample folder
/// hold together.
constexpr std::size_t kFolderLineLimit = 1200;
/// The same for a sample of two programs (07_memMapIPC: a parent and its workers).
constexpr std::size_t kTwoProcessFolderLimit = 1500;
/// kTwoProcessFolderLimit for 07_memMapIPC, kFolderLineLimit for every other folder.
std::size_t folderCodeLineLimit(const std::string& folderName);

/// The line limit of a sample's lesson file, its tutorial header included (the `lines` check of
/// the samples not yet in the core shape).
std::size_t lessonLineLimit(const std::string& folderName);

// ------------------------------------------------------------------ the checks

/// The outcome of one check: what was checked, and one line per problem (none: it passed).
struct Report {
  std::string summary;
  std::vector<std::string> problems;
};

/// The names of the checks, as `lesson_shape_check <check> <folder>` takes them.
const std::vector<std::string>& checkNames();

/// Runs the check called @p check (one of checkNames()) on @p folder; an unknown name is a
/// problem.
Report runCheck(const std::string& check, const std::string& folder);

/// Checks the README's call list of the sample folder @p folder against the folder's code.
Report checkCalls(const std::string& folder);

/// Checks the length of @p folder's lesson file against lessonLineLimit().
Report checkLines(const std::string& folder);

/// Checks the core regions of @p folder, their calls and teardown, and their README copies.
Report checkCore(const std::string& folder);

/// Checks the layout of @p folder's README (readmeLayoutProblems()).
Report checkReadme(const std::string& folder);

/// Checks how the lesson file and every file holding a core breathe (measureBreath()).
Report checkBreathe(const std::string& folder);

/// Counts the project functions the lesson file calls (projectCalls()); the Common folder is
/// looked for two levels above @p folder (`<root>/samples/NN_name` -> `<root>/Common`).
Report checkHelpers(const std::string& folder);

/// Checks that the lesson's steps, its `@file` list and the README's `## Flow` agree.
Report checkSteps(const std::string& folder);

/// Checks the total length of the folder's .cpp and .hpp files.
Report checkFolder(const std::string& folder);

}  // namespace memsamples::lesson_shape
