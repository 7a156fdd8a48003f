// The entry point of a per-tier kernel library (kernel_table.h).
#include "tf_disc/runtime/cpu/conv_bf16.h"
#include "tf_disc/runtime/cpu/cpu_isa.h"
#include "tf_disc/runtime/cpu/gemm.h"
#include "tf_disc/runtime/cpu/gemm_bf16.h"
#include "tf_disc/runtime/cpu/gemm_packed.h"
#include "tf_disc/runtime/cpu/kernel_entry.h"
#include "tf_disc/runtime/cpu/kernel_table.h"
#include "tf_disc/runtime/cpu/window.h"

// The tier this library is compiled for, from the -march its build gives
// (sources.json "kernel_tiers"): the loader checks it is the one it asked for.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512DQ__)
#define DISC_KERNEL_TIER "avx512"
#elif defined(__AVX2__) && defined(__FMA__)
#define DISC_KERNEL_TIER "avx2"
#else
#define DISC_KERNEL_TIER "x86-64-v2"
#endif

extern "C" __attribute__((visibility("default"))) const tf_disc::KernelTable*
disc_kernel_table_v1(const tf_disc::KernelHost* host) {
  using namespace tf_disc;  // NOLINT
  if (host == nullptr || host->abi_version != kKernelAbiVersion) return nullptr;
  SetKernelHost(host);
  static const KernelTable table = {
      kKernelAbiVersion, DISC_KERNEL_TIER,     &RunGemm,   &RunGemmMulti,
      &RunWindow,        &RunWindowFastBf16,   &ConvBf16Applies,
      &Bf16GemmApplies,  &PrepackedFp32Applies, &PackBf16B, &PackFp32B,
  };
  return &table;
}
