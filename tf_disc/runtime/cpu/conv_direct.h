// Direct (implicit-GEMM) float Conv2D for runtime/cpu/window.cc: no patch
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
#ifndef TF_DISC_RUNTIME_CPU_CONV_DIRECT_H_
#define TF_DISC_RUNTIME_CPU_CONV_DIRECT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm.h"

namespace tf_disc {

// First and one-past-last kernel tap i with 0 <= base + i * dil < limit.
inline void TapRange(int64_t base, int64_t dil, int64_t taps, int64_t limit, int64_t* lo,
                     int64_t* hi) {
  *lo = base >= 0 ? 0 : (-base + dil - 1) / dil;
  *hi = base >= limit ? 0 : std::min(taps, (limit - base + dil - 1) / dil);
  if (*hi < *lo) *hi = *lo;
}

// Whether the args carry an epilogue (scale, shift, residual or activation).
inline bool HasEpilogue(const DiscWindowArgs& w) {
  return w.scale != nullptr || w.shift != nullptr || w.residual != nullptr ||
         w.activation != DISC_ACT_NONE;
}

// Applies the epilogue to `rows` rows (row stride ld) of channels [c0, c1);
// out points at channel c0 of the first row, inside w.output (the residual
// is read at the same offset from w.residual).
template <typename T>
void ApplyEpilogue(const DiscWindowArgs& w, T* out, int64_t ld, int64_t rows, int64_t c0,
                   int64_t c1) {
  if (!HasEpilogue(w)) return;
  const T* scale = static_cast<const T*>(w.scale);
  const T* shift = static_cast<const T*>(w.shift);
  const T* residual = w.residual == nullptr ? nullptr
                                            : static_cast<const T*>(w.residual) +
                                                  (out - static_cast<T*>(w.output));
  for (int64_t r = 0; r < rows; ++r) {
    T* o = out + r * ld - c0;
    if (scale != nullptr)
      for (int64_t c = c0; c < c1; ++c) o[c] *= scale[c];
    if (shift != nullptr)
      for (int64_t c = c0; c < c1; ++c) o[c] += shift[c];
    if (residual != nullptr) {
      const T* q = residual + r * ld - c0;
      for (int64_t c = c0; c < c1; ++c) o[c] += q[c];
    }
    if (w.activation == DISC_ACT_RELU) {
      for (int64_t c = c0; c < c1; ++c) o[c] = o[c] > T(0) || o[c] != o[c] ? o[c] : T(0);
    } else if (w.activation == DISC_ACT_RELU6) {
      for (int64_t c = c0; c < c1; ++c)
        o[c] = o[c] != o[c] ? o[c] : o[c] < T(0) ? T(0) : o[c] > T(6) ? T(6) : o[c];
    }
  }
}

// Whether RunDirectConv runs this (validated, non-empty) convolution: float
// and ungrouped (plain 1x1s too), unless kernel policy direct_conv is false
// (kernel_policy.h).
bool UseDirectConv(const DiscWindowArgs& w);

// Runs the convolution; false with *error set when scratch memory fails.
bool RunDirectConv(const DiscWindowArgs& w, int num_threads,
                   const GemmParallelFor& parallel_for, std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_CONV_DIRECT_H_
