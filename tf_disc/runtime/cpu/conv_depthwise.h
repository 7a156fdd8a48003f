// Float depthwise convolution (channel multiplier 1) for
// runtime/cpu/window.cc: each output pixel's channels accumulate over the
// taps in registers, several pixels per filter load, the epilogue applied
// before the store.
#ifndef TF_DISC_RUNTIME_CPU_CONV_DEPTHWISE_H_
#define TF_DISC_RUNTIME_CPU_CONV_DEPTHWISE_H_

#include <cstdint>

#include "tf_disc/runtime/disc_abi.h"

namespace tf_disc {

// Output rows [begin, end) (row = n * out_h + y) of a float depthwise
// convolution with channel multiplier 1 (out_c == in_c), accumulating in
// registers.
void DepthwiseRowsF32(const DiscWindowArgs& w, int64_t begin, int64_t end);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_CONV_DEPTHWISE_H_
