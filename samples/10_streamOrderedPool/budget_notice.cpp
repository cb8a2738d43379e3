// 10_streamOrderedPool's over-budget notifications (see budget_notice.hpp).
#include "budget_notice.hpp"

#include "memsamples.hpp"

namespace ms = memsamples;

namespace pool_budget {

// [budget-callback]
void onNotification(CUasyncNotificationInfo* info, void* userData,
                    CUasyncCallbackHandle /*callback: tells several registrations apart*/) {
  auto& notices = *static_cast<Notices*>(userData);

  // cuda.h: the type must be checked before the info union is read.
  if (info->type != CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET) {
    notices.otherTypes.fetch_add(1);
    return;
  }
  notices.overBudget.fetch_add(1);

  // The largest excess so far: replaced only by a larger one, even when two callbacks race.
  const std::uint64_t over = info->info.overBudget.bytesOverBudget;
  std::uint64_t most = notices.mostBytesOver.load();
  while (over > most && !notices.mostBytesOver.compare_exchange_weak(most, over)) {
  }
}
// [budget-callback]

Watch::~Watch() {
  if (handle_ != nullptr)
    (void)cuDeviceUnregisterAsyncNotification(device_, handle_);
}

void Watch::start() {
  // The handle is kept only once the registration succeeded: after a refusal there is
  // nothing for the destructor to unregister.
  CUasyncCallbackHandle handle = nullptr;
  const CUresult answer =
      cuDeviceRegisterAsyncNotification(device_, onNotification, &notices_, &handle);
  if (answer == CUDA_ERROR_NOT_SUPPORTED) {
    refusal_ = answer;
    return;
  }
  ms::check(answer, "cuDeviceRegisterAsyncNotification");
  handle_ = handle;
  registered_ = true;
}

void Watch::stop() {
  if (handle_ == nullptr)
    return;
  ms::check(cuDeviceUnregisterAsyncNotification(device_, handle_),
            "cuDeviceUnregisterAsyncNotification");
  handle_ = nullptr;
}

pool_verdict::BudgetReport Watch::report() const {
  pool_verdict::BudgetReport report;
  report.registered = registered_;
  if (refusal_ != CUDA_SUCCESS)
    report.refusal = ms::describeResult(refusal_);
  report.overBudget = notices_.overBudget.load();
  report.mostBytesOver = notices_.mostBytesOver.load();
  report.otherTypes = notices_.otherTypes.load();
  return report;
}

}  // namespace pool_budget
