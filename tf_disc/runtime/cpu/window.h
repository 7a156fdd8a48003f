// Windowed NHWC ops behind DiscRuntime::window (disc_abi.h): Conv2D (the
// direct float kernel of conv_direct.cc; im2col panels + the Eigen GEMM of
// gemm.cc for doubles and groups), depthwise convolution and
// max/avg pooling (direct loops vectorized over channels), and the
// convolutions' per-channel scale/shift/activation epilogue.
//
// Like gemm.cc this file holds no TF headers and is compiled into each
// per-tier kernel library (kernel_table.h); threading stays with the caller's parallel_for (TF's
// intra-op pool), the work being cut into independent output-row blocks.
#ifndef TF_DISC_RUNTIME_CPU_WINDOW_H_
#define TF_DISC_RUNTIME_CPU_WINDOW_H_

#include <string>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm.h"
#include "tf_disc/runtime/cpu/gemm_bf16.h"

namespace tf_disc {

// Runs the op; false with *error set for an unsupported kind/dtype or bad
// arguments (nothing written then).  eigen_pool as in RunGemm.
bool RunWindow(const DiscWindowArgs& args, int num_threads, void* eigen_pool,
               const GemmParallelFor& parallel_for, std::string* error);

// A window op compiled with fast_math="bf16" (its dtype carries
// DISC_GEMM_FAST_BF16): a float Conv2D runs on the bf16 kernel where
// conv_bf16.h applies (packed_filter: its filter packed once, may be
// null); everything else as RunWindow with the plain dtype.
bool RunWindowFastBf16(const DiscWindowArgs& args, const Bf16PackedB* packed_filter,
                       int num_threads, void* eigen_pool, const GemmParallelFor& parallel_for,
                       std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_WINDOW_H_
