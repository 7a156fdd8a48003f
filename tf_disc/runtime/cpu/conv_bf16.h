// fast_math="bf16" Conv2D (generated code ORs DISC_GEMM_FAST_BF16 into the
// window's dtype; README "Fast math"): output pixels as the rows of a GEMM
// against the filter, on the bf16 kernel of gemm_bf16.h (AMX tiles where
// the tier has them, VDPBF16PS elsewhere).  Each task builds its patch rows
// straight in bf16 (no fp32 patch matrix, half the bytes) and multiplies
// them with the filter packed once: per weight across calls where the
// filter is a stable input (packed_weights.h, KernelRuntime::Window), else
// once per call.  Accumulation and the epilogue stay fp32; the error bound
// is the GEMM's, with k = k_h * k_w * in_c.
#ifndef TF_DISC_RUNTIME_CPU_CONV_BF16_H_
#define TF_DISC_RUNTIME_CPU_CONV_BF16_H_

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm.h"
#include "tf_disc/runtime/cpu/gemm_bf16.h"

namespace tf_disc {

// The filter (HWIO: k_h * k_w * in_c rows of out_c floats) as the B of the
// GEMM whose rows are the output pixels: what gets packed.  Inline: the op
// library builds it to look the packed copy up.
inline GemmArgs ConvFilterAsB(const DiscWindowArgs& w) {
  return GemmArgs{DISC_DTYPE_FLOAT | DISC_GEMM_FAST_BF16,
                  false, false, 1, w.batch * w.out_h * w.out_w, w.out_c,
                  w.k_h * w.k_w * w.in_c, nullptr, 0, 0, w.filter, w.out_c, 0,
                  w.output, w.out_c, 0};
}

// Whether RunConvBf16 runs w (validated, plain float dtype): an ungrouped
// Conv2D and the bf16 kernel applies to its GEMM (gemm_bf16.h).
bool ConvBf16Applies(const DiscWindowArgs& w);

// Runs w in bf16; packed_filter (may be null) is PackBf16B of
// ConvFilterAsB(w).  False, nothing written, when it does not apply or
// memory is short (the caller runs the fp32 convolution).
bool RunConvBf16(const DiscWindowArgs& w, const Bf16PackedB* packed_filter, int num_threads,
                 const GemmParallelFor& parallel_for);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_CONV_BF16_H_
