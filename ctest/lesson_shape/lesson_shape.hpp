// The lesson-shape checks of one sample folder: the structure a reader relies on, nothing that
// counts style (CONVENTIONS and the root README's "How a sample reads"):
// - calls: README "## Demonstrated API calls" lists the driver calls written in the folder
//          itself (plain lines and the paragraphs `In the core:` and `Elsewhere in this
//          folder:`), and in paragraphs starting `Via Common:` (and maybe `Via NN_name`) the
//          calls made elsewhere; every call listed outside the Via paragraphs must appear as a
//          call in the folder's code, and every driver call in the folder's code must be listed;
// - core:  the folder has one `//! [core]` region (and maybe one `//! [core-b]`) holding the
//          README's `In the core:` calls and the release of everything it creates, copied
//          exactly into the README's `## The core` section after a `<!-- core: FILE -->` line
//          (the course page shows the region itself in the same place);
// - page:  the README is in the page shape: title, a short what-and-why, a picture, `## Flow`,
//          `## The core`, `## Run it`, `## Try this`, then `## Going deeper` and
//          `## Demonstrated API calls` (pageProblems());
// - steps: the lesson's `// N. ` step comments, its `@file` list and the README's `## Flow`
//          list number the same steps 1..N.
// A check that finds nothing to check (a missing or empty folder, no core, no steps, no call
// list) fails. Every function here is pure text processing or plain file reading, so it is unit
// tested.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace memsamples::lesson_shape {

// ------------------------------------------------------------------ text

/// @p text split at newlines, without them and without a trailing carriage return; a last line
/// without a newline counts, an empty text has no lines.
std::vector<std::string> splitLines(const std::string& text);

/// @p code with every comment and every string and character literal (raw strings included)
/// replaced by spaces; newlines are kept, so line numbers do not change.
std::string stripCommentsAndStrings(const std::string& code);

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

/// Finds the core regions of @p files. A marker line is a line whose text, without leading and
/// trailing white space, is exactly `//! [core]` or `//! [core-b]`. Each tag has exactly two
/// marker lines in the whole folder, both in one file; the two regions do not overlap; a `core-b` needs a `core`; another line of a file with
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

// ------------------------------------------------------------------ the page and the steps

/// The `## ` headings of a README's first layer, in this order; `## Going deeper` ends it.
inline const std::vector<std::string>& pageHeadings() {
  static const std::vector<std::string> headings = {"## Flow", "## The core", "## Run it",
                                                    "## Try this", "## Going deeper"};
  return headings;
}

/// The page shape's numbers (CONVENTIONS, "README / page shape"): what a reader meets first.
constexpr std::size_t kWhatAndWhyLineLimit = 15;   ///< Non-blank text lines under the title.
constexpr std::size_t kPictureLineLimit = 40;      ///< The picture link stands by this line.
constexpr std::size_t kFlowStepLimit = 10;         ///< Numbered steps of `## Flow`.
constexpr std::size_t kRunOutputLineLimit = 20;    ///< Lines of the ```text block of `## Run it`.
constexpr std::size_t kTryThisMinimum = 2;         ///< Experiments under `## Try this`.
constexpr std::size_t kFirstLayerLineLimit = 150;  ///< `## Going deeper` stands by this line.

/// The start of every `## Try this` bullet: the whole command is one code span after it.
inline const std::string& tryThisPrefix() {
  static const std::string prefix = "- `./build/bin/";
  return prefix;
}

/// A picture link `![alt](path.svg)` on a line of its own.
struct PictureLink {
  std::size_t line = 0;  ///< 1-based README line; 0 when there is none.
  std::string alt;
  std::string path;      ///< As written, relative to the README.
};

/// The first line of @p readme (outside fenced code) that is, white space aside, exactly a
/// picture link `![alt](path)`; line 0 when there is none.
PictureLink firstPicture(const std::string& readme);

/// Says whether the picture at @p path (relative to the README, as written) is a committed SVG
/// that exists; "" when it is, else what is wrong.
using PictureCheck = std::function<std::string(const std::string& path)>;

/// What is wrong with the page shape of @p readme of the sample folder @p folderName (one
/// sentence each, with README line numbers; none: it keeps the shape). Headings inside fenced
/// code do not count.
/// - It starts `# <folderName> ` (the title).
/// - At most kWhatAndWhyLineLimit non-blank lines (picture lines aside) stand between the title
///   and the first `## ` heading.
/// - A picture link `![alt](relative/path.svg)`, on a line of its own between the title and the
///   first `## ` heading, stands within the first kPictureLineLimit lines; the path is relative
///   (no URL, no leading /) and ends .svg, and @p picture finds it.
/// - The first `## ` headings are pageHeadings(), in that order (each one missing is named).
/// - `## Flow` has 1 to kFlowStepLimit numbered steps (flowSteps()).
/// - `## The core` holds a `<!-- core: FILE -->` line.
/// - `## Run it` holds a ```sh block and exactly one ```text block of at most
///   kRunOutputLineLimit lines.
/// - `## Try this` has at least kTryThisMinimum bullets, each starting tryThisPrefix() and
///   holding the whole command in that one code span.
/// - `## Going deeper` stands within the first kFirstLayerLineLimit lines.
/// - `## Demonstrated API calls` comes after `## Going deeper`.
std::vector<std::string> pageProblems(const std::string& readme, const std::string& folderName,
                                      const PictureCheck& picture);

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
/// A `### ` heading inside the section does not end it.
/// found is false when there is no `## Flow` heading.
struct FlowSteps {
  bool found = false;
  std::vector<int> steps;
};
FlowSteps flowSteps(const std::string& readme);

/// "" when @p steps is 1, 2, ..., N (N at least 1); otherwise what is wrong, e.g.
/// "goes 1, 2, 4 (each number once, 1 to N in order)".
std::string stepOrderProblem(const std::vector<int>& steps);

// ------------------------------------------------------------------ the checks

/// The outcome of one check: what was checked, and one line per problem (none: it passed).
struct Report {
  std::string summary;
  std::vector<std::string> problems;
};

/// The names of the checks, as `lesson_shape_check <check> <folder>` takes them.
const std::vector<std::string>& checkNames();

/// Runs the check called @p check (one of checkNames()) on @p folder; an unknown name, a
/// missing folder and an empty one are problems.
Report runCheck(const std::string& check, const std::string& folder);

/// Checks the README's call list of the sample folder @p folder against the folder's code.
Report checkCalls(const std::string& folder);

/// Checks the core regions of @p folder, their calls and teardown, and their README copies.
Report checkCore(const std::string& folder);

/// Checks @p folder's README against the page shape (pageProblems()); a picture must be a file
/// whose text holds `<svg`.
Report checkPage(const std::string& folder);

/// Checks that the lesson's steps, its `@file` list and the README's `## Flow` agree.
Report checkSteps(const std::string& folder);

}  // namespace memsamples::lesson_shape
