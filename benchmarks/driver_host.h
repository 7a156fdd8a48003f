// For the standalone drivers linked with the kernel sources themselves
// (gemm_skinny_driver.cc, gemm_bf16_cpu.cc): the host service the kernels
// would get from the op library (runtime/kernel_entry.h).  Include it in one
// unit per driver.
#ifndef BENCHMARKS_DRIVER_HOST_H_
#define BENCHMARKS_DRIVER_HOST_H_

#include "tf_disc/runtime/kernel_entry.h"

// What the kernels ask the op library (kernel_entry.h); a driver, which
// times the kernels themselves, answers from the CPU: the bf16 kernel runs
// wherever it has the instructions.
bool tf_disc::HostBf16Gemm() { return __builtin_cpu_supports("avx512bf16"); }

tf_disc::CpuTier tf_disc::HostCpuTier() {
  if (HostBf16Gemm() && __builtin_cpu_supports("avx512vnni")) return CpuTier::kAvx512Bf16;
  if (__builtin_cpu_supports("avx512f")) return CpuTier::kAvx512;
  return __builtin_cpu_supports("avx2") ? CpuTier::kAvx2 : CpuTier::kX86_64_V2;
}

#endif  // BENCHMARKS_DRIVER_HOST_H_
