// The lesson-shape rules of one sample folder (see the root README, "How a sample reads"):
// - README "## Demonstrated API calls" lists the driver calls written in the folder itself, and in
//   paragraphs starting `Via Common:` (and maybe `Via NN_name`) the calls made elsewhere; every
//   call listed outside the Via paragraphs must appear as a call in the folder's code, and every
//   driver call in the folder's code must be listed there;
// - the lesson file samples/NN_name/name.cpp stays within its line limit.
// Every function here is pure text processing or plain file reading, so it is unit tested.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace memsamples::lesson_shape {

/// What the "## Demonstrated API calls" section of a README says.
struct ApiSection {
  bool found = false;                    ///< The heading exists.
  bool hasViaCommon = false;             ///< A line of the section starts with `Via Common:`.
  std::vector<std::string> folderCalls;  ///< Backticked `cu...` names outside Via paragraphs.
};

/// Parses @p readme (the whole file). The section runs from its heading to the next heading of
/// level 1 or 2; fenced code blocks inside it are skipped; a Via paragraph runs from a line
/// starting `Via ` to the next blank line.
ApiSection parseApiSection(const std::string& readme);

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

/// The number of lines of @p text (a last line without a newline counts).
std::size_t countLines(const std::string& text);

/// The lesson file of a sample folder: `01_vectorAddDrv` -> `vectorAddDrv.cpp`.
std::string lessonFileName(const std::string& folderName);

/// The line limit of a sample's lesson file, its tutorial header included.
std::size_t lessonLineLimit(const std::string& folderName);

/// The outcome of one check: what was checked, and one line per problem (none: it passed).
struct Report {
  std::string summary;
  std::vector<std::string> problems;
};

/// Checks the README's call list of the sample folder @p folder against the folder's code.
Report checkCalls(const std::string& folder);

/// Checks the length of @p folder's lesson file against lessonLineLimit().
Report checkLines(const std::string& folder);

}  // namespace memsamples::lesson_shape
