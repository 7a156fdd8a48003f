// Opt-in bf16 fast math for float GEMMs (option fast_math="bf16"; generated
// code sets DISC_GEMM_FAST_BF16 in rt->gemm's dtype).  A and B are rounded to
// bf16 (round to nearest even) while packing and multiplied with
// vdpbf16ps (AVX512_BF16) into fp32 accumulators; C stays fp32.  Error bound
// (README "Fast math"): |C - A B| <= (2^-7 + 2^-15 + k 2^-23) (|A| |B|).
#ifndef TF_DISC_RUNTIME_GEMM_BF16_H_
#define TF_DISC_RUNTIME_GEMM_BF16_H_

#include "tf_disc/runtime/gemm.h"

namespace tf_disc {

// This CPU and OS run AVX512_BF16 (cpuid and XCR0; computed once) and the
// kernel was compiled in (a compiler that knows the instructions).
bool Bf16GemmAvailable();

// Runs a float GEMM (args.dtype == DISC_DTYPE_FLOAT, validated by RunGemm)
// through the bf16 kernel on the caller's parallel-for.  Returns false, with
// nothing written, when the kernel is unavailable or the product is too
// skinny to gain (the caller then runs the fp32 path).
bool RunGemmBf16(const GemmArgs& args, int num_threads, const GemmParallelFor& parallel_for);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_GEMM_BF16_H_
