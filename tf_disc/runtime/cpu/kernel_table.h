// The boundary between the portable op library and its per-ISA kernel
// libraries (libblade_disc_tf_kernels_<tier>.so, one per CPU tier of
// cpu_isa.h).  The hot kernels (GEMMs, convolutions, pooling) are compiled
// once per tier with that tier's -march, linked into their own shared
// library that exports only disc_kernel_table_v1 (kernel_library.map), and
// loaded with RTLD_LOCAL by kernel_dispatch.cc: every inline function and
// template they instantiate (Eigen, libstdc++) stays inside that library,
// so no tier's vector code can be picked by the linker for another tier or
// for the portable code.
//
// A kernel library needs nothing from the op library but what KernelHost
// passes in; the table's functions are the ones gemm.h, gemm_bf16.h,
// gemm_packed.h and window.h declare, as compiled for the tier.
#ifndef TF_DISC_RUNTIME_CPU_KERNEL_TABLE_H_
#define TF_DISC_RUNTIME_CPU_KERNEL_TABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm.h"
#include "tf_disc/runtime/cpu/gemm_bf16.h"
#include "tf_disc/runtime/cpu/gemm_packed.h"

namespace tf_disc {

// Bumped whenever KernelHost, KernelTable or the argument structs change:
// a library of another version is refused (and the next tier down tried).
constexpr int32_t kKernelAbiVersion = 6;

struct KernelHost {
  int32_t abi_version;
  // cpu_isa.h SelectedCpuTier(): what the kernels may use.
  int32_t tier;
  // cpu_isa.h Bf16GemmPays(): fast math runs the bf16 kernel.
  int32_t bf16_gemm;
  // kernel_policy.h KernelPolicyWord(): the policy in force, packed.
  const std::atomic<uint64_t>* kernel_policy;
};

struct KernelTable {
  int32_t abi_version;
  // The tier the library was compiled for (cpu_isa.h CpuTierName).
  const char* tier;
  bool (*run_gemm)(const GemmArgs& args, int num_threads, void* eigen_pool,
                   const GemmParallelFor& parallel_for, std::string* error);
  bool (*run_gemm_multi)(const GemmArgs* parts, int num_parts, int num_threads,
                         void* eigen_pool, const GemmParallelFor& parallel_for,
                         std::string* error);
  bool (*run_window)(const DiscWindowArgs& args, int num_threads, void* eigen_pool,
                     const GemmParallelFor& parallel_for, std::string* error);
  bool (*run_window_fast_bf16)(const DiscWindowArgs& args, const Bf16PackedB* packed_filter,
                               int num_threads, void* eigen_pool,
                               const GemmParallelFor& parallel_for, std::string* error);
  bool (*conv_bf16_applies)(const DiscWindowArgs& args);
  bool (*bf16_gemm_applies)(const GemmArgs& args);
  bool (*prepacked_fp32_applies)(const GemmArgs& args);
  std::unique_ptr<Bf16PackedB> (*pack_bf16_b)(const GemmArgs& args, int num_threads,
                                              const GemmParallelFor& parallel_for);
  std::unique_ptr<Fp32PackedB> (*pack_fp32_b)(const GemmArgs& args, int num_threads,
                                              const GemmParallelFor& parallel_for);
};

}  // namespace tf_disc

extern "C" {
// The one symbol a kernel library exports.  Called once, with a host that
// outlives the library; returns the library's table (static storage).
typedef const tf_disc::KernelTable* (*DiscKernelTableFn)(const tf_disc::KernelHost* host);
}

#define DISC_KERNEL_TABLE_SYMBOL "disc_kernel_table_v1"

#endif  // TF_DISC_RUNTIME_CPU_KERNEL_TABLE_H_
