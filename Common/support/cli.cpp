// The command-line parser: the value parsers of support/cli.hpp and CommandLine's registered
// options (memsamples.hpp). CUDA-free, unit tested in ctest/unit/common/cli_test.cpp.
#include "support/cli.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "memsamples.hpp"

namespace memsamples {
namespace {

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

}  // namespace

long long parseInteger(std::string_view text, std::string_view what, long long min, long long max) {
  long long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(first, last, value);
  if (text.empty() || error == std::errc::invalid_argument || end != last) {
    throw UsageError("invalid value " + quoted(text) + " for " + std::string(what) +
                     ": expected an integer");
  }
  if (error == std::errc::result_out_of_range || value < min || value > max) {
    throw UsageError("value " + quoted(text) + " for " + std::string(what) + " is out of range [" +
                     std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
}

std::uint64_t parseSize(std::string_view text, std::string_view what, std::uint64_t min,
                        std::uint64_t max) {
  const auto digitsEnd =
      std::find_if(text.begin(), text.end(), [](char c) { return c < '0' || c > '9'; });
  const std::string_view digits =
      text.substr(0, static_cast<std::size_t>(digitsEnd - text.begin()));
  std::string suffix(text.substr(digits.size()));
  std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  const std::string expected = "expected a byte count such as 4096, 64K, 256M or 1G";
  if (digits.empty()) {
    throw UsageError("invalid size " + quoted(text) + " for " + std::string(what) + ": " +
                     expected);
  }
  unsigned shift = 0;
  if (!suffix.empty() && suffix != "B") {
    switch (suffix[0]) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        throw UsageError("invalid size " + quoted(text) + " for " + std::string(what) +
                         ": unknown suffix " + quoted(text.substr(digits.size())) + ", " +
                         expected);
    }
    const std::string rest = suffix.substr(1);
    if (!rest.empty() && rest != "B" && rest != "IB") {
      throw UsageError("invalid size " + quoted(text) + " for " + std::string(what) +
                       ": unknown suffix " + quoted(text.substr(digits.size())) + ", " + expected);
    }
  }
  std::uint64_t count = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  const bool overflow = error == std::errc::result_out_of_range ||
                        end != digits.data() + digits.size() ||
                        (shift > 0 && count > (UINT64_MAX >> shift));
  if (overflow) {
    throw UsageError("size " + quoted(text) + " for " + std::string(what) +
                     " is too large (does not fit in 64 bits)");
  }
  const std::uint64_t bytes = count << shift;
  if (bytes == 0 && min > 0) {
    throw UsageError(std::string(what) + " must be greater than 0");
  }
  if (bytes < min || bytes > max) {
    throw UsageError("size " + quoted(text) + " for " + std::string(what) + " is out of range [" +
                     formatBytes(min) + ", " + formatBytes(max) + "]");
  }
  return bytes;
}

std::vector<std::string_view> splitCommaList(std::string_view text) {
  std::vector<std::string_view> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) {
      items.push_back(text.substr(start));
      return items;
    }
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
}

std::vector<int> parseIntegerList(std::string_view text, std::string_view what, int min, int max) {
  std::vector<int> values;
  std::set<int> seen;
  for (const std::string_view item : splitCommaList(text)) {
    const int value = static_cast<int>(parseInteger(item, what, min, max));
    if (!seen.insert(value).second) {
      throw UsageError(std::string(what) + " lists " + std::to_string(value) + " twice");
    }
    values.push_back(value);
  }
  return values;
}

// ---------------------------------------------------------------------------------- CommandLine

/// What a CommandLine knows: the sample's name and summary, and the options registered so far,
/// each with the function that parses its value into the sample's target.
struct CommandLine::Registry {
  /// One registered option.
  struct Option {
    std::string name;       ///< Without the dashes, e.g. "size".
    std::string valueName;  ///< How `--help` calls the value (N, BYTES...); empty for a flag.
    std::string help;       ///< The sentence `--help` prints.
    std::function<void(std::string_view value)> apply;  ///< Parses a value into the target.
  };

  std::string program;          ///< The sample's name.
  std::string summary;          ///< What the sample does, for `--help`.
  std::vector<Option> options;  ///< In the order registered, which `--help` keeps.

