// Small text and file helpers shared by the lesson-shape checks (not part of their interface).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lesson_shape.hpp"

namespace memsamples::lesson_shape::internal {

namespace fs = std::filesystem;

bool isIdentifierChar(char c);
bool startsWith(const std::string& text, const std::string& prefix);
bool endsWith(const std::string& text, const std::string& suffix);
std::string trimLeft(const std::string& text);
std::string trimRight(const std::string& text);
std::string trim(const std::string& text);

/// The decimal number at @p pos of @p text followed by @p after (e.g. ". "), or -1.
int numberFollowedBy(const std::string& text, std::size_t pos, const std::string& after);

/// "1, 2, 4" (or "none").
std::string joinNumbers(const std::vector<int>& numbers);

/// True when the line (left-trimmed) opens or closes a fenced code block.
bool isFence(const std::string& line);

/// The whole file; @p ok says whether it could be read.
std::string readFile(const fs::path& path, bool& ok);

/// Reads @p folder's README.md into @p text; when it cannot, adds that to @p problems and returns
/// false.
bool readReadme(const fs::path& folder, std::string& text, std::vector<std::string>& problems);

/// "samples/01_vectorAddDrv/" and "samples/./01_vectorAddDrv" -> "samples/01_vectorAddDrv".
fs::path normalizedFolder(const std::string& folder);

/// The regular files of @p folder (not its subfolders) whose extension is one of @p extensions,
/// sorted by name, with their text; a file that cannot be read is added to @p problems.
std::vector<SourceFile> readSources(const fs::path& folder,
                                    const std::vector<std::string>& extensions,
                                    std::vector<std::string>& problems);

}  // namespace memsamples::lesson_shape::internal
