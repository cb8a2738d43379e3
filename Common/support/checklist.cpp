/**
 * @file checklist.cpp
 * @brief The verdict bookkeeping; see checklist.hpp.
 */
#include "support/checklist.hpp"

namespace memsamples {

bool Checklist::expect(bool ok, const std::string& what, const std::string& expected,
                       const std::string& got) {
  if (ok)
    return expectAttributes(what, {}, 1);
  return expectAttributes(what, {{"", expected, got}}, 1);
}

bool Checklist::expectAttributes(const std::string& context,
                                 const std::vector<AttributeMismatch>& found, std::size_t checked) {
  checks_ += checked;
  for (const AttributeMismatch& m : found) {
    const std::string attribute = m.attribute.empty() ? "" : ": " + m.attribute;
    failures_.push_back(context + attribute + ": expected " + m.expected + ", got " + m.got);
  }
  return found.empty();
}

}  // namespace memsamples
