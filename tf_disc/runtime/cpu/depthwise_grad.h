// DISC_WINDOW_DEPTHWISE_BACKPROP_INPUT and _FILTER (disc_abi.h): the
// gradients of a depthwise convolution (DepthwiseConv2dNativeBackpropInput
// and ...BackpropFilter), as direct loops vectorized over channels.
//
// Why: they are what a MobileNet training step spends its depthwise time
// in, and without them every depthwise layer splits the gradient graph into
// clusters around a TF op.  Both are cheap per byte (k_h * k_w
// multiply-adds per element), so a direct loop over NHWC rows that keeps
// each tap's accumulators in registers is the fast form; no im2col.
#ifndef TF_DISC_RUNTIME_CPU_DEPTHWISE_GRAD_H_
#define TF_DISC_RUNTIME_CPU_DEPTHWISE_GRAD_H_

#include <string>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm.h"

namespace tf_disc {

// Runs a DISC_WINDOW_DEPTHWISE_BACKPROP_INPUT (stride-1 gradients with a
// depth multiplier of 1: a register-blocked row kernel for 3- or 5-wide
// windows, else RunWindow's depthwise kernel with the filter flipped);
// false with *error set for bad arguments or an unsupported dtype.
bool RunDepthwiseBackpropInput(const DiscWindowArgs& args, int num_threads, void* eigen_pool,
                               const GemmParallelFor& parallel_for, std::string* error);

// Runs a DISC_WINDOW_DEPTHWISE_BACKPROP_FILTER; false with *error set for
// bad arguments, an unsupported dtype or failed scratch memory.
bool RunDepthwiseBackpropFilter(const DiscWindowArgs& args, int num_threads,
                                const GemmParallelFor& parallel_for, std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_DEPTHWISE_GRAD_H_
