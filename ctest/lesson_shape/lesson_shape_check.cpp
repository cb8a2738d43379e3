// lesson_shape_check <check> <sample folder>: checks one rule of the lesson shape for one sample
// (see lesson_shape.hpp; <check> is calls, core, page or steps), prints one line per problem,
// then what was checked. Exit 0 when it holds, 1 when not (a missing or empty folder included).
#include <algorithm>
#include <iostream>
#include <string>

#include "lesson_shape.hpp"

int main(int argc, char** argv) {
  namespace ls = memsamples::lesson_shape;
  const std::vector<std::string>& names = ls::checkNames();
  const std::string check = argc == 3 ? argv[1] : "";
  if (std::find(names.begin(), names.end(), check) == names.end()) {
    std::string list;
    for (const std::string& name : names)
      list += (list.empty() ? "" : "|") + name;
    std::cerr << "usage: lesson_shape_check " << list << " <samples/NN_name folder>\n";
    return 1;
  }
  const ls::Report report = ls::runCheck(check, argv[2]);
  for (const std::string& problem : report.problems)
    std::cout << "FAILED: " << problem << "\n";
  if (!report.summary.empty())
    std::cout << report.summary << "\n";
  std::cout << (report.problems.empty() ? "lesson shape: ok" : "lesson shape: not kept") << "\n";
  return report.problems.empty() ? 0 : 1;
}
