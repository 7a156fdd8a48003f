// Argument checks shared by the Conv2D gradient kinds of rt->window
// (conv_transpose.cc, conv_filter_grad.cc): what both accept of a
// DiscWindowArgs besides their buffers.
#ifndef TF_DISC_RUNTIME_CPU_CONV_GRAD_CHECK_H_
#define TF_DISC_RUNTIME_CPU_CONV_GRAD_CHECK_H_

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "tf_disc/runtime/disc_abi.h"

namespace tf_disc {

// False with *error ("<op>: ...") for negative sizes, non-positive strides
// or dilations, groups, an epilogue, or a dtype other than float/double.
inline bool CheckConvGradArgs(const DiscWindowArgs& w, const std::string& op,
                              std::string* error) {
  const int64_t sizes[] = {w.batch, w.in_h, w.in_w, w.in_c, w.out_h, w.out_w, w.out_c,
                           w.k_h, w.k_w, w.pad_top, w.pad_left};
  if (std::any_of(std::begin(sizes), std::end(sizes), [](int64_t s) { return s < 0; })) {
    *error = op + ": negative size";
  } else if (w.stride_h < 1 || w.stride_w < 1 || w.dilation_h < 1 || w.dilation_w < 1) {
    *error = op + ": strides and dilations must be positive";
  } else if (w.groups > 1 || w.scale != nullptr || w.shift != nullptr ||
             w.residual != nullptr || w.activation != DISC_ACT_NONE) {
    *error = op + ": groups and epilogues are not supported";
  } else if (w.dtype != DISC_DTYPE_FLOAT && w.dtype != DISC_DTYPE_DOUBLE) {
    *error = op + ": unsupported dtype " + std::to_string(w.dtype);
  } else {
    return true;
  }
  return false;
}

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_CONV_GRAD_CHECK_H_
