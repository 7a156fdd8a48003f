// Opt-in bf16 fast math for float GEMMs (option fast_math="bf16"; generated
// code sets DISC_GEMM_FAST_BF16 in rt->gemm's dtype).  A and B are rounded to
// bf16 (round to nearest even) while packing and multiplied with
// vdpbf16ps (AVX512_BF16) into fp32 accumulators; C stays fp32.  Error bound
// (README "Fast math"): |C - A B| <= (2^-7 + 2^-15 + k 2^-23) (|A| |B|).
#ifndef TF_DISC_RUNTIME_CPU_GEMM_BF16_H_
#define TF_DISC_RUNTIME_CPU_GEMM_BF16_H_

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <memory>

#include "tf_disc/runtime/cpu/gemm.h"

// Only the avx512 kernel library (kernel_table.h) has the kernel: lower
// tiers' libraries hold no AVX-512 code at all.
#if defined(__x86_64__) && defined(__AVX512F__) && \
    (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 10))
#define DISC_BF16_KERNEL 1
#endif

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

// Whether RunGemmBf16 would run the bf16 kernel for args with B packed (so
// that a packed B would be read): the kernel is available and the product
// is not too skinny for it (any rows on AMX, kMinRows for VDPBF16PS).
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

#ifdef DISC_BF16_KERNEL
// For callers that build A rows themselves (conv_bf16.cc).

// dst[0, n) = bf16(src[0, n)), round to nearest even.
void ConvertToBf16(const float* src, int64_t n, uint16_t* dst);

// Single-threaded: columns [c0, c1) of C rows [0, rows) (c: row 0's
// column 0, rows ldc apart) = A B, A given as bf16 rows `a_row` elements
// apart (a_row a multiple of 32; each row k values then zeros up to a_row),
// B packed by PackBf16B for this k (one batch entry); c0 a multiple of 64.
void Bf16RowsTimesPackedB(const uint16_t* a, int64_t a_row, int64_t rows, int64_t k,
                          const Bf16PackedB& b, int64_t c0, int64_t c1, float* c, int64_t ldc);
#endif  // DISC_BF16_KERNEL

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_GEMM_BF16_H_
