// The team of the multicastReduce lesson (see multicast_team.hpp): who takes part, and each
// member's context, stream and kernels. The measurements are in multicastReduce_measure.cpp.
#include "multicast_team.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "support/devices.hpp"

namespace memsamples::multicast {

// [team]
TeamChoice findTeam(const Options& options) {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::vector<CUdevice> handles(static_cast<std::size_t>(count));
  for (int ordinal = 0; ordinal < count; ++ordinal)
    check(cuDeviceGet(&handles[static_cast<std::size_t>(ordinal)], ordinal), "cuDeviceGet");

  std::vector<DeviceCapability> devices(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const CUdevice device = handles[i];
    DeviceCapability& capability = devices[i];
    int multicast = 0;  // switch multicast and reductions: NVLink through an NVSwitch
    check(cuDeviceGetAttribute(&multicast, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, device),
          "cuDeviceGetAttribute");
    capability.multicastSupported = multicast != 0;
    capability.computeMajor = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    capability.computeMinor = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    capability.score = {deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                        deviceAttribute(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)};
    capability.cooperativeLaunch =
        deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) != 0;
    // PROHIBITED admits no context: such a GPU is left out unless the options name it.
    capability.computeMode = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    // Each member's copy is mapped for every other member (cuMemSetAccess of the unicast
    // mapping), which needs peer access both ways.
    capability.peerAccess.assign(handles.size(), false);
    for (std::size_t j = 0; j < handles.size(); ++j) {
      int canAccess = 0;
      if (j != i)
        check(cuDeviceCanAccessPeer(&canAccess, device, handles[j]), "cuDeviceCanAccessPeer");
      capability.peerAccess[j] = canAccess != 0;
    }
  }
  const TeamChoice choice = chooseTeam(devices, options.devices, options.common.device);
  if (!choice.waiver.empty())
    throw WaivedError(choice.waiver);

  // Before any multicast call: the object lives in the NVSwitch fabric that every GPU of the
  // host shares, so where its owner has turned NVLink multicast off for NCCL, NVSHMEM or PyTorch,
  // it is off for this sample too; and the all-reduce cannot run where launches block the host.
  for (const std::string& why :
       {multicastTurnedOff(processEnvironment), launchesBlock(processEnvironment)}) {
    if (!why.empty())
      throw WaivedError(why);
  }
  return choice;
}
// [team]

void checkOrWaive(CUresult result, const char* call, const char* file, int line) {
  if (result == CUDA_SUCCESS)
    return;
  const std::string waiver = systemWaiver(call, result);
  if (!waiver.empty())
    throw WaivedError(waiver);
  check(result, call, file, line);
}

namespace {

/// @p device's primary context, retained; or, for a member that need not take part and that the
/// driver refuses as busy (CUDA_ERROR_DEVICE_UNAVAILABLE: another process holds it in
/// EXCLUSIVE_PROCESS mode; CUDA_ERROR_OUT_OF_MEMORY), nothing, with the answer in @p state.
std::optional<PrimaryContext> retainUnlessBusy(CUdevice device, MemberState& state) {
  try {
    return PrimaryContext(device);
  } catch (const CudaError& error) {
    const CUresult result = error.result();
    const bool busy = result == CUDA_ERROR_DEVICE_UNAVAILABLE || result == CUDA_ERROR_OUT_OF_MEMORY;
    if (!busy || state.required)
      throw;
    state.contextRefused = error.what();
    return std::nullopt;
  }
}

}  // namespace

