#include "tf_disc/runtime/conv_direct.h"

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "tf_disc/runtime/switches.h"

namespace tf_disc {
namespace {

namespace ei = Eigen::internal;
using Packet = ei::packet_traits<float>::type;
constexpr int kPacket = ei::unpacket_traits<Packet>::size;
// Register tile: kRows output pixels x kPackets packets of output channels
// (6 x 4 zmm accumulators on AVX-512, leaving room for the filter row).
constexpr int kRows = kPacket >= 16 ? 6 : 3;
constexpr int kPackets = 4;
constexpr int64_t kBlock = int64_t(kPackets) * kPacket;  // output channels per task
// Filter rows per pass over an output row: kChunk x kBlock floats = 32 KiB
// on AVX-512, L1-resident while every pixel tile of the row reads them.
constexpr int64_t kChunk = 128;
// Pixel tiles per task: their outputs (kRows * kTilesPerTask x kBlock
// floats, 24 KiB) stay in L1 across the chunks.
constexpr int64_t kTilesPerTask = 16;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A run of `len` consecutive patch elements: input offset from the pixel's
// window origin, and first filter row.
struct Seg {
  int64_t a_off, f_row, len;
};

// out[r * ldo + p * kPacket] (+)= sum over segs of
//   a[pix[r] + seg.a_off + kk] * f[(seg.f_row + kk) * ldf + p * kPacket]
// (pix[r]: offset of output pixel r's window origin in the input).
template <int R, int NP>
void Tile(const float* a, const int64_t* pix, const float* f, int64_t ldf, const Seg* segs,
          int64_t nseg, float* out, int64_t ldo, bool init) {
  Packet acc[R][NP];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < NP; ++p)
      acc[r][p] = init ? ei::pset1<Packet>(0.f) : ei::ploadu<Packet>(out + r * ldo + p * kPacket);
  for (int64_t s = 0; s < nseg; ++s) {
    const float* ar[R];
    for (int r = 0; r < R; ++r) ar[r] = a + pix[r] + segs[s].a_off;
    const float* fs = f + segs[s].f_row * ldf;
    for (int64_t kk = 0, len = segs[s].len; kk < len; ++kk) {
      Packet fv[NP];
      for (int p = 0; p < NP; ++p) fv[p] = ei::ploadu<Packet>(fs + kk * ldf + p * kPacket);
      for (int r = 0; r < R; ++r) {
        const Packet av = ei::pset1<Packet>(ar[r][kk]);
        for (int p = 0; p < NP; ++p) acc[r][p] = ei::pmadd(av, fv[p], acc[r][p]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < NP; ++p) ei::pstoreu(out + r * ldo + p * kPacket, acc[r][p]);
}

using TileFn = void (*)(const float*, const int64_t*, const float*, int64_t, const Seg*,
                        int64_t, float*, int64_t, bool);

template <int R>
constexpr TileFn TileFor(int np) {
  return np == 1 ? &Tile<R, 1> : np == 2 ? &Tile<R, 2> : np == 3 ? &Tile<R, 3> : &Tile<R, 4>;
}

TileFn Pick(int rows, int np) {
  static_assert(kRows <= 6 && kPackets == 4, "Pick covers 1..6 rows x 1..4 packets");
  switch (rows) {
    case 1: return TileFor<1>(np);
    case 2: return TileFor<2>(np);
    case 3: return TileFor<3>(np);
    case 4: return TileFor<4>(np);
    case 5: return TileFor<5>(np);
    default: return TileFor<6>(np);
  }
}

// The patch of one output pixel as segments, cut into chunks of at most
// kChunk filter rows (chunk c = segs[starts[c] .. starts[c + 1])).
void Segments(const DiscWindowArgs& w, int64_t row_stride, std::vector<Seg>* segs,
              std::vector<int64_t>* starts) {
  const int64_t c = w.in_c;
  std::vector<Seg> raw;
  for (int64_t i = 0; i < w.k_h; ++i) {
    if (w.dilation_w == 1) {  // the filter row's (j, c) run is contiguous in the input too
      raw.push_back({i * w.dilation_h * row_stride, i * w.k_w * c, w.k_w * c});
    } else {
      for (int64_t j = 0; j < w.k_w; ++j)
        raw.push_back({i * w.dilation_h * row_stride + j * w.dilation_w * c,
                       (i * w.k_w + j) * c, c});
    }
  }
  int64_t fill = kChunk;
  for (const Seg& s : raw) {
    for (int64_t k0 = 0; k0 < s.len; k0 += kChunk) {
      const int64_t len = std::min(kChunk, s.len - k0);
      if (fill + len > kChunk) {
        starts->push_back(static_cast<int64_t>(segs->size()));
        fill = 0;
      }
      segs->push_back({s.a_off + k0, s.f_row + k0, len});
      fill += len;
    }
  }
  starts->push_back(static_cast<int64_t>(segs->size()));
}

// Input rows extended by the padding the windows reach: [batch, ext_h,
// ext_w, in_c] with zeros outside the input.
void PadRows(const DiscWindowArgs& w, int64_t ext_h, int64_t ext_w, float* dst,
             int64_t begin, int64_t end) {
  const float* in = static_cast<const float*>(w.input);
  const int64_t c = w.in_c, row = ext_w * c;
  const int64_t x0 = std::min(ext_w, w.pad_left);
  const int64_t x1 = std::min(ext_w, w.pad_left + w.in_w);
  for (int64_t t = begin; t < end; ++t) {
    const int64_t n = t / ext_h, p = t % ext_h, iy = p - w.pad_top;
    float* d = dst + t * row;
    if (iy < 0 || iy >= w.in_h || x1 <= x0) {
      std::fill(d, d + row, 0.f);
      continue;
    }
    std::fill(d, d + x0 * c, 0.f);
    std::memcpy(d + x0 * c, in + ((n * w.in_h + iy) * w.in_w) * c, (x1 - x0) * c * sizeof(float));
    std::fill(d + x1 * c, d + row, 0.f);
  }
}


// Output rows [begin, end) (row = n * out_h + y) of a float depthwise
// convolution with channel multiplier 1: per pixel, kPackets packets of
// channels accumulate over the window's in-bounds taps in registers (the
// loop in window.cc re-reads and re-writes the output once per tap).
template <int NP>
void DepthwisePixel(const DiscWindowArgs& w, const float* in, const float* f, int64_t c0,
                    int64_t by, int64_t bx, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                    float* out) {
  Packet acc[NP];
  for (int p = 0; p < NP; ++p) acc[p] = ei::pset1<Packet>(0.f);
  const int64_t c = w.in_c;
  for (int64_t i = i0; i < i1; ++i) {
    const float* row = in + (by + i * w.dilation_h) * w.in_w * c + c0;
    const float* frow = f + i * w.k_w * c + c0;
    for (int64_t j = j0; j < j1; ++j) {
      const float* src = row + (bx + j * w.dilation_w) * c;
      const float* fw = frow + j * c;
      for (int p = 0; p < NP; ++p)
        acc[p] = ei::pmadd(ei::ploadu<Packet>(src + p * kPacket),
                           ei::ploadu<Packet>(fw + p * kPacket), acc[p]);
    }
  }
  for (int p = 0; p < NP; ++p) ei::pstoreu(out + c0 + p * kPacket, acc[p]);
}

}  // namespace

void DepthwiseRowsF32(const DiscWindowArgs& w, int64_t begin, int64_t end) {
  const float* f = static_cast<const float*>(w.filter);
  const int64_t c = w.in_c, full = c / kPacket * kPacket;
  for (int64_t ny = begin; ny < end; ++ny) {
    const int64_t n = ny / w.out_h, y = ny % w.out_h;
    const int64_t by = y * w.stride_h - w.pad_top;
    const float* in = static_cast<const float*>(w.input) + n * w.in_h * w.in_w * c;
    int64_t i0, i1;
    TapRange(by, w.dilation_h, w.k_h, w.in_h, &i0, &i1);
    for (int64_t x = 0; x < w.out_w; ++x) {
      float* out = static_cast<float*>(w.output) + (ny * w.out_w + x) * c;
      const int64_t bx = x * w.stride_w - w.pad_left;
      int64_t j0, j1;
      TapRange(bx, w.dilation_w, w.k_w, w.in_w, &j0, &j1);
      int64_t c0 = 0;
      for (; c0 + kBlock <= full; c0 += kBlock)
        DepthwisePixel<kPackets>(w, in, f, c0, by, bx, i0, i1, j0, j1, out);
      for (; c0 < full; c0 += kPacket)
        DepthwisePixel<1>(w, in, f, c0, by, bx, i0, i1, j0, j1, out);
      for (; c0 < c; ++c0) {  // channels past the last packet
        float acc = 0.f;
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j)
            acc += in[((by + i * w.dilation_h) * w.in_w + bx + j * w.dilation_w) * c + c0] *
                   f[(i * w.k_w + j) * c + c0];
        out[c0] = acc;
      }
      ApplyEpilogue(w, out, c, 1, 0, c);
    }
  }
}

namespace {
}  // namespace

bool UseDirectConv(const DiscWindowArgs& w) {
  if (w.dtype != DISC_DTYPE_FLOAT || w.kind != DISC_WINDOW_CONV || w.groups > 1) return false;
  if (w.k_h * w.k_w * w.in_c == 0) return false;  // the GEMM path writes the zeros
  const char env = RuntimeSwitchValue(RuntimeSwitch::kConvDirect);
  if (env == '0' || env == '1') return env == '1';
  const bool plain_gemm = w.k_h == 1 && w.k_w == 1 && w.stride_h == 1 && w.stride_w == 1 &&
                          w.pad_top == 0 && w.pad_left == 0 && w.out_h == w.in_h &&
                          w.out_w == w.in_w;
  // Plain 1x1s stay GEMMs even with an epilogue (its pass after the GEMM
  // measured cheaper than the direct kernel there: conv_vs_tf --ab, 1x1
  // 64->256 at 56x56 batch 8, 1.12x against 1.50x TF's time).
  return !plain_gemm;
}

bool RunDirectConv(const DiscWindowArgs& w, int num_threads,
                   const GemmParallelFor& parallel_for, std::string* error) {
  const int64_t c = w.in_c, oc = w.out_c, k = w.k_h * w.k_w * c;
  const int64_t ext_h = (w.out_h - 1) * w.stride_h + (w.k_h - 1) * w.dilation_h + 1;
  const int64_t ext_w = (w.out_w - 1) * w.stride_w + (w.k_w - 1) * w.dilation_w + 1;
  const bool pad = w.pad_top > 0 || w.pad_left > 0 || ext_h - w.pad_top > w.in_h ||
                   ext_w - w.pad_left > w.in_w;
  const int64_t rows_in = pad ? ext_h : w.in_h, row_stride = (pad ? ext_w : w.in_w) * c;
  const double flops = 2.0 * w.batch * w.out_h * w.out_w * k * oc;
  const bool threaded = num_threads > 1 && flops >= 4e5;
  auto shard = [&](int64_t n, int64_t cost, const std::function<void(int64_t, int64_t)>& fn) {
    if (threaded) {
      parallel_for(n, cost, fn);
    } else {
      fn(0, n);
    }
  };
  std::unique_ptr<float[]> padded;
  const float* src = static_cast<const float*>(w.input);
  if (pad) {
    padded.reset(new (std::nothrow) float[w.batch * ext_h * row_stride]);
    if (!padded) {
      *error = "conv2d: out of memory for the padded input";
      return false;
    }
    shard(w.batch * ext_h, row_stride / 4 + 1, [&](int64_t b, int64_t e) {
      PadRows(w, ext_h, ext_w, padded.get(), b, e);
    });
    src = padded.get();
  }
  // Output channels rounded up to whole packets: a zero-padded filter copy.
  const int64_t ocp = CeilDiv(oc, kPacket) * kPacket;
  std::unique_ptr<float[]> fpad;
  const float* filt = static_cast<const float*>(w.filter);
  if (ocp != oc) {
    fpad.reset(new (std::nothrow) float[k * ocp]);
    if (!fpad) {
      *error = "conv2d: out of memory for the filter";
      return false;
    }
    for (int64_t r = 0; r < k; ++r) {
      std::copy(filt + r * oc, filt + (r + 1) * oc, fpad.get() + r * ocp);
      std::fill(fpad.get() + r * ocp + oc, fpad.get() + (r + 1) * ocp, 0.f);
    }
    filt = fpad.get();
  }
  std::vector<Seg> segs;
  std::vector<int64_t> starts;
  Segments(w, row_stride, &segs, &starts);
  const int64_t blocks = CeilDiv(ocp, kBlock);
  const int64_t image = rows_in * row_stride, pixels = w.batch * w.out_h * w.out_w;
  // Runs of at most kRows * kTilesPerTask pixels, of nearly equal size.
  const int64_t runs = CeilDiv(pixels, kRows * kTilesPerTask);
  float* out = static_cast<float*>(w.output);
  std::atomic<bool> ok{true};
  // Task = (run of output pixels, in NHWC order across rows and
  // images; channel block): every chunk of filter rows is applied to all of
  // the run's pixel tiles before the next chunk, the run's outputs staying
  // in L1.
  auto run = [&](int64_t begin, int64_t end) {
    std::unique_ptr<float[]> tmp;  // a partial block's outputs (ld = its width)
    int64_t pix[kRows * kTilesPerTask];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t pb = t / blocks, cb = t % blocks;
      const int64_t p0 = pb * pixels / runs, np_ = (pb + 1) * pixels / runs - p0;
      for (int64_t q = 0; q < np_; ++q) {
        const int64_t p = p0 + q, x = p % w.out_w, y = (p / w.out_w) % w.out_h;
        pix[q] = (p / (w.out_w * w.out_h)) * image + y * w.stride_h * row_stride +
                 x * w.stride_w * c;
      }
      const int64_t c0 = cb * kBlock, width = std::min(kBlock, ocp - c0);
      const int np = static_cast<int>(width / kPacket);
      const bool partial = c0 + width > oc;
      float* dst = out + p0 * oc + c0;
      int64_t ldo = oc;
      if (partial) {
        if (!tmp) tmp.reset(new (std::nothrow) float[kRows * kTilesPerTask * width]);
        if (!tmp) {
          ok = false;
          return;
        }
        dst = tmp.get();
        ldo = width;
      }
      // Full tiles, then the rest (measured: tiles of equal size, 5 or 6
      // pixels, ran 3x3 512->512 on 7x7 at 134 GF/s against 194 like this).
      const int64_t tiles = CeilDiv(np_, kRows);
      for (size_t ch = 0; ch + 1 < starts.size(); ++ch) {
        const Seg* cs = segs.data() + starts[ch];
        const int64_t ns = starts[ch + 1] - starts[ch];
        for (int64_t i = 0, q = 0; i < tiles; ++i) {
          const int64_t q1 = std::min(np_, q + kRows);
          Pick(static_cast<int>(q1 - q), np)(src, pix + q, filt + c0, ocp, cs, ns,
                                             dst + q * ldo, ldo, ch == 0);
          q = q1;
        }
      }
      ApplyEpilogue(w, dst, ldo, np_, c0, std::min(oc, c0 + width));
      if (partial) {
        for (int64_t q = 0; q < np_; ++q)
          std::copy(dst + q * ldo, dst + q * ldo + (oc - c0), out + (p0 + q) * oc + c0);
      }
    }
  };
  const int64_t tasks = runs * blocks;
  shard(tasks, static_cast<int64_t>(2.0 * pixels / runs * k * kBlock / 32) + 1, run);
  if (!ok) *error = "conv2d: out of memory for an output row";
  return ok.load();
}

}  // namespace tf_disc
