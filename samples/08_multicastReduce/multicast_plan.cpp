// The CUDA-free decisions of 08_multicastReduce (see multicast_plan.hpp).
#include "multicast_plan.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace memsamples::multicast {

void addOptions(CommandLine& commandLine, Options& options) {
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size", "bytes to all-reduce, a multiple of 16 (default 256M)",
                      options.sizeBytes);
  commandLine.addIntegerList("devices",
                             "the team, e.g. 0,1 (default: every GPU with multicast support "
                             "that can take part; one that is busy or short of memory is left "
                             "out, saying why)",
                             options.devices, 0, std::numeric_limits<int>::max());
  commandLine.addFlag("bind-by-address",
                      "bind each GPU's copy to the multicast object by the address of its "
                      "mapping (cuMulticastBindAddr) instead of by its handle "
                      "(cuMulticastBindMem)",
                      options.bindByAddress);
}

void validateSize(const std::optional<std::uint64_t>& sizeBytes) {
  if (sizeBytes && *sizeBytes > kMaxBytes)
    throw UsageError("--size " + std::to_string(*sizeBytes) + " (" + formatBytes(*sizeBytes) +
                     ") is more than this sample takes: at most 1T per GPU");
  if (sizeBytes && *sizeBytes % kVectorBytes != 0)
    throw UsageError("--size " + std::to_string(*sizeBytes) +
                     " is not a multiple of 16 bytes (the all-reduce moves float4)");
}

