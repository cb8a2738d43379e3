// The `core` check of the lesson shape: the `//! [core]` regions of a sample folder, the calls and
// releases written in them, and their copies in the README; see lesson_shape.hpp.
#include <algorithm>
#include <map>

#include "lesson_shape.hpp"
#include "lesson_shape_internal.hpp"

namespace memsamples::lesson_shape {
namespace {

using namespace internal;

const std::vector<std::string>& coreTags() {
  static const std::vector<std::string> tags = {"core", "core-b"};
  return tags;
}

std::string markerText(const std::string& tag) {
  return "//! [" + tag + "]";
}

// Where one tag's marker lines are: file name -> 1-based line numbers.
using MarkerLines = std::map<std::string, std::vector<std::size_t>>;

std::string lineList(const std::vector<std::size_t>& lines) {
  std::string text;
  for (const std::size_t line : lines)
    text += (text.empty() ? "" : ", ") + std::to_string(line);
  return text;
}

// The region of @p tag, or nullptr.
const CoreRegion* regionOf(const std::vector<CoreRegion>& regions, const std::string& tag) {
  for (const CoreRegion& region : regions) {
    if (region.tag == tag)
      return &region;
  }
  return nullptr;
}

// The README section that a 1-based @p line of @p lines belongs to: its `## ` heading, or "".
std::string sectionOf(const std::vector<std::string>& lines, std::size_t line) {
  bool fenced = false;
  std::string heading;
  for (std::size_t k = 0; k + 1 < line && k < lines.size(); ++k) {
    if (isFence(lines[k]))
      fenced = !fenced;
    else if (!fenced && startsWith(lines[k], "## "))
      heading = trimRight(lines[k]);
  }
  return heading;
}

// @p problem of @p folder as a path when it starts with one of @p files, else after the folder.
std::string located(const fs::path& folder, const std::string& problem,
                    const std::vector<SourceFile>& files) {
  for (const SourceFile& file : files) {
    if (startsWith(problem, file.name + " "))
      return (folder / problem).string();
  }
  return folder.string() + ": " + problem;
}

}  // namespace

CoreScan scanCoreRegions(const std::vector<SourceFile>& files) {
  CoreScan scan;
  std::map<std::string, MarkerLines> markers;  // tag -> file -> lines
  for (const SourceFile& file : files) {
    const std::vector<std::string> lines = splitLines(file.text);
    std::vector<std::size_t> stray;
    bool hasMarker = false;
    for (std::size_t k = 0; k < lines.size(); ++k) {
      const std::string text = trim(lines[k]);
      bool isMarker = false;
      for (const std::string& tag : coreTags()) {
        if (text == markerText(tag)) {
          markers[tag][file.name].push_back(k + 1);
          isMarker = hasMarker = true;
        }
      }
      const bool mentionsTag = lines[k].find("[core]") != std::string::npos ||
                               lines[k].find("[core-b]") != std::string::npos;
      if (!isMarker && mentionsTag)
        stray.push_back(k + 1);
    }
    if (hasMarker && !stray.empty()) {
      scan.problems.push_back(file.name + " line " + lineList(stray) +
                              ": mentions `[core]` or `[core-b]` but is not a marker line "
                              "(Doxygen's \\snippet would take it for one; a marker line is "
                              "exactly `//! [core]` or `//! [core-b]`)");
    }
  }

  for (const std::string& tag : coreTags()) {
    const MarkerLines& where = markers[tag];
    const std::string marker = "`" + markerText(tag) + "`";
    if (where.empty()) {
      if (tag == "core") {
        scan.problems.push_back("no .cpp or .hpp file of the folder has a " + marker +
                                " region (two marker lines around the technique's calls)");
      }
      continue;
    }
    if (where.size() > 1) {
      std::string names;
      for (const auto& [name, lines] : where)
        names += (names.empty() ? "" : ", ") + name + " (line " + lineList(lines) + ")";
      scan.problems.push_back("the " + marker + " marker lines are in more than one file: " +
                              names + "; a region is one contiguous block of one file");
      continue;
    }
    const auto& [name, lines] = *where.begin();
    if (lines.size() == 1) {
      scan.problems.push_back(name + " line " + std::to_string(lines[0]) + ": the " + marker +
                              " region is not closed (a second " + marker + " line ends it)");
      continue;
    }
    if (lines.size() > 2) {
      scan.problems.push_back(name + " has " + std::to_string(lines.size()) + " " + marker +
                              " lines (line " + lineList(lines) +
                              "); a core is one contiguous region between two of them");
      continue;
    }
    CoreRegion region;
    region.tag = tag;
    region.file = name;
    region.openLine = lines[0];
    region.closeLine = lines[1];
    const auto file = std::find_if(files.begin(), files.end(),
                                   [&](const SourceFile& f) { return f.name == name; });
    const std::vector<std::string> text = splitLines(file->text);
    region.lines.assign(text.begin() + static_cast<std::ptrdiff_t>(region.openLine),
                        text.begin() + static_cast<std::ptrdiff_t>(region.closeLine - 1));
    scan.regions.push_back(region);
  }

  const CoreRegion* core = regionOf(scan.regions, "core");
  const CoreRegion* second = regionOf(scan.regions, "core-b");
  if (core != nullptr && second != nullptr && core->file == second->file &&
      core->openLine < second->closeLine && second->openLine < core->closeLine) {
    scan.problems.push_back(core->file + ": the `//! [core]` (lines " +
                            std::to_string(core->openLine) + "-" + std::to_string(core->closeLine) +
                            ") and `//! [core-b]` (lines " + std::to_string(second->openLine) +
                            "-" + std::to_string(second->closeLine) + ") regions overlap");
  }
  return scan;
}

const std::vector<CreateRelease>& teardownTable() {
  static const std::vector<CreateRelease> table = {
      {"cuCtxCreate", "cuCtxDestroy"},
      {"cuModuleLoadData", "cuModuleUnload"},
      {"cuMemAlloc", "cuMemFree"},
      {"cuMemAllocManaged", "cuMemFree"},
      {"cuMemHostAlloc", "cuMemFreeHost"},
      {"cuMemHostRegister", "cuMemHostUnregister"},
      {"cuStreamCreate", "cuStreamDestroy"},
      {"cuEventCreate", "cuEventDestroy"},
      {"cuMemAddressReserve", "cuMemAddressFree"},
      {"cuMemCreate", "cuMemRelease"},
      {"cuMemMap", "cuMemUnmap"},
      {"mmap", "munmap"},
      {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease"},
      {"cuCtxEnablePeerAccess", "cuCtxDisablePeerAccess"},
      {"cuMemPoolCreate", "cuMemPoolDestroy"},
      {"cuMemAllocAsync", "cuMemFreeAsync"},
      {"cuMemAllocFromPoolAsync", "cuMemFreeAsync"},
  };
  return table;
}

std::vector<CreateRelease> missingReleases(const std::string& code) {
  std::vector<CreateRelease> missing;
  for (const CreateRelease& row : teardownTable()) {
    if (containsCall(code, row.create) && !containsCall(code, row.release))
      missing.push_back(row);
  }
  return missing;
}

CoreCopies parseCoreCopies(const std::string& readme) {
  CoreCopies result;
  const std::vector<std::string> lines = splitLines(readme);
  bool fenced = false;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const std::string line = trimRight(lines[k]);
    const std::string where = "README.md line " + std::to_string(k + 1);
    if (isFence(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      if (startsWith(line, "<!-- core")) {
        result.problems.push_back(where + ": `" + line + "` stands inside a code block, where " +
                                  "the docs build would still take it for a core copy");
      }
      continue;
    }
    const std::string text = trimLeft(line);
    if (!startsWith(text, "<!-- core") && !startsWith(text, "<!--core"))
      continue;
    CoreCopy copy;
    copy.markerLine = k + 1;
    for (const std::string& tag : coreTags()) {
      const std::string open = "<!-- " + tag + ": ";
      if (line.size() > open.size() + 4 && startsWith(line, open) && endsWith(line, " -->")) {
        copy.tag = tag;
        copy.file = line.substr(open.size(), line.size() - open.size() - 4);
      }
    }
    if (copy.tag.empty() || copy.file.empty() ||
        copy.file.find_first_of(" \t") != std::string::npos) {
      result.problems.push_back(where + ": `" + text +
                                "` is not a core line; write exactly `<!-- core: FILE -->` or "
                                "`<!-- core-b: FILE -->` from the first column, FILE relative to "
                                "the sample folder");
      continue;
    }
    if (k + 1 >= lines.size() || !startsWith(lines[k + 1], "```")) {
      result.problems.push_back(where + ": `" + line +
                                "` must be followed directly by a fenced code block (```cpp) "
                                "holding the region's lines");
      continue;
    }
    std::size_t end = k + 2;
    while (end < lines.size() && !(startsWith(lines[end], "```") && trim(lines[end]) == "```"))
      ++end;
    if (end >= lines.size()) {
      result.problems.push_back("README.md line " + std::to_string(k + 2) +
                                ": the code block after `" + line + "` is never closed");
      break;
    }
    copy.lines.assign(lines.begin() + static_cast<std::ptrdiff_t>(k + 2),
                      lines.begin() + static_cast<std::ptrdiff_t>(end));
    copy.inCoreSection = sectionOf(lines, k + 1) == pageHeadings()[1];
    result.copies.push_back(copy);
    k = end;  // past the closing fence
  }
  return result;
}

std::string compareCoreCopy(const CoreRegion& region, const CoreCopy& copy) {
  const std::size_t common = std::min(region.lines.size(), copy.lines.size());
  const std::size_t firstCopyLine = copy.markerLine + 2;  // after the marker and the fence
  for (std::size_t k = 0; k <= common; ++k) {
    const bool inRegion = k < region.lines.size();
    const bool inCopy = k < copy.lines.size();
    if (!inRegion && !inCopy)
      return "";
    if (inRegion && inCopy && region.lines[k] == copy.lines[k])
      continue;
    const std::string readmeLine = "README.md line " + std::to_string(firstCopyLine + k);
    const std::string sourceLine = region.file + " line " + std::to_string(region.openLine + 1 + k);
    if (!inCopy) {
      return "the README copy of the " + region.tag + " region ends at " + readmeLine + ", but " +
             sourceLine + " goes on: `" + region.lines[k] + "`";
    }
    if (!inRegion) {
      return readmeLine + " is past the end of the " + region.tag + " region (its closing " +
             "marker is " + region.file + " line " + std::to_string(region.closeLine) + "): `" +
             copy.lines[k] + "`";
    }
    return readmeLine + " differs from " + sourceLine + ": the README has `" + copy.lines[k] +
           "`, the source `" + region.lines[k] + "`";
  }
  return "";
}

Report checkCore(const std::string& folderArgument) {
  Report report;
  const fs::path folder = normalizedFolder(folderArgument);
  const fs::path readmePath = folder / "README.md";
  const std::string readme = readmePath.string();
  std::string readmeText;
  if (!readReadme(folder, readmeText, report.problems))
    return report;
  const std::vector<SourceFile> files = readSources(folder, {".cpp", ".hpp"}, report.problems);
  const CoreScan scan = scanCoreRegions(files);
  for (const std::string& problem : scan.problems)
    report.problems.push_back(located(folder, problem, files));

  // The calls of every core, comments and strings blanked in the whole file first.
  std::string coreCode;
  for (const CoreRegion& region : scan.regions) {
    const auto file = std::find_if(files.begin(), files.end(),
                                   [&](const SourceFile& f) { return f.name == region.file; });
    const std::vector<std::string> lines = splitLines(stripCommentsAndStrings(file->text));
    for (std::size_t k = region.openLine; k + 1 < region.closeLine; ++k)
      coreCode += lines[k] + "\n";
  }

  const ApiSection section = parseApiSection(readmeText);
  if (!section.hasCoreParagraph) {
    report.problems.push_back(readme +
                              ": its \"## Demonstrated API calls\" section has no paragraph "
                              "starting with \"In the core:\" (the calls written in the core)");
  }
  for (const std::string& call : section.coreCalls) {
    if (!containsCall(coreCode, call)) {
      report.problems.push_back(readme + ": `" + call +
                                "` is listed \"In the core:\", but no core region calls it "
                                "(outside comments and strings)");
    }
  }
  const std::vector<CreateRelease> missing = missingReleases(coreCode);
  for (const CreateRelease& row : missing) {
    report.problems.push_back(folder.string() + ": a core calls `" + row.create +
                              "`, but no core calls `" + row.release +
                              "` (on the good path a core releases what it creates, e.g. "
                              "ms::check(cuMemFree(a.release()), \"cuMemFree\"))");
  }

  // The README's copies: one per region, in `## The core`, line for line the region.
  const CoreCopies copies = parseCoreCopies(readmeText);
  for (const std::string& problem : copies.problems)
    report.problems.push_back(folder.string() + "/" + problem);
  for (const CoreRegion& region : scan.regions) {
    const std::string line = "<!-- " + region.tag + ": " + region.file + " -->";
    std::vector<const CoreCopy*> mine;
    for (const CoreCopy& copy : copies.copies) {
      if (copy.tag == region.tag)
        mine.push_back(&copy);
    }
    if (mine.empty()) {
      report.problems.push_back(readme + ": has no line `" + line +
                                "` followed by a code block copying the region (" + region.file +
                                " lines " + std::to_string(region.openLine + 1) + "-" +
                                std::to_string(region.closeLine - 1) + ")");
      continue;
    }
    if (mine.size() > 1) {
      report.problems.push_back(readme + ": has " + std::to_string(mine.size()) +
                                " copies of the " + region.tag + " region; one is enough");
    }
    const CoreCopy& copy = *mine.front();
    const std::string where = readme + " line " + std::to_string(copy.markerLine);
    if (copy.file != region.file) {
      report.problems.push_back(where + ": names " + copy.file + ", but the " + region.tag +
                                " region is in " + region.file + " (write `" + line + "`)");
      continue;
    }
    if (!copy.inCoreSection) {
      report.problems.push_back(where + ": the copy of the " + region.tag +
                                " region stands outside the \"## The core\" section");
    }
    const std::string difference = compareCoreCopy(region, copy);
    if (!difference.empty())
      report.problems.push_back(folder.string() + "/" + difference);
  }
  for (const CoreCopy& copy : copies.copies) {
    if (regionOf(scan.regions, copy.tag) == nullptr) {
      report.problems.push_back(readme + " line " + std::to_string(copy.markerLine) +
                                ": copies a " + copy.tag + " region, but the folder has none");
    }
  }

  std::string regions;
  for (const CoreRegion& region : scan.regions) {
    regions += (regions.empty() ? "" : "; ") + region.tag + " " + region.file + " lines " +
               std::to_string(region.openLine + 1) + "-" + std::to_string(region.closeLine - 1) +
               " (" + std::to_string(region.lines.size()) + " lines)";
  }
  std::size_t created = 0;
  for (const CreateRelease& row : teardownTable())
    created += containsCall(coreCode, row.create) ? 1 : 0;
  report.summary = folder.string() + ": " + (regions.empty() ? "no core region" : regions) + "; " +
                   std::to_string(section.coreCalls.size()) + " calls listed \"In the core:\"; " +
                   std::to_string(created) + " creating calls in the cores, " +
                   std::to_string(created - missing.size()) + " released there; " +
                   std::to_string(copies.copies.size()) + " README copies checked";
  return report;
}

}  // namespace memsamples::lesson_shape
