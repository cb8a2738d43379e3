// A hand-written seccomp filter (classic BPF, no libseccomp) that makes chosen system calls fail
// with an errno: seccomp_test.cpp installs it in forked children, no_numa_exec.cpp before it
// starts a sample. PR_SET_NO_NEW_PRIVS lets an unprivileged process install it.
#pragma once

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memsamples::numa_test {

#if defined(__x86_64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr std::uint32_t kAuditArch = 0;  // the tests skip themselves
#endif


/// Installs "every call in @p blocked returns -1 with errno @p error, everything else is allowed"
/// on this thread. Returns 0 or the errno of the prctl that failed.
inline int blockCalls(const std::vector<std::uint32_t>& blocked, int error) {
  std::vector<sock_filter> program = {
      // A call from another architecture (e.g. a 32-bit ABI) has other numbers: allow it.
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
  };
  // One comparison per call; a match jumps over the rest and the ALLOW to the ERRNO return.
  for (std::size_t i = 0; i < blocked.size(); ++i) {
    const auto skip = static_cast<unsigned char>(blocked.size() - i);
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, blocked[i], skip, 0));
  }
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  program.push_back(BPF_STMT(
      BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(error) & SECCOMP_RET_DATA)));
  sock_fprog filter = {static_cast<unsigned short>(program.size()), program.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return errno;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) != 0)
    return errno;
  return 0;
}

/// Only mbind: a filter narrower than Docker's.
inline const std::vector<std::uint32_t> kMbindOnly = {__NR_mbind};
/// What Docker's default seccomp profile refuses (EPERM) to a container without CAP_SYS_NICE:
/// get_mempolicy, mbind and set_mempolicy; move_pages and migrate_pages are not allowed at all.
inline const std::vector<std::uint32_t> kDockerDefault = {
    __NR_get_mempolicy, __NR_mbind, __NR_set_mempolicy, __NR_move_pages, __NR_migrate_pages};

}  // namespace memsamples::numa_test