Team::Team(const TeamChoice& choice, const Options& options, Report& report)
    : options_(options), report_(report), memory(choice.members.size()) {
  std::ostream& out = report_.out();
  JsonObject& json = report_.json();

  // Who of the team can hold the buffer: each member's primary context and its free memory. A
  // member nobody named that is busy or short of memory is left out (fitTeam()), and says why.
  std::vector<MemberState> states;
  std::vector<std::optional<PrimaryContext>> retained;
  for (const int ordinal : choice.members) {
    MemberState& state = states.emplace_back();
    state.ordinal = ordinal;
    state.required = !options.devices.empty() || ordinal == choice.root;
    CUdevice device = 0;
    check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
    state.computeMode = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    std::optional<PrimaryContext>& context = retained.emplace_back(retainUnlessBusy(device, state));
    if (context) {
      const ScopedContext current(context->get());
      std::size_t freeHere = 0;
      std::size_t total = 0;
      check(cuMemGetInfo(&freeHere, &total), "cuMemGetInfo");
      state.freeBytes = freeHere;
    }
  }
  const TeamFit fit = fitTeam(states, options.sizeBytes);
  JsonArray jsonLeftOut;
  for (const std::vector<LeftOutDevice>* list : {&choice.leftOut, &fit.leftOut}) {
    for (const LeftOutDevice& left : *list) {
      out << "Left out: " << left.reason << '\n';
      JsonObject item;
      jsonLeftOut.addRaw(item.set("device", left.ordinal).set("reason", left.reason).dump());
    }
  }
  json.set("devices_left_out", jsonLeftOut);

  const std::size_t n = fit.members.size();
  members.reserve(n);
  contexts_.reserve(n);
  std::size_t allocationMinimum = 1;
  for (std::size_t i = 0; i < choice.members.size(); ++i) {
    const int ordinal = choice.members[i];
    if (std::find(fit.members.begin(), fit.members.end(), ordinal) == fit.members.end())
      continue;  // left out: its retain, if any, is released with `retained`
    Member& member = members.emplace_back();
    member.ordinal = ordinal;
    check(cuDeviceGet(&member.device, ordinal), "cuDeviceGet");
    member.context = contexts_.emplace_back(std::move(*retained[i])).get();
    if (ordinal == choice.root)
      root = members.size() - 1;
    member.allocation.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    member.allocation.location = {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
    member.access = {member.allocation.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    everyMember.push_back(member.access);

    // The granularity of cuMemCreate there: each copy is also an ordinary VMM allocation on
    // its GPU.
    const ScopedContext current(member.context);
    std::size_t granularity = 0;
    check(cuMemGetAllocationGranularity(&granularity, &member.allocation,
                                        CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity");
    allocationMinimum = std::lcm(allocationMinimum, granularity);
    out << "Device " << ordinal << ": " << deviceName(member.device)
        << (ordinal == choice.root ? " (broadcasts)" : "") << '\n';
  }
  allocationMinimum_ = allocationMinimum;
  rootCurrent_.emplace(members[root].context);

  // Per GPU: its copy, the copy-engine reference's scratch, and (the root) the broadcast source,
  // sized by fitTeam(); and one check buffer on the host.
  layout.dataBytes = fitHostMemory(options.sizeBytes, fit.dataBytes, 1, kVectorBytes);
  host_.resize(layout.dataBytes / sizeof(float));
  vectors = layout.dataBytes / kVectorBytes;
  shares = splitShares(vectors, static_cast<int>(n));

  // A stream and the kernels in every member's context. One grid for all: the barrier pairs
  // block b of each GPU with block b of the others, so every block must be resident at once
  // (the all-reduce is launched cooperatively, and the driver refuses a grid that would not be).
  const std::vector<char> fatbin = readBinaryFile(locateFatbin("multicast_kernel.fatbin"));
  grid = kMaxBlocks;
  modules_.reserve(n);
  streams_.reserve(n);
  for (Member& member : members) {
    const ScopedContext current(member.context);
    ContextStream& stream = streams_.emplace_back(member.context);
    check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    member.stream = stream.get();
    ContextModule& module = modules_.emplace_back(member.context);
    check(cuModuleLoadData(module.out(), fatbin.data()), "cuModuleLoadData");
    Kernels& k = member.kernels;
    check(cuModuleGetFunction(&k.broadcast, module.get(), "Multimem_broadcast_kernel"),
          "cuModuleGetFunction");
    check(cuModuleGetFunction(&k.allReduce, module.get(), "Multimem_allreduce_kernel"),
          "cuModuleGetFunction");
    check(cuModuleGetFunction(&k.peerReduce, module.get(), "Peer_allreduce_kernel"),
          "cuModuleGetFunction");
    check(cuModuleGetFunction(&k.addParts, module.get(), "Add_parts_kernel"),
          "cuModuleGetFunction");
    grid = std::min(grid, residentGridSize(k.allReduce, member.device, static_cast<int>(block)));
  }

  // The broadcast's source, on the root.
  const Member& rootMember = members[root];
  const ScopedContext current(rootMember.context);
  source_.emplace(rootMember.context);
  check(cuMemAlloc(source_->out(), layout.dataBytes), "cuMemAlloc");
  source = source_->get();
  for (std::size_t i = 0; i < host_.size(); ++i)
    host_[i] = broadcastValue(i);
  check(cuMemcpyHtoDAsync(source, host_.data(), layout.dataBytes, rootMember.stream),
        "cuMemcpyHtoDAsync");
  check(cuStreamSynchronize(rootMember.stream), "cuStreamSynchronize");
}

Team::~Team() = default;

std::size_t Team::roundToGranularity(std::size_t minimum, std::size_t recommended) {
  layout = planLayout(layout.dataBytes, minimum, recommended, allocationMinimum_);
  report_.out() << "Multicast object: " << members.size() << " GPUs, "
                << formatBytes(layout.allocationBytes) << " per GPU (granularity: minimum "
                << formatBytes(minimum) << ", recommended " << formatBytes(recommended)
                << ", used " << formatBytes(layout.granularity) << ")\n";
  return layout.allocationBytes;
}

void Team::prepareAllReduce() {
  for (const Member& member : members) {
    const ScopedContext current(member.context);
    check(cuMemsetD32Async(member.unicast + layout.counterOffset, 0, kMaxBlocks, member.stream),
          "cuMemsetD32Async");
  }
  uploadInputs();  // on the same streams, which it waits for
}

void Team::uploadInputs() {
  for (std::size_t g = 0; g < members.size(); ++g) {
    for (std::size_t i = 0; i < host_.size(); ++i)
      host_[i] = inputValue(static_cast<int>(g), i);
    const ScopedContext current(members[g].context);
    check(cuMemcpyHtoDAsync(members[g].unicast, host_.data(), layout.dataBytes, members[g].stream),
          "cuMemcpyHtoDAsync");
    check(cuStreamSynchronize(members[g].stream), "cuStreamSynchronize");  // host_ is reused
  }
}

Mismatch Team::checkCopies(Expect expected) {
  const int n = static_cast<int>(members.size());
  const auto sum = [n](std::uint64_t i) { return expectedSum(n, i); };
  for (const Member& member : members) {
    const ScopedContext current(member.context);
    check(cuMemcpyDtoHAsync(host_.data(), member.unicast, layout.dataBytes, member.stream),
          "cuMemcpyDtoHAsync");
    check(cuStreamSynchronize(member.stream), "cuStreamSynchronize");
    const Mismatch mismatch = expected == Expect::broadcastSource
                                  ? compareExactly(host_.data(), host_.size(), broadcastValue)
                                  : compareExactly(host_.data(), host_.size(), sum);
    if (mismatch.count > 0)
      return mismatch;
  }
  return {};
}

void Team::synchronizeAll() const {
  for (const Member& member : members) {
    const ScopedContext current(member.context);
    check(cuStreamSynchronize(member.stream), "cuStreamSynchronize");
  }
}

void Team::runOnTeam(const MemberWork& work) const {
  for (std::size_t g = 0; g < members.size(); ++g) {
    const ScopedContext current(members[g].context);
    work(g);
  }
  synchronizeAll();
}

}  // namespace memsamples::multicast