std::string multicastTurnedOff(const EnvironmentLookup& lookup) {
  const auto isTrue = [](std::string value) {
    std::transform(value.begin(), value.end(), value.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return value == "1" || value == "y" || value == "yes" || value == "true" || value == "on";
  };
  std::string setting;  // "NAME=value" of the first switch that turns multicast off
  if (const char* nccl = lookup("NCCL_NVLS_ENABLE"); nccl != nullptr && std::string(nccl) == "0")
    setting = std::string("NCCL_NVLS_ENABLE=") + nccl;
  for (const char* name : {"NVSHMEM_DISABLE_NVLS", "TORCH_SYMM_MEM_DISABLE_MULTICAST"}) {
    const char* value = lookup(name);
    if (setting.empty() && value != nullptr && isTrue(value))
      setting = std::string(name) + "=" + value;
  }
  if (setting.empty())
    return "";
  return "NVLink multicast is turned off on this machine (" + setting +
         "); this sample creates multicast objects only where they are welcome";
}

std::string launchesBlock(const EnvironmentLookup& lookup) {
  if (!launchesBlockTheHost(lookup))
    return "";
  return "CUDA_LAUNCH_BLOCKING=1 makes every launch wait for its kernel, but the all-reduce "
         "kernels of all GPUs must run at once (they meet at a barrier); unset it to run this "
         "sample";
}

std::string whyNotMember(const DeviceCapability& device, int ordinal) {
  const std::string name = "device " + std::to_string(ordinal);
  if (!device.multicastSupported)
    return name + " has no multicast support (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 0)";
  if (device.computeMajor < kMinComputeMajor)
    return name + " is compute capability " + std::to_string(device.computeMajor) + "." +
           std::to_string(device.computeMinor) + "; multimem instructions need 9.0 or newer";
  if (!device.cooperativeLaunch)
    return name + " cannot launch cooperative kernels (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = "
                  "0), and the all-reduce is one";
  return computeModeProblem(ordinal, device.computeMode, DeviceUse::OneProcess);
}

namespace {

/// Whether devices @p a and @p b may each map the other's memory (cuDeviceCanAccessPeer both
/// ways), or why not.
std::string whyNotPeers(const std::vector<DeviceCapability>& devices, int a, int b) {
  const auto reaches = [&](int from, int to) {
    const std::vector<bool>& peers = devices[static_cast<std::size_t>(from)].peerAccess;
    return static_cast<std::size_t>(to) < peers.size() && peers[static_cast<std::size_t>(to)];
  };
  if (reaches(a, b) && reaches(b, a))
    return "";
  const int from = reaches(a, b) ? b : a;
  const int to = from == a ? b : a;
  return "device " + std::to_string(from) + " cannot access device " + std::to_string(to) +
         "'s memory (cuDeviceCanAccessPeer = 0), and every member maps every other member's copy";
}

}  // namespace

TeamChoice chooseTeam(const std::vector<DeviceCapability>& devices,
                      const std::vector<int>& requested, const std::optional<long long>& root) {
  const int count = static_cast<int>(devices.size());
  for (const int ordinal : requested) {
    if (ordinal < 0 || ordinal >= count)
      throw UsageError("--devices names device " + std::to_string(ordinal) +
                       ", but this machine has " + std::to_string(count) + " CUDA device" +
                       (count == 1 ? "" : "s"));
  }
  if (requested.size() > static_cast<std::size_t>(kMaxTeam))
    throw UsageError("--devices names " + std::to_string(requested.size()) +
                     " GPUs; this sample runs teams of at most " + std::to_string(kMaxTeam));
  if (root)
    (void)validateDeviceOrdinal(*root, count);

  TeamChoice choice;
  std::vector<std::string> reasons;
  // The first member that @p ordinal cannot share memory with, as the reason, or "".
  const auto whyNotPeerOfTeam = [&](int ordinal) {
    for (const int member : choice.members) {
      if (std::string why = whyNotPeers(devices, member, ordinal); !why.empty())
        return why;
    }
    return std::string();
  };
  if (requested.empty()) {
    // A root --device names is used or waives: its compute mode is the machine's, not a typo.
    if (root) {
      const int ordinal = static_cast<int>(*root);
      const int mode = devices[static_cast<std::size_t>(ordinal)].computeMode;
      const std::string why = computeModeProblem(ordinal, mode, DeviceUse::OneProcess);
      if (!why.empty()) {
        choice.waiver = why + "; --device names it";
        return choice;
      }
    }
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      std::string why = whyNotMember(devices[static_cast<std::size_t>(ordinal)], ordinal);
      if (why.empty())
        why = whyNotPeerOfTeam(ordinal);
      if (why.empty()) {
        choice.members.push_back(ordinal);
      } else {
        reasons.push_back(why);
        choice.leftOut.push_back({ordinal, why});
      }
    }
  } else {
    for (const int ordinal : requested) {
      std::string why = whyNotMember(devices[static_cast<std::size_t>(ordinal)], ordinal);
      if (why.empty())
        why = whyNotPeerOfTeam(ordinal);
      if (!why.empty()) {
        choice.members.clear();
        choice.waiver = "--devices: " + why;
        return choice;
      }
      choice.members.push_back(ordinal);
    }
  }
  if (choice.members.size() < 2) {
    std::ostringstream text;
    text << "needs two or more GPUs with multicast support (NVLink through NVSwitch) and compute "
            "capability 9.0 or newer; this machine has "
         << choice.members.size() << " of " << count;
    for (const std::string& reason : reasons)
      text << "; " << reason;
    choice.members.clear();
    choice.leftOut.clear();
    choice.waiver = text.str();
    return choice;
  }
  if (choice.members.size() > static_cast<std::size_t>(kMaxTeam))
    choice.members.resize(static_cast<std::size_t>(kMaxTeam));

  if (root) {
    if (std::find(choice.members.begin(), choice.members.end(), *root) == choice.members.end())
      throw UsageError("--device " + std::to_string(*root) +
                       " is not in the team; it must be one of the GPUs that take part");
    choice.root = static_cast<int>(*root);
  } else {
    std::vector<DeviceScore> scores;
    for (const int ordinal : choice.members)
      scores.push_back(devices[static_cast<std::size_t>(ordinal)].score);
    choice.root = choice.members[static_cast<std::size_t>(pickFastestDevice(scores))];
  }
  return choice;
}

