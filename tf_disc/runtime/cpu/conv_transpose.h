// DISC_WINDOW_CONV_TRANSPOSE (disc_abi.h): the input gradient of a Conv2D
// (Conv2DBackpropInput) by col2im (GEMM panels of the gradient times the
// filter, added into the windows they came from) or as stride-1
// convolutions, one per output phase.
//
// Why: the gradient of a strided convolution, written as a stride-1
// convolution of the zero-spaced output gradient, spends stride_h *
// stride_w times the work on zeros (benchmarks/conv_grad_vs_tf.py: 3.7x
// stock TF at stride 2).  Output rows y with the same (y + pad_top) mod
// stride_h receive exactly the filter taps i with i * dilation_h congruent
// to it, so each phase (row phase x column phase) is a dense stride-1
// convolution of the gradient with those taps (flipped, channels swapped),
// run by RunWindow's convolution kernels and scattered into the output.
// conv_transpose.cc's UseCol2Im picks between the two.
#ifndef TF_DISC_RUNTIME_CPU_CONV_TRANSPOSE_H_
#define TF_DISC_RUNTIME_CPU_CONV_TRANSPOSE_H_

#include <string>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm.h"

namespace tf_disc {

// Runs a DISC_WINDOW_CONV_TRANSPOSE; false with *error set for bad
// arguments, an unsupported dtype or failed scratch memory.
bool RunConvTranspose(const DiscWindowArgs& args, int num_threads, void* eigen_pool,
                      const GemmParallelFor& parallel_for, std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_CONV_TRANSPOSE_H_