  /// The option called @p name, or nullptr.
  const Option* find(std::string_view name) const {
    for (const Option& option : options) {
      if (option.name == name)
        return &option;
    }
    return nullptr;
  }
};

CommandLine::CommandLine(std::string program, std::string summary)
    : registry_(std::make_unique<Registry>()) {
  registry_->program = std::move(program);
  registry_->summary = std::move(summary);
}

CommandLine::~CommandLine() = default;

const std::string& CommandLine::program() const noexcept {
  return registry_->program;
}

void CommandLine::addCommonOptions(CommonOptions& options, bool timed) {
  registry_->options.push_back(
      {"device", "N", "CUDA device ordinal (default: the device with the most SMs x clock)",
       [&options](std::string_view value) {
         options.device = parseInteger(value, "--device", LLONG_MIN, LLONG_MAX);
       }});
  if (timed) {
    addInteger("iterations", "timed repetitions; the median is reported (default 20)",
               options.iterations, 1, 100000);
    addInteger("warmup", "untimed repetitions before timing (default 3)", options.warmup, 0, 1000);
  }
  addString("json", "also write the results as one JSON object to FILE ('-' = stdout)",
            options.jsonPath, "FILE");
  addFlag("quiet", "print only the verdict", options.quiet);
}

void CommandLine::addFlag(std::string name, std::string help, bool& target) {
  registry_->options.push_back(
      {std::move(name), "", std::move(help), [&target](std::string_view) { target = true; }});
}

void CommandLine::addInteger(std::string name, std::string help, long long& target, long long min,
                             long long max) {
  const std::string what = "--" + name;
  registry_->options.push_back(
      {std::move(name), "N", std::move(help), [&target, what, min, max](std::string_view value) {
         target = parseInteger(value, what, min, max);
       }});
}

void CommandLine::addInteger(std::string name, std::string help, int& target, int min, int max) {
  const std::string what = "--" + name;
  registry_->options.push_back(
      {std::move(name), "N", std::move(help), [&target, what, min, max](std::string_view value) {
         target = static_cast<int>(parseInteger(value, what, min, max));
       }});
}

void CommandLine::addSize(std::string name, std::string help, std::optional<std::uint64_t>& target,
                          std::uint64_t min, std::uint64_t max, std::uint64_t multipleOf) {
  const std::string what = "--" + name;
  registry_->options.push_back(
      {std::move(name), "BYTES", std::move(help),
       [&target, what, min, max, multipleOf](std::string_view value) {
         const std::uint64_t bytes = parseSize(value, what, min, max);
         // multipleOf is the option's unit (a float vector's is 4 bytes): "one element".
         if (multipleOf > 1 && bytes % multipleOf != 0) {
           throw UsageError(what + " " + std::to_string(bytes) + " is not a multiple of " +
                            std::to_string(multipleOf) + " bytes (one element)");
         }
         target = bytes;
       }});
}

void CommandLine::addString(std::string name, std::string help, std::string& target,
                            std::string valueName) {
  const std::string what = "--" + name;
  registry_->options.push_back({std::move(name), std::move(valueName), std::move(help),
                                [&target, what](std::string_view value) {
                                  if (value.empty())
                                    throw UsageError(what + " needs a non-empty value");
                                  target = std::string(value);
                                }});
}

void CommandLine::addIntegerList(std::string name, std::string help, std::vector<int>& target,
                                 int min, int max) {
  const std::string what = "--" + name;
  registry_->options.push_back(
      {std::move(name), "LIST", std::move(help), [&target, what, min, max](std::string_view value) {
         target = parseIntegerList(value, what, min, max);
       }});
}

bool CommandLine::parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  return parse(args);
}

bool CommandLine::parse(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      throw UsageError("unexpected argument " + quoted(arg));
    }
    // Long options take one or two dashes: -device=1 is the cuda-samples spelling.
    std::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string_view> inlineValue;
    if (const auto equals = body.find('='); equals != std::string_view::npos) {
      inlineValue = body.substr(equals + 1);
      body = body.substr(0, equals);
    }
    if (body == "help" || body == "h") {
      std::cout << usage();
      return false;
    }
    const Registry::Option* option = registry_->find(body);
    if (option == nullptr) {
      throw UsageError("unknown option " + quoted(arg));
    }
    const std::string spelled = "--" + option->name;
    if (option->valueName.empty()) {
      if (inlineValue)
        throw UsageError(spelled + " takes no value");
      option->apply({});
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= args.size())
        throw UsageError(spelled + " needs a value");
      inlineValue = args[++i];
    }
    option->apply(*inlineValue);
  }
  return true;
}

std::string CommandLine::usage() const {
  std::ostringstream text;
  text << "Usage: " << registry_->program << " [options]\n\n"
       << registry_->summary << "\n\nOptions:\n";
  for (const Registry::Option& option : registry_->options) {
    std::string left = "  --" + option.name;
    if (!option.valueName.empty())
      left += " " + option.valueName;
    text << left;
    text << std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') << option.help << '\n';
  }
  text << "  --help                print this text\n\n"
          "Sizes take K, M, G suffixes (powers of 1024). Exit codes: 0 PASS, 1 FAIL, 2 WAIVED.\n";
  return text.str();
}

}  // namespace memsamples