TeamFit fitTeam(const std::vector<MemberState>& members, const std::optional<std::uint64_t>& size) {
  constexpr int kBuffers = 3;  // per GPU: its copy, the reference's scratch, the broadcast source
  TeamFit fit;

  // A required member (the root, or named by --devices) must take part: one that cannot hold a
  // context waives the run. chooseTeam() has already left out every GPU whose compute mode
  // forbids a context, so here only the driver's answer counts (no compute mode problem: "").
  std::optional<MemberState> smallestRequired;  // the required member with the least free memory
  for (const MemberState& member : members) {
    if (!member.required)
      continue;
    const ExtraGpu gpu = extraGpuOf(member, "");
    if (const std::optional<std::string> why = whyNoContext(gpu))
      throw WaivedError(*why + "; it must take part (the root, or named by --devices)");
    fit.members.push_back(member.ordinal);
    if (!smallestRequired || member.freeBytes < smallestRequired->freeBytes)
      smallestRequired = member;
  }

  // The required members size the buffer; a member nobody named must hold it as it is.
  fit.dataBytes = size.value_or(kDefaultBytes);
  if (smallestRequired) {
    const std::string where = "device " + std::to_string(smallestRequired->ordinal);
    fit.dataBytes = chooseBufferBytes(size, kDefaultBytes, smallestRequired->freeBytes, kBuffers,
                                      kVectorBytes, where);
  }

  // A member nobody named takes part only where it holds a context and the buffers fit in the
  // share chooseBufferBytes() leaves a device (80 % of its free memory): it must not shrink the
  // run.
  const BuffersPerGpu need{kBuffers, fit.dataBytes, "buffers"};
  const std::string_view hint = "name it with --devices to use it";
  for (const MemberState& member : members) {
    if (member.required)
      continue;
    const ExtraGpu gpu = extraGpuOf(member, "");
    if (const std::optional<std::string> why = whyLeftOut(gpu, need, hint))
      fit.leftOut.push_back({member.ordinal, *why});
    else
      fit.members.push_back(member.ordinal);
  }

  // Back in the order of the choice.
  const auto place = [&](int ordinal) {
    return std::find_if(members.begin(), members.end(),
                        [ordinal](const MemberState& m) { return m.ordinal == ordinal; });
  };
  std::sort(fit.members.begin(), fit.members.end(),
            [&](int a, int b) { return place(a) < place(b); });
  std::sort(fit.leftOut.begin(), fit.leftOut.end(),
            [&](const LeftOutDevice& a, const LeftOutDevice& b) {
              return place(a.ordinal) < place(b.ordinal);
            });
  if (fit.members.size() < 2) {
    std::string text = "needs two or more GPUs that can hold the buffer; " +
                       std::to_string(fit.members.size()) + " of the team's " +
                       std::to_string(members.size()) + " can";
    for (const LeftOutDevice& left : fit.leftOut)
      text += "; left out: " + left.reason;
    throw WaivedError(text);
  }
  return fit;
}

std::size_t roundUp(std::size_t bytes, std::size_t granularity) {
  if (granularity == 0)
    throw std::invalid_argument("roundUp: the granularity is 0");
  const std::size_t remainder = bytes % granularity;
  if (remainder == 0)
    return bytes;
  if (bytes > std::numeric_limits<std::size_t>::max() - (granularity - remainder))
    throw std::overflow_error("roundUp: " + std::to_string(bytes) +
                              " rounded up to a multiple of " + std::to_string(granularity) +
                              " does not fit in size_t");
  return bytes + (granularity - remainder);
}

BufferLayout planLayout(std::size_t dataBytes, std::size_t minimumGranularity,
                        std::size_t recommendedGranularity, std::size_t allocationMinimum) {
  if (allocationMinimum == 0)
    throw std::invalid_argument("planLayout: the allocation granularity is 0");
  BufferLayout layout;
  layout.dataBytes = dataBytes;
  layout.counterOffset = roundUp(dataBytes, 128);
  layout.counterBytes = kMaxBlocks * sizeof(std::uint32_t);
  const std::size_t used = layout.counterOffset + layout.counterBytes;
  layout.granularity = std::lcm(
      allocationGranularity(used, minimumGranularity, recommendedGranularity), allocationMinimum);
  layout.allocationBytes = roundUp(used, layout.granularity);
  return layout;
}

