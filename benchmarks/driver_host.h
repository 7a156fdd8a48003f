// For the standalone drivers linked with the kernel sources themselves
// (gemm_skinny_driver.cc, gemm_bf16_cpu.cc): the host service the kernels
// would get from the op library (runtime/cpu/kernel_entry.h).  Include it in one
// unit per driver.
#ifndef BENCHMARKS_DRIVER_HOST_H_
#define BENCHMARKS_DRIVER_HOST_H_

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "tf_disc/runtime/cpu/kernel_entry.h"

namespace driver_host {

// The highest tier the driver lets the kernels use (a driver flag sets it
// before the first kernel call, to time one kernel path against another).
inline tf_disc::CpuTier& MaxTier() {
  static tf_disc::CpuTier cap = tf_disc::CpuTier::kAvx512Amx;
  return cap;
}

// AMX on this CPU, and Linux granted this process the tile data
// (cpu_isa.cc asks the same way for the op library).
inline bool AmxUsable() {
  static const bool usable = [] {
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) return false;
    unsigned long permitted = 0;
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0 &&
           syscall(SYS_arch_prctl, 0x1022 /* ARCH_GET_XCOMP_PERM */, &permitted) == 0 &&
           ((permitted >> 18) & 1);
  }();
  return usable;
}

inline tf_disc::CpuTier CpuTierOfThisCpu() {
  using tf_disc::CpuTier;
  if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vnni")) {
    return AmxUsable() ? CpuTier::kAvx512Amx : CpuTier::kAvx512Bf16;
  }
  if (__builtin_cpu_supports("avx512f")) return CpuTier::kAvx512;
  return __builtin_cpu_supports("avx2") ? CpuTier::kAvx2 : CpuTier::kX86_64_V2;
}

}  // namespace driver_host

// What the kernels ask the op library (kernel_entry.h); a driver, which
// times the kernels themselves, answers from the CPU: the bf16 kernel runs
// wherever it has the instructions.
bool tf_disc::HostBf16Gemm() { return HostCpuTier() >= CpuTier::kAvx512Bf16; }

tf_disc::CpuTier tf_disc::HostCpuTier() {
  return std::min(driver_host::CpuTierOfThisCpu(), driver_host::MaxTier());
}

#endif  // BENCHMARKS_DRIVER_HOST_H_
