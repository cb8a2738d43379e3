// lesson_shape_check calls|lines <sample folder>: checks one rule of the lesson shape for one
// sample (see lesson_shape.hpp) and prints one line per problem. Exit 0 when it holds, 1 when not.
#include <iostream>
#include <string>

#include "lesson_shape.hpp"

int main(int argc, char** argv) {
  namespace ls = memsamples::lesson_shape;
  const std::string check = argc == 3 ? argv[1] : "";
  if (check != "calls" && check != "lines") {
    std::cerr << "usage: lesson_shape_check calls|lines <samples/NN_name folder>\n";
    return 1;
  }
  const ls::Report report = check == "calls" ? ls::checkCalls(argv[2]) : ls::checkLines(argv[2]);
  for (const std::string& problem : report.problems)
    std::cout << "FAILED: " << problem << "\n";
  if (!report.summary.empty())
    std::cout << report.summary << "\n";
  std::cout << (report.problems.empty() ? "lesson shape: ok" : "lesson shape: not kept") << "\n";
  return report.problems.empty() ? 0 : 1;
}
