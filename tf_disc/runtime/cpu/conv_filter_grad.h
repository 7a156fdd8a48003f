// DISC_WINDOW_CONV_BACKPROP_FILTER (disc_abi.h): the filter gradient of a
// Conv2D (Conv2DBackpropFilter), dW = patches(x)^T * dy.
//
// Why: as one GEMM over an im2col view the patch matrix (k_h * k_w times
// the input) is written to memory and read back (benchmarks/
// conv_grad_vs_tf.py: 1.5-3x stock TF).  Here each thread builds the patches
// of a few hundred output pixels at a time in a cache-sized panel and
// accumulates panel^T * dy into its own copy of dW; the copies are summed.
#ifndef TF_DISC_RUNTIME_CPU_CONV_FILTER_GRAD_H_
#define TF_DISC_RUNTIME_CPU_CONV_FILTER_GRAD_H_

#include <string>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm.h"

namespace tf_disc {

// Runs a DISC_WINDOW_CONV_BACKPROP_FILTER; false with *error set for bad
// arguments, an unsupported dtype or failed scratch memory.
bool RunConvBackpropFilter(const DiscWindowArgs& args, int num_threads,
                           const GemmParallelFor& parallel_for, std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_CONV_FILTER_GRAD_H_
