#include "tf_disc/runtime/cpu/conv_depthwise.h"

#include <immintrin.h>

#include <cstdint>

#include "tf_disc/runtime/cpu/conv_direct.h"
#include "tf_disc/runtime/cpu/conv_packet.h"

namespace tf_disc {
namespace {

using namespace conv_packet;  // NOLINT: Packet, kPacket, ei, BlockEpilogue, Finish
// Packets of channels per DepthwisePixels block.
constexpr int kPackets = 4;
constexpr int64_t kBlock = int64_t(kPackets) * kPacket;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Outputs above this size go out with non-temporal stores in the depthwise
// kernel: they leave the caches anyway, and streaming skips the read of
// every line before its write (the direct conv's tiles gain nothing from
// it).
constexpr int64_t kStreamBytes = int64_t(8) << 20;

// Whether the depthwise outputs (rows `ld` floats apart) stream: large
// and 64-byte aligned (TF's allocator aligns them; ld a whole packet).
bool StreamOutput(const void* out, int64_t ld, int64_t bytes) {
  return kPacket == 16 && bytes > kStreamBytes && ld % kPacket == 0 &&
         reinterpret_cast<uintptr_t>(out) % 64 == 0;
}

// Stores a finished, 64-byte aligned output vector past the caches.
inline void StreamStore(float* dst, Packet v) {
#if defined(__AVX512F__)
  if constexpr (kPacket == 16) {
    _mm512_stream_ps(dst, v);
    return;
  }
#endif
  ei::pstore(dst, v);
}

template <int NP, int P>
inline void StorePixels(Packet (&acc)[P][NP], const BlockEpilogue* epi, int64_t c0, int64_t c,
                        bool stream, float* out);

// P output pixels of a row (x, x + 1, ...; the same in-bounds taps) of a
// float depthwise convolution with channel multiplier 1, channels [c0, c0 +
// NP packets): accumulated over the taps in registers (the loop in
// window.cc re-reads and re-writes the output once per tap).  Several
// pixels share each filter load and give the FMAs independent chains: one
// pixel's 4 chains waited on the FMA latency at every tap.
template <int NP, int P>
void DepthwisePixels(const DiscWindowArgs& w, const float* in, const float* f, int64_t c0,
                     int64_t by, int64_t bx, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                     const BlockEpilogue* epi, bool stream, float* out) {
  Packet acc[P][NP];
  for (int q = 0; q < P; ++q)
    for (int p = 0; p < NP; ++p) acc[q][p] = ei::pset1<Packet>(0.f);
  const int64_t c = w.in_c, step = w.stride_w * c;
  for (int64_t i = i0; i < i1; ++i) {
    const float* row = in + (by + i * w.dilation_h) * w.in_w * c + c0;
    const float* frow = f + i * w.k_w * c + c0;
    for (int64_t j = j0; j < j1; ++j) {
      const float* src = row + (bx + j * w.dilation_w) * c;
      Packet fv[NP];
      for (int p = 0; p < NP; ++p) fv[p] = ei::ploadu<Packet>(frow + j * c + p * kPacket);
      for (int q = 0; q < P; ++q)
        for (int p = 0; p < NP; ++p)
          acc[q][p] = ei::pmadd(ei::ploadu<Packet>(src + q * step + p * kPacket), fv[p], acc[q][p]);
    }
  }
  StorePixels<NP, P>(acc, epi, c0, c, stream, out);
}

// The P x NP depthwise accumulators of channels [c0, ...) of P pixels (c
// floats apart) after the epilogue into out.
template <int NP, int P>
inline void StorePixels(Packet (&acc)[P][NP], const BlockEpilogue* epi, int64_t c0, int64_t c,
                        bool stream, float* out) {
  if (epi != nullptr) {
    const BlockEpilogue e{epi->scale ? epi->scale + c0 : nullptr,
                          epi->shift ? epi->shift + c0 : nullptr, epi->activation};
    for (int q = 0; q < P; ++q)
      for (int p = 0; p < NP; ++p) acc[q][p] = Finish(e, p, acc[q][p]);
  }
  for (int q = 0; q < P; ++q) {
    for (int p = 0; p < NP; ++p) {
      if (stream) {
        StreamStore(out + q * c + c0 + p * kPacket, acc[q][p]);
      } else {
        ei::pstoreu(out + q * c + c0 + p * kPacket, acc[q][p]);
      }
    }
  }
}

// As DepthwisePixels for P consecutive pixels of a row with 3 column taps
// at stride and dilation 1: each input vector, loaded once per filter row
// into a register, feeds every pixel whose window holds it (up to 3), the
// row's 3 x NP filter vectors in registers.  Input columns bx + u, u in
// [0, P + 2): the first outside the image (zero) where kLeft, the last
// where kRight, so that a row's edge pixels take the same kernel as its
// middle.  (DepthwisePixels loads each input vector once per tap: with the
// loads folded into the FMAs, 42 loads for 36 FMAs at 6 pixels x 2
// packets, the kernel is load-bound.)
template <int NP, int P, bool kLeft, bool kRight>
void DepthwiseRow3(const DiscWindowArgs& w, const float* in, const float* f, int64_t c0,
                   int64_t by, int64_t bx, int64_t i0, int64_t i1, const BlockEpilogue* epi,
                   bool stream, float* out) {
  Packet acc[P][NP];
  for (int q = 0; q < P; ++q)
    for (int p = 0; p < NP; ++p) acc[q][p] = ei::pset1<Packet>(0.f);
  const int64_t c = w.in_c;
  for (int64_t i = i0; i < i1; ++i) {
    // Column bx + 1 (in bounds even where kLeft): input column bx + u is row[(u - 1) * c].
    const float* row = in + ((by + i * w.dilation_h) * w.in_w + bx + 1) * c + c0;
    const float* frow = f + i * 3 * c + c0;
    Packet fv[3][NP];
    for (int j = 0; j < 3; ++j)
      for (int p = 0; p < NP; ++p) fv[j][p] = ei::ploadu<Packet>(frow + j * c + p * kPacket);
#pragma GCC unroll 32
    for (int u = kLeft ? 1 : 0; u < (kRight ? P + 1 : P + 2); ++u) {
      Packet v[NP];
      for (int p = 0; p < NP; ++p) {
        v[p] = ei::ploadu<Packet>(row + (u - 1) * c + p * kPacket);
        asm("" : "+v"(v[p]));  // a register, not a memory operand of each FMA
      }
#pragma GCC unroll 16
      for (int q = 0; q < P; ++q) {
        const int j = u - q;
        if (j < 0 || j >= 3) continue;
        for (int p = 0; p < NP; ++p) acc[q][p] = ei::pmadd(v[p], fv[j][p], acc[q][p]);
      }
    }
  }
  StorePixels<NP, P>(acc, epi, c0, c, stream, out);
}

// DepthwiseRow3 with the pixel count and edges chosen at run time.
template <int NP, int P>
void Row3Edges(bool left, bool right, const DiscWindowArgs& w, const float* in, int64_t c0,
               int64_t by, int64_t bx, int64_t i0, int64_t i1, const BlockEpilogue* epi,
               bool stream, float* out) {
  const float* f = static_cast<const float*>(w.filter);
  if (left) {
    (right ? &DepthwiseRow3<NP, P, true, true> : &DepthwiseRow3<NP, P, true, false>)(
        w, in, f, c0, by, bx, i0, i1, epi, stream, out);
  } else {
    (right ? &DepthwiseRow3<NP, P, false, true> : &DepthwiseRow3<NP, P, false, false>)(
        w, in, f, c0, by, bx, i0, i1, epi, stream, out);
  }
}

template <int NP>
void Row3(int pixels, bool left, bool right, const DiscWindowArgs& w, const float* in,
          int64_t c0, int64_t by, int64_t bx, int64_t i0, int64_t i1, const BlockEpilogue* epi,
          bool stream, float* out) {
  switch (pixels) {
    case 1: return Row3Edges<NP, 1>(left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
    case 2: return Row3Edges<NP, 2>(left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
    case 3: return Row3Edges<NP, 3>(left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
    case 4: return Row3Edges<NP, 4>(left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
    case 5: return Row3Edges<NP, 5>(left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
    case 6: return Row3Edges<NP, 6>(left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
    case 7: return Row3Edges<NP, 7>(left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
    default: return Row3Edges<NP, 8>(left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
  }
}

// Channels [c0, c) of pixel (by, bx)'s window, past the last whole packet:
// scalar, then their epilogue.
void DepthwiseScalar(const DiscWindowArgs& w, const float* in, int64_t by, int64_t bx,
                     int64_t i0, int64_t i1, int64_t c0, float* out) {
  const float* f = static_cast<const float*>(w.filter);
  const int64_t c = w.in_c;
  int64_t j0, j1;
  TapRange(bx, w.dilation_w, w.k_w, w.in_w, &j0, &j1);
  for (int64_t ch = c0; ch < c; ++ch) {
    float acc = 0.f;
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j)
        acc += in[((by + i * w.dilation_h) * w.in_w + bx + j * w.dilation_w) * c + ch] *
               f[(i * w.k_w + j) * c + ch];
    out[ch] = acc;
  }
  ApplyEpilogue(w, out + c0, c, 1, c0, c);
}

// All channels of `pixels` (<= 8) pixels by DepthwiseRow3: 2-packet
// blocks (16 accumulators at 8 pixels, 6 filter and 2 input vectors).
void DepthwiseWideGroup(const DiscWindowArgs& w, const float* in, int pixels, bool left,
                        bool right, int64_t by, int64_t bx, int64_t i0, int64_t i1,
                        const BlockEpilogue* epi, bool stream, float* out) {
  const int64_t c = w.in_c, full = c / kPacket * kPacket;
  int64_t c0 = 0;
  for (; c0 + 2 * kPacket <= full; c0 += 2 * kPacket)
    Row3<2>(pixels, left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
  for (; c0 < full; c0 += kPacket)
    Row3<1>(pixels, left, right, w, in, c0, by, bx, i0, i1, epi, stream, out);
  if (c0 < c)
    for (int q = 0; q < pixels; ++q) DepthwiseScalar(w, in, by, bx + q, i0, i1, c0, out + q * c);
}

// All channels of P pixels (stride_w apart) as above, then their epilogue.
template <int P>
void DepthwiseGroup(const DiscWindowArgs& w, const float* in, int64_t by, int64_t bx,
                    int64_t i0, int64_t i1, int64_t j0, int64_t j1, const BlockEpilogue* epi,
                    bool stream, float* out) {
  const float* f = static_cast<const float*>(w.filter);
  const int64_t c = w.in_c, full = c / kPacket * kPacket;
  int64_t c0 = 0;
  for (; c0 + kBlock <= full; c0 += kBlock)
    DepthwisePixels<kPackets, P>(w, in, f, c0, by, bx, i0, i1, j0, j1, epi, stream, out);
  for (; c0 < full; c0 += kPacket)
    DepthwisePixels<1, P>(w, in, f, c0, by, bx, i0, i1, j0, j1, epi, stream, out);
  if (c0 < c)
    for (int q = 0; q < P; ++q)
      DepthwiseScalar(w, in, by, bx + q * w.stride_w, i0, i1, c0, out + q * c);
}


}  // namespace

void DepthwiseRowsF32(const DiscWindowArgs& w, int64_t begin, int64_t end) {
  constexpr int kGroup = 4;  // pixels per DepthwiseGroup where all taps are in bounds
  constexpr int kWide = 8;   // most pixels per DepthwiseRow3 group
  const int64_t c = w.in_c;
  const bool stream =
      StreamOutput(w.output, c, w.batch * w.out_h * w.out_w * c * int64_t(sizeof(float)));
  // DepthwiseRow3 for stride-1 3-wide windows, edge pixels included, but
  // not on streamed outputs (its 2-packet blocks' stores) nor at stride 2
  // (an input vector serves at most 2 pixels).
  const bool reuse = w.k_w == 3 && w.dilation_w == 1 && w.stride_w == 1 && !stream;
  // The rows' groups of near-equal size, at most kWide pixels each.
  const int64_t groups = reuse ? CeilDiv(w.out_w, kWide) : 0;
  // The epilogue on the registers before the store, not a pass over the
  // output after it (that pass was about a sixth of the kernel's perf
  // samples at MobileNetV2's 576-channel depthwise, batch 8).
  const BlockEpilogue all{static_cast<const float*>(w.scale),
                          static_cast<const float*>(w.shift), w.activation};
  const BlockEpilogue* epi = HasEpilogue(w) ? &all : nullptr;
  for (int64_t ny = begin; ny < end; ++ny) {
    const int64_t n = ny / w.out_h, y = ny % w.out_h;
    const int64_t by = y * w.stride_h - w.pad_top;
    const float* in = static_cast<const float*>(w.input) + n * w.in_h * w.in_w * c;
    float* row_out = static_cast<float*>(w.output) + ny * w.out_w * c;
    int64_t i0, i1;
    TapRange(by, w.dilation_h, w.k_h, w.in_h, &i0, &i1);
    // Pixels [x, to) in groups of kGroup (all taps in bounds) or one by one.
    int64_t x = 0;
    auto per_pixel = [&](int64_t to) {
      while (x < to) {
        const int64_t bx = x * w.stride_w - w.pad_left;
        int64_t j0, j1, l0 = 0, l1 = 0;
        TapRange(bx, w.dilation_w, w.k_w, w.in_w, &j0, &j1);
        if (x + kGroup <= to && j0 == 0 && j1 == w.k_w)
          TapRange(bx + (kGroup - 1) * w.stride_w, w.dilation_w, w.k_w, w.in_w, &l0, &l1);
        if (l0 == 0 && l1 == w.k_w) {  // the group's first and last pixels: all taps in bounds
          DepthwiseGroup<kGroup>(w, in, by, bx, i0, i1, j0, j1, epi, stream, row_out + x * c);
          x += kGroup;
        } else {
          DepthwiseGroup<1>(w, in, by, bx, i0, i1, j0, j1, epi, stream, row_out + x * c);
          ++x;
        }
      }
    };
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t x0 = g * w.out_w / groups, x1 = (g + 1) * w.out_w / groups;
      const int64_t bx = x0 - w.pad_left, last = bx + (x1 - x0) + 1;  // input columns bx..last
      if (bx < -1 || last > w.in_w) continue;  // more than one padding column: per pixel
      per_pixel(x0);
      DepthwiseWideGroup(w, in, static_cast<int>(x1 - x0), bx < 0, last == w.in_w, by, bx, i0,
                         i1, epi, stream, row_out + x0 * c);
      x = x1;
    }
    per_pixel(w.out_w);
  }
  if (stream) _mm_sfence();  // the streamed stores ordered before the caller's join
}


}  // namespace tf_disc
