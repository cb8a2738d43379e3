// A fake pool for pool_attributes.cpp's link-seam test: attribute values and the calls made.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fake_pool {

struct Driver {
  CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(0x1000);  ///< The one pool it knows.
  std::map<CUmemPool_attribute, cuuint64_t> counters;  ///< Threshold and the four counters.
  std::map<CUmemPool_attribute, int> rules;            ///< The three reuse rules.
  /// An attribute whose get and set fail with CUDA_ERROR_INVALID_VALUE (default: none).
  std::optional<CUmemPool_attribute> failAttribute;
  std::vector<std::pair<CUmemoryPool, CUmemPool_attribute>> gets;  ///< Every get, in order.
  std::vector<std::pair<CUmemoryPool, CUmemPool_attribute>> sets;  ///< Every set, in order.

  // Step 8 (other_pools.cpp): pools made, access asked, memory used.
  CUresult createAnswer = CUDA_SUCCESS;  ///< What cuMemPoolCreate answers.
  CUresult accessAnswer = CUDA_SUCCESS;  ///< What cuMemPoolSetAccess answers (a refusal).
  int hostPoolsSupported = 1;            ///< CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED.
  std::uint32_t wrongWords = 0;          ///< Words the "device" leaves unwritten by a memset.
  int poolsCreated = 0;                  ///< cuMemPoolCreate successes.
  int poolsDestroyed = 0;                ///< cuMemPoolDestroy calls.
  std::vector<std::string> calls;        ///< Every step-8 call, by name, in order.
  std::vector<std::uint32_t> memory;     ///< The one block cuMemAllocFromPoolAsync hands out.

  // Step 2's over-budget watch (budget_notice.cpp): what was registered and unregistered.
  CUresult registerAnswer = CUDA_SUCCESS;    ///< What cuDeviceRegisterAsyncNotification answers.
  CUresult unregisterAnswer = CUDA_SUCCESS;  ///< What cuDeviceUnregisterAsyncNotification answers.
  CUasyncCallback callback = nullptr;        ///< The registered callback, while registered.
  void* userData = nullptr;                  ///< Its user data.
  CUdevice registeredDevice = -1;            ///< The device it was registered for.
  /// The handle a registration returns (never dereferenced).
  CUasyncCallbackHandle handle = reinterpret_cast<CUasyncCallbackHandle>(0x2000);
  /// Every unregister: the device and handle asked for.
  std::vector<std::pair<CUdevice, CUasyncCallbackHandle>> unregistered;
};

Driver& driver();  ///< The fake; tests assign `driver() = Driver{}` to start clean.

/// True when @p name was called.
bool called(const std::string& name);

/// Delivers a notification as the driver would, to the registered callback (if any).
void notify(CUasyncNotificationInfo info);

}  // namespace fake_pool
