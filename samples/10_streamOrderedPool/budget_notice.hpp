/**
 * @file budget_notice.hpp
 * @brief 10_streamOrderedPool's watch over the process's device memory budget: a callback that
 *        the driver calls with CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET, registered for the whole
 *        run (cuDeviceRegisterAsyncNotification) and unregistered at the end
 *        (cuDeviceUnregisterAsyncNotification). Unit tested against a fake driver (a link seam).
 *
 * cuda.h: the notification is "sent when the process has exceeded its device memory budget",
 * with the bytes allocated above it. The callback runs on a driver thread, "should be designed
 * to return quickly (~10ms)", and may not register or unregister callbacks itself. So it only
 * counts, in atomics that the lesson's thread reads after the unregister.
 */
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "pool_verdict.hpp"

namespace pool_budget {

/// What the callback has seen. It writes on the driver's thread while the lesson runs on its
/// own, so every member is atomic.
struct Notices {
  std::atomic<std::uint64_t> overBudget{0};     ///< Over-budget notifications.
  std::atomic<std::uint64_t> mostBytesOver{0};  ///< The largest bytesOverBudget among them.
  std::atomic<std::uint64_t> otherTypes{0};     ///< Notifications of a type cuda.h 13.0 lacks.
};

/**
 * The callback (a CUasyncCallback): counts an over-budget notification and keeps the largest
 * bytesOverBudget, or counts a notification of another type, in the Notices that @p userData
 * points to. Calls no driver function, takes no lock, returns at once.
 */
void onNotification(CUasyncNotificationInfo* info, void* userData,
                    CUasyncCallbackHandle callback);

/**
 * A registration of onNotification for one device. Its destructor unregisters it (answer
 * ignored) where the good path did not: an error path. The Notices must outlive it.
 */
class Watch {
 public:
  /// Nothing registered yet, for @p device, counting into @p notices.
  Watch(CUdevice device, Notices& notices) noexcept : device_(device), notices_(notices) {}
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  /**
   * Registers onNotification (cuDeviceRegisterAsyncNotification). CUDA_ERROR_NOT_SUPPORTED is
   * one of the answers cuda.h lists for the call: then nothing is registered, the answer is
   * kept for the report and the run goes on. @throws memsamples::CudaError for any other error.
   */
  void start();

  /// Unregisters (cuDeviceUnregisterAsyncNotification, checked) where start() registered.
  /// @throws memsamples::CudaError.
  void stop();

  /// What the watch saw, for pool_verdict::budgetLine(): read after stop().
  pool_verdict::BudgetReport report() const;

 private:
  CUdevice device_;
  Notices& notices_;
  CUasyncCallbackHandle handle_ = nullptr;  // set while registered
  bool registered_ = false;                 // start() registered (stop() may have since)
  CUresult refusal_ = CUDA_SUCCESS;         // CUDA_ERROR_NOT_SUPPORTED where refused
};

}  // namespace pool_budget
