// The host NUMA sysfs readers of support/numa_sysfs.hpp. CUDA-free, unit tested in
// ctest/unit/common/sysfs_test.cpp.
#include "support/numa_sysfs.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "support/cli.hpp"  // splitCommaList

namespace memsamples {
namespace {

std::string_view trimSpace(std::string_view text) {
  const auto isSpace = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && isSpace(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back()))
    text.remove_suffix(1);
  return text;
}

}  // namespace

std::string sysfsPciName(std::string_view busId) {
  const auto malformed = [&] {
    return std::invalid_argument("malformed PCI bus id '" + std::string(busId) +
                                 "': expected domain:bus:device.function in hex, e.g. "
                                 "0000:3b:00.0");
  };
  const auto parseHex = [](std::string_view text, std::size_t maxDigits, unsigned long& value) {
    if (text.empty() || text.size() > maxDigits)
      return false;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    return error == std::errc() && end == text.data() + text.size();
  };
  const std::string_view text = trimSpace(busId);
  const std::size_t colon1 = text.find(':');
  const std::size_t colon2 = colon1 == std::string_view::npos ? colon1 : text.find(':', colon1 + 1);
  const std::size_t dot = colon2 == std::string_view::npos ? colon2 : text.find('.', colon2 + 1);
  if (dot == std::string_view::npos)
    throw malformed();
  unsigned long domain = 0, bus = 0, device = 0, function = 0;
  if (!parseHex(text.substr(0, colon1), 8, domain) ||
      !parseHex(text.substr(colon1 + 1, colon2 - colon1 - 1), 2, bus) ||
      !parseHex(text.substr(colon2 + 1, dot - colon2 - 1), 2, device) ||
      !parseHex(text.substr(dot + 1), 1, function) || device > 0x1f || function > 7) {
    throw malformed();
  }
  // The kernel names devices "%04x:%02x:%02x.%d": lower case, domain widened only when needed
  // (cuDeviceGetPCIBusId may print upper case, nvidia-smi an 8-digit domain).
  char name[32];
  std::snprintf(name, sizeof name, "%04lx:%02lx:%02lx.%lx", domain, bus, device, function);
  return name;
}

PciNumaNode readPciNumaNode(const std::string& sysfsRoot, std::string_view busId) {
  constexpr int kMaxNodeNumber = 1023;  // the kernel's CONFIG_NODES_SHIFT is at most 10
  PciNumaNode result;
  try {
    result.path = sysfsRoot + "/bus/pci/devices/" + sysfsPciName(busId) + "/numa_node";
  } catch (const std::invalid_argument& error) {
    result.problem = error.what();
    return result;
  }
  std::ifstream file(result.path);
  if (!file) {
    result.problem = "cannot read " + result.path + ": " + std::strerror(errno);
    return result;
  }
  const std::string content((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
  const std::string_view text = trimSpace(content);
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < -1 ||
      value > kMaxNodeNumber) {
    // Quoted and shortened, so that a binary file cannot flood the log.
    std::string shown;
    for (const char c : text.substr(0, 40)) {
      shown += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
    }
    if (text.size() > 40)
      shown += "...";
    result.problem = result.path + " holds '" + shown + "', not a node number from -1 to " +
                     std::to_string(kMaxNodeNumber);
    return result;
  }
  result.node = static_cast<int>(value);
  return result;
}

std::vector<int> parseIdList(std::string_view list) {
  // Node and CPU numbers stay far below this; a corrupt file must not make us allocate gigabytes.
  constexpr int kMaxListedId = 65535;
  list = trimSpace(list);
  std::vector<int> ids;
  const auto number = [list](std::string_view text) {
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0 ||
        value > kMaxListedId) {
      throw std::invalid_argument("not an id list: '" + std::string(list) + "'");
    }
    return value;
  };
  for (const std::string_view item : splitCommaList(list)) {
    const std::size_t dash = item.find('-');
    const int first = number(item.substr(0, dash));
    const int last = dash == std::string_view::npos ? first : number(item.substr(dash + 1));
    if (last < first || (!ids.empty() && first <= ids.back())) {
      throw std::invalid_argument("not an id list: '" + std::string(list) + "'");
    }
    for (int id = first; id <= last; ++id)
      ids.push_back(id);
  }
  return ids;
}

std::vector<int> onlineHostNumaNodes(const std::string& sysfsRoot) {
  std::ifstream file(sysfsRoot + "/devices/system/node/online");
  std::string text;
  if (!file || !std::getline(file, text))
    return {};
  try {
    return parseIdList(text);
  } catch (const std::invalid_argument&) {
    return {};
  }
}

int hostNumaLocationId(int hostNumaIdAttribute) {
  return hostNumaIdAttribute >= 0 ? hostNumaIdAttribute : 0;
}

}  // namespace memsamples
