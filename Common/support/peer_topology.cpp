// The devices of a machine and the links between them, asked of the driver (see
// peer_topology.hpp).
#include "support/peer_topology.hpp"

#include <string>
#include <vector>

namespace memsamples {
namespace {

std::vector<CUdevice> devicesOf(int count) {
  std::vector<CUdevice> devices(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i)
    check(cuDeviceGet(&devices[static_cast<std::size_t>(i)], i), "cuDeviceGet");
  return devices;
}

}  // namespace

DeviceTopology queryDeviceTopology() {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  const auto n = static_cast<std::size_t>(count);
  std::vector<CUdevice> devices(n);
  DeviceTopology topology;
  topology.canAccessPeer.assign(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i) {
    check(cuDeviceGet(&devices[i], static_cast<int>(i)), "cuDeviceGet");
    int vmm = 0;
    check(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                               devices[i]),
          "cuDeviceGetAttribute");
    topology.vmmSupported.push_back(vmm != 0);
  }
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      // A device always reaches its own memory; the peer query is about two different devices.
      int canAccess = a == b ? 1 : 0;
      if (a != b)
        check(cuDeviceCanAccessPeer(&canAccess, devices[a], devices[b]), "cuDeviceCanAccessPeer");
      topology.canAccessPeer[a][b] = canAccess != 0;
    }
  }
  return topology;
}

LinkMatrix queryPeerLinks(int deviceCount) {
  const std::vector<CUdevice> devices = devicesOf(deviceCount);
  const std::size_t count = devices.size();
  LinkMatrix links(count, std::vector<LinkAttributes>(count));
  for (std::size_t owner = 0; owner < count; ++owner) {
    for (std::size_t accessor = 0; accessor < count; ++accessor) {
      if (owner == accessor)
        continue;  // CUDA_ERROR_INVALID_DEVICE for a device paired with itself
      LinkAttributes& link = links[owner][accessor];
      const auto ask = [&](CUdevice_P2PAttribute attribute, const char* name) {
        int value = 0;
        const CUresult answer =
            cuDeviceGetP2PAttribute(&value, attribute, devices[accessor], devices[owner]);
        if (answer != CUDA_SUCCESS && link.failure.empty())
          link.failure =
              std::string("cuDeviceGetP2PAttribute(") + name + "): " + describeResult(answer);
        return value;
      };
      link.performanceRank = ask(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, "PERFORMANCE_RANK");
      link.accessSupported = ask(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, "ACCESS_SUPPORTED") != 0;
      link.nativeAtomics =
          ask(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, "NATIVE_ATOMIC_SUPPORTED") != 0;
    }
  }
  return links;
}

}  // namespace memsamples