std::vector<Share> splitShares(std::uint64_t vectors, int teamSize) {
  if (teamSize < 1)
    throw std::invalid_argument("splitShares: a team of " + std::to_string(teamSize));
  const auto n = static_cast<std::uint64_t>(teamSize);
  std::vector<Share> shares;
  for (std::uint64_t g = 0; g < n; ++g) {
    // Member g starts at floor(g * vectors / n): sizes differ by at most one. The product is
    // split so that it cannot overflow for any vectors count.
    const auto start = [&](std::uint64_t k) { return vectors / n * k + vectors % n * k / n; };
    shares.push_back({start(g), start(g + 1) - start(g)});
  }
  return shares;
}

double allReduceBusFactor(int teamSize) {
  if (teamSize < 1)
    throw std::invalid_argument("allReduceBusFactor: a team of " + std::to_string(teamSize));
  return 2.0 * (teamSize - 1) / teamSize;
}

float inputValue(int member, std::uint64_t index) {
  return static_cast<float>((index * 7 + static_cast<std::uint64_t>(member) * 13) % 251 +
                            static_cast<std::uint64_t>(member));
}

float expectedSum(int teamSize, std::uint64_t index) {
  float sum = 0;
  for (int member = 0; member < teamSize; ++member)
    sum += inputValue(member, index);
  return sum;
}

float broadcastValue(std::uint64_t index) {
  return static_cast<float>(index % 1021) + 0.5f;
}

std::string describe(const Mismatch& mismatch) {
  if (mismatch.count == 0)
    return "exact";
  std::ostringstream text;
  text << "element " << mismatch.first << ": expected " << mismatch.expected << ", got "
       << mismatch.actual << " (" << mismatch.count << " wrong)";
  return text.str();
}

// [system-waiver]
std::string systemWaiver(std::string_view call, CUresult result) {
  // What each result says about the system (after the CUDA driver API reference).
  struct Meaning {
    CUresult result;
    const char* name;
    const char* says;
  };
  static const Meaning meanings[] = {
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY",
       "too few resources are left for multicast on this GPU or its NVLink fabric, which other "
       "programs share"},
      {CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY",
       "the system software that multicast needs is not initialized or not running"},
      {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED",
       "this system does not permit it here"},
      {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
       "this system does not support it as it is set up"},
  };
  // Which of them waive each call: results cuda.h documents for it that only the system can
  // cause. An out-of-memory answer waives only the creation of the object and the adding of a
  // device (fabric resources other programs share); from either bind call or cuMemMap it can
  // just as well come from a wrong size or offset of the sample, and CUDA_ERROR_ILLEGAL_STATE
  // from a binding or mapping in the wrong order, so those stay errors of the run.
  struct Documented {
    std::string_view call;
    std::vector<CUresult> results;
  };
  static const Documented documented[] = {
      {"cuMulticastGetGranularity", {CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_SUPPORTED}},
      {"cuMulticastCreate",
       {CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_SUPPORTED}},
      {"cuMulticastAddDevice",
       {CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_SUPPORTED}},
      {"cuMulticastBindMem",
       {CUDA_ERROR_SYSTEM_NOT_READY, CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_SUPPORTED}},
      {"cuMulticastBindAddr",
       {CUDA_ERROR_SYSTEM_NOT_READY, CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_SUPPORTED}},
      {"cuMemMap", {CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_SUPPORTED}},
  };
  const auto entry = std::find_if(std::begin(documented), std::end(documented),
                                  [&](const Documented& d) { return d.call == call; });
  if (entry == std::end(documented) ||
      std::find(entry->results.begin(), entry->results.end(), result) == entry->results.end())
    return "";
  const auto meaning = std::find_if(std::begin(meanings), std::end(meanings),
                                    [&](const Meaning& m) { return m.result == result; });
  return std::string(call) + " returned " + meaning->name + ": " + meaning->says +
         "; this machine cannot run the sample now";
}
// [system-waiver]

}  // namespace memsamples::multicast
