// Opt-in bf16 fast math for float GEMMs (option fast_math="bf16"; generated
// code sets DISC_GEMM_FAST_BF16 in rt->gemm's dtype).  A and B are rounded to
// bf16 (round to nearest even) while packing and multiplied with
// vdpbf16ps (AVX512_BF16) into fp32 accumulators; C stays fp32.  Error bound
// (README "Fast math"): |C - A B| <= (2^-7 + 2^-15 + k 2^-23) (|A| |B|).
#ifndef TF_DISC_RUNTIME_GEMM_BF16_H_
#define TF_DISC_RUNTIME_GEMM_BF16_H_

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <memory>

#include "tf_disc/runtime/gemm.h"

namespace tf_disc {

// This CPU and OS run AVX512_BF16 (cpuid and XCR0; computed once) and the
// kernel was compiled in (a compiler that knows the instructions).
bool Bf16GemmAvailable();

// Runs a float GEMM (args.dtype == DISC_DTYPE_FLOAT, validated by RunGemm)
// through the bf16 kernel on the caller's parallel-for.  Returns false, with
// nothing written, when the kernel is unavailable or the product is too
// skinny to gain (the caller then runs the fp32 path).
// Uses args.packed_b, when set, instead of packing B.
bool RunGemmBf16(const GemmArgs& args, int num_threads, const GemmParallelFor& parallel_for);

// Whether RunGemmBf16 would run the bf16 kernel for args (so that a packed B
// would be read): the kernel is available and the product is not skinny.
bool Bf16GemmApplies(const GemmArgs& args);

// B of a GEMM in the bf16 kernel's layout, all of k: 64-column groups
// `group` elements apart, batch entries of B `entry` apart (one entry when
// stride_b == 0).  Half the bytes of the fp32 operand, plus padding of k to
// a multiple of 32 and n to a multiple of 64.
struct Bf16PackedB {
  Bf16PackedB(uint16_t* data, size_t bytes, int64_t group, int64_t entry);
  // Inline: the op library frees what a kernel library packed.
  ~Bf16PackedB() { std::free(data); }
  Bf16PackedB(const Bf16PackedB&) = delete;
  Bf16PackedB& operator=(const Bf16PackedB&) = delete;
  uint16_t* const data;
  const size_t bytes;
  const int64_t group, entry;
};

// Packs args' B (read through b, ldb, stride_b, trans_b, n, k, batch) on the
// caller's parallel-for, for GEMMs whose B cannot change between calls.
// Null when the kernel is unavailable or memory is short.
std::unique_ptr<Bf16PackedB> PackBf16B(const GemmArgs& args, int num_threads,
                                       const GemmParallelFor& parallel_for);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_GEMM_BF16_H_
