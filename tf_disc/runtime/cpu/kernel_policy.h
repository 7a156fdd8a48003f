// The runtime kernels' policy: which kernel path a GEMM or convolution takes
// where more than one computes the same result.  The defaults are the
// product's; benchmarks and tests change it for a block through
// blade_disc_tf.kernel_policy (bridge/disc_bridge.h DiscSetKernelPolicy) to time
// or check one path against another in one process.  Never read from the
// environment.
//
// The op library owns the policy (kernel_policy.cc); a per-tier kernel
// library reads the same word through its KernelHost (kernel_table.h,
// kernel_host.cc), so both see one policy.
#ifndef TF_DISC_RUNTIME_CPU_KERNEL_POLICY_H_
#define TF_DISC_RUNTIME_CPU_KERNEL_POLICY_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace tf_disc {

// A kernel path the runtime picks per product by its shape (kAuto), or one
// forced off or on (where the path supports the product).
enum class PathChoice : int32_t { kAuto = 0, kOff = 1, kOn = 2 };

// The skinny float GEMM kernel (gemm_skinny.h) for products with few rows.
enum class SkinnyGemm : int32_t {
  kOn = 0,        // the narrow tile for m <= 32, the wide one above
  kOff = 1,       // Eigen for skinny products too
  kWideTile = 2,  // the wide tile for every m
};

struct KernelPolicy {
  SkinnyGemm skinny_gemm = SkinnyGemm::kOn;
  // GEMM epilogues applied on the kernels' tiles; false: a second pass over
  // C after the product (which also runs merged GEMMs one at a time).
  bool gemm_epilogue_fusion = true;
  // The direct convolution kernel (conv_direct.h); false: im2col + GEMM.
  bool direct_conv = true;
  // col2im for transposed convolutions (conv_transpose.cc) instead of the
  // per-phase convolutions; kAuto: by shape and threads.
  PathChoice conv_transpose_col2im = PathChoice::kAuto;
  // The packed float GEMM kernel (gemm_packed.h); kAuto: by shape, kOff:
  // Eigen for every non-skinny float product, kOn: the kernel for all.
  PathChoice packed_gemm = PathChoice::kAuto;
  // Float weights (transposed B) packed once and kept (packed_weights.h);
  // false: packed on every call.  packed_gemm kOff implies false.
  bool prepack_weights = true;
  // Merged GEMMs (RunGemmMulti) in one skinny region; false: one by one.
  bool multi_gemm = true;
  // fast_math="bf16"'s bf16 GEMM kernel; kAuto: where it pays (cpu_isa.h
  // Bf16GemmPays), kOn: wherever the selected tier has AVX512_BF16, kOff:
  // never (fp32 instead).
  PathChoice bf16_gemm = PathChoice::kAuto;
  // Threads of the library kernels: 0 the intra-op pool's, 1 one thread
  // (the deliberately slowed policy the self-guard is measured against).
  int32_t kernel_threads = 0;
};

// The policy in force: one atomic load, cheap enough for every product.
KernelPolicy CurrentKernelPolicy();

// The fields in declaration order as int32s (enums by value, flags 0 / 1):
// the layout of bridge/disc_bridge.h DiscKernelPolicy.
constexpr int kKernelPolicyFieldCount = 9;
using KernelPolicyFields = std::array<int32_t, kKernelPolicyFieldCount>;

inline KernelPolicyFields ToFields(const KernelPolicy& p) {
  return {static_cast<int32_t>(p.skinny_gemm), p.gemm_epilogue_fusion, p.direct_conv,
          static_cast<int32_t>(p.conv_transpose_col2im), static_cast<int32_t>(p.packed_gemm),
          p.prepack_weights, p.multi_gemm, static_cast<int32_t>(p.bf16_gemm),
          p.kernel_threads};
}

// The inverse of ToFields for fields in range (CheckKernelPolicyFields).
inline KernelPolicy FromFields(const KernelPolicyFields& f) {
  KernelPolicy p;
  p.skinny_gemm = static_cast<SkinnyGemm>(f[0]);
  p.gemm_epilogue_fusion = f[1] != 0;
  p.direct_conv = f[2] != 0;
  p.conv_transpose_col2im = static_cast<PathChoice>(f[3]);
  p.packed_gemm = static_cast<PathChoice>(f[4]);
  p.prepack_weights = f[5] != 0;
  p.multi_gemm = f[6] != 0;
  p.bf16_gemm = static_cast<PathChoice>(f[7]);
  p.kernel_threads = f[8];
  return p;
}

// The policy packed into one word, so that it is read and replaced as one
// snapshot: the first eight fields 4 bits each, kernel_threads in the top 32.
inline uint64_t PackKernelPolicy(const KernelPolicy& p) {
  const KernelPolicyFields f = ToFields(p);
  uint64_t word = static_cast<uint64_t>(static_cast<uint32_t>(f[8])) << 32;
  for (int i = 0; i < 8; ++i) word |= static_cast<uint64_t>(f[i] & 0xf) << (4 * i);
  return word;
}

inline KernelPolicy UnpackKernelPolicy(uint64_t word) {
  KernelPolicyFields f;
  for (int i = 0; i < 8; ++i) f[i] = static_cast<int32_t>((word >> (4 * i)) & 0xf);
  f[8] = static_cast<int32_t>(word >> 32);
  return FromFields(f);
}

// The op library's side (kernel_policy.cc).

// Whether every field is in range; else false with *error naming the first
// field that is not.
bool CheckKernelPolicyFields(const KernelPolicyFields& fields, std::string* error);

// Replaces the policy; false (policy unchanged) with *error naming the first
// field out of range.
bool SetKernelPolicy(const KernelPolicy& policy, std::string* error);

// The word CurrentKernelPolicy reads, for the kernel libraries' host.
const std::atomic<uint64_t>* KernelPolicyWord();

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_KERNEL_POLICY_H_
