// Test data: the Common functions the demo lessons call (declarations only, never built).
#pragma once

namespace memsamples {

void check(CUresult result, const char* call);
void checkDriverInit(CUresult result);
CUdevice selectDevice(const std::optional<long long>& requested);
std::string deviceName(CUdevice device);
std::string formatBytes(std::uint64_t bytes);
int runSample(int argc, char** argv, const std::function<int()>& body);

}  // namespace memsamples
