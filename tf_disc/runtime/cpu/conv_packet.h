// What the float convolution kernels of one ISA tier share
// (conv_direct.cc, conv_depthwise.cc): the tier's float packet and the
// fused epilogue applied to accumulators before their store.  Included
// only by kernel-library units, which are built once per tier with that
// tier's flags, so no inline code here crosses tiers.
#ifndef TF_DISC_RUNTIME_CPU_CONV_PACKET_H_
#define TF_DISC_RUNTIME_CPU_CONV_PACKET_H_

#include <Eigen/Core>

#include <cstdint>

#include "tf_disc/runtime/disc_abi.h"

namespace tf_disc {
namespace conv_packet {

namespace ei = Eigen::internal;
using Packet = ei::packet_traits<float>::type;
constexpr int kPacket = ei::unpacket_traits<Packet>::size;

// The fused epilogue of one channel block (vectors offset to its first
// channel, padded to whole packets), applied to the accumulators before
// the last store: the output is written once, finished.
struct BlockEpilogue {
  const float* scale;
  const float* shift;
  int32_t activation;
};

// act(acc * scale + shift + residual) with TF's Relu/Relu6 (NaN stays NaN);
// res: the pixel's residual at the block's first channel, or null.
inline Packet Finish(const BlockEpilogue& e, int p, Packet v, const float* res = nullptr) {
  if (e.scale != nullptr) v = ei::pmul(v, ei::ploadu<Packet>(e.scale + p * kPacket));
  if (e.shift != nullptr) v = ei::padd(v, ei::ploadu<Packet>(e.shift + p * kPacket));
  if (res != nullptr) v = ei::padd(v, ei::ploadu<Packet>(res + p * kPacket));
  if (e.activation != DISC_ACT_NONE) {
    const Packet zero = ei::pset1<Packet>(0.f);
    v = ei::pselect(ei::pcmp_lt(v, zero), zero, v);
    if (e.activation == DISC_ACT_RELU6) {
      const Packet six = ei::pset1<Packet>(6.f);
      v = ei::pselect(ei::pcmp_lt(six, v), six, v);
    }
  }
  return v;
}

}  // namespace conv_packet
}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_CONV_PACKET_H_
