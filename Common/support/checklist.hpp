/**
 * @file checklist.hpp
 * @brief The verdict bookkeeping of a sample with many checks: every check counted, every failure
 *        worded "<what>: expected <expected>, got <got>" (03's attribute read-backs).
 *
 * Nothing here touches the CUDA driver (unit tested in
 * ctest/unit/managedAdvisePrefetch/range_attributes_test.cpp).
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace memsamples {

/// One attribute that did not read back as expected.
struct AttributeMismatch {
  std::string attribute;  ///< e.g. "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE".
  std::string expected;   ///< What the advice (or its absence) implies.
  std::string got;        ///< What the driver returned.
};

/// Every check of the run; each failure becomes "<what>: expected <expected>, got <got>".
class Checklist {
 public:
  /// Records one check.
  bool expect(bool ok, const std::string& what, const std::string& expected,
              const std::string& got);
  /// Records @p checked checks, each of @p found a failure. @return true when none.
  bool expectAttributes(const std::string& context, const std::vector<AttributeMismatch>& found,
                        std::size_t checked);
  std::size_t checks() const noexcept { return checks_; }  ///< Checks recorded.
  /// The failure lines, in the order they happened.
  const std::vector<std::string>& failures() const noexcept { return failures_; }
  bool passed() const noexcept { return failures_.empty(); }  ///< True when none failed.

 private:
  std::size_t checks_ = 0;
  std::vector<std::string> failures_;
};

}  // namespace memsamples
