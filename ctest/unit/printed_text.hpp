// Printed text read back as rows and cells, so that a test asserts what a report says (which rows,
// which value in which cell, how many of each) and not how wide its columns are: a changed column
// width passes, a wrong value, a missing row or a swapped cell fails.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace memsamples::test {

/// Rows of cells, as cellsOf() reads them.
using Grid = std::vector<std::vector<std::string>>;

/// The cells of one printed line: the text between runs of two or more spaces, leading spaces
/// dropped. "  owner 0      -  rank 0 A" reads as {"owner 0", "-", "rank 0 A"}: one space stays
/// inside a cell, so a cell may hold words.
inline std::vector<std::string> cellsOfLine(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t at = line.find_first_not_of(' ');
  while (at != std::string::npos) {
    const std::size_t end = line.find("  ", at);
    cells.push_back(line.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? end : line.find_first_not_of(' ', end);
  }
  return cells;
}

/// cellsOfLine() of each line of @p text, in order; an empty line is a row without cells.
inline Grid cellsOf(const std::string& text) {
  Grid rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    rows.push_back(cellsOfLine(line));
  return rows;
}

/// The rows of @p text whose first cell is @p label, each without that label: a report's
/// "label  value" rows, found wherever they are and however far the value is indented.
inline Grid rowsLabelled(const std::string& text, const std::string& label) {
  Grid found;
  for (const std::vector<std::string>& row : cellsOf(text)) {
    if (!row.empty() && row.front() == label)
      found.emplace_back(row.begin() + 1, row.end());
  }
  return found;
}

}  // namespace memsamples::test
