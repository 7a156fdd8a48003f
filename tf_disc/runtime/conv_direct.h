// Direct (implicit-GEMM) float Conv2D for runtime/window.cc: no patch
// matrix.  Each output pixel's patch is read straight from the NHWC input
// (a zero-padded copy when the window leaves it), a register tile of output
// pixels x 64 output channels accumulating over the filter, whose rows for
// one filter row are contiguous with the input row's (dilation 1).
//
// Why: the im2col + Eigen GEMM path writes, re-reads and re-packs every
// patch (k_h * k_w times the input) and re-packs the filter per panel; for
// few output channels (ResNet's 64-channel 3x3s, the 7x7 stem with 3 input
// channels) that traffic costs as much as the multiply-adds
// (benchmarks/conv_vs_tf.py: 1.3-1.5x stock TF's oneDNN before this kernel).
#ifndef TF_DISC_RUNTIME_CONV_DIRECT_H_
#define TF_DISC_RUNTIME_CONV_DIRECT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/gemm.h"

namespace tf_disc {

// First and one-past-last kernel tap i with 0 <= base + i * dil < limit.
inline void TapRange(int64_t base, int64_t dil, int64_t taps, int64_t limit, int64_t* lo,
                     int64_t* hi) {
  *lo = base >= 0 ? 0 : (-base + dil - 1) / dil;
  *hi = base >= limit ? 0 : std::min(taps, (limit - base + dil - 1) / dil);
  if (*hi < *lo) *hi = *lo;
}

// Whether RunDirectConv is the faster path for this (validated, non-empty)
// convolution: float, ungrouped, and not a 1x1 stride-1 unpadded one (a
// plain GEMM on the input, as fast).  DISC_CONV_DIRECT=0 / 1
// forces it off / on (where supported), for A/B timing in one process.
bool UseDirectConv(const DiscWindowArgs& w);

// Runs the convolution; false with *error set when scratch memory fails.
bool RunDirectConv(const DiscWindowArgs& w, int num_threads,
                   const GemmParallelFor& parallel_for, std::string* error);

// Output rows [begin, end) (row = n * out_h + y) of a float depthwise
// convolution with channel multiplier 1 (out_c == in_c), accumulating in
// registers.
void DepthwiseRowsF32(const DiscWindowArgs& w, int64_t begin, int64_t end);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CONV_DIRECT_H_
