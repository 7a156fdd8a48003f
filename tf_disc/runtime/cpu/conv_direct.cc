#include "tf_disc/runtime/cpu/conv_direct.h"

#include <Eigen/Core>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "tf_disc/runtime/cpu/conv_packet.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"

namespace tf_disc {
namespace {

using namespace conv_packet;  // NOLINT: Packet, kPacket, ei, BlockEpilogue, Finish
// Register tile: kRows output pixels x kPackets packets of output channels
// (6 x 4 zmm accumulators on AVX-512 and the 4 filter vectors, each input
// scalar broadcast from memory into its FMAs).  A 7 x 4 tile (all 32
// registers) leaves none for the filter reloads and loses on the 1x1 layers
// more than it gains on the 3x3s.
constexpr int kRows = kPacket >= 16 ? 6 : 3;
constexpr int kPackets = 4;
constexpr int64_t kBlock = int64_t(kPackets) * kPacket;  // output channels per task
// Filter rows per pass over an output row: kChunk x kBlock floats = 32 KiB
// on AVX-512, L1-resident while every pixel tile of the row reads them.
constexpr int64_t kChunk = 128;
// Filter rows per pass where a block's rows lie at most 512 bytes apart
// (ocp <= 128): the pass's filter slice streams from L2 without set
// conflicts, and longer passes reload and store each tile's accumulators
// fewer times.  Wider rows (2-4 KiB apart at 512-1024 channels) alias in
// the L1 and L2 sets, so they keep kChunk.
constexpr int64_t kLongChunk = 640;
// Pixel tiles per task: their outputs (kRows * kTilesPerTask x kBlock
// floats, 24 KiB) stay in L1 across the chunks.
constexpr int64_t kTilesPerTask = 16;
// Pixels per task where the filter outweighs the input (block-major order
// below): each filter chunk, L1-resident, serves more tiles before the next
// one streams in from L3, the outputs (64 KiB) staying in L2 instead of L1.
constexpr int64_t kFilterMajorRun = 256;

// Most floats of a task's zero-padded input band (RunInput): L2-resident
// beside a 64-channel block's 3x3 filter (147 KB) where the input is
// streamed once (pixel-major tasks); where the filter outweighs the input
// (block-major) the band is re-read once per channel block, and a band of
// all the thread's pixels beats re-padding them per task.
constexpr int64_t kBandFloats = int64_t(64) << 10;
constexpr int64_t kBandFloatsFilterMajor = int64_t(512) << 10;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// out[r * ldo + p * kPacket] (+)= sum over kk < len of
//   a[pix[r] + aoff[kk]] * f[kk * ldf + p * kPacket]
// (pix[r]: offset of output pixel r's window origin in a; aoff: the
// chunk's patch offsets), then the epilogue when `epi` is given (with the
// residual at res[r * ldo + p * kPacket] when res is not null).  kMode:
// kInit (out not read), kAccumulate, or kPrefetch (kAccumulate, and the
// line at row kk of `next`, ldf apart, prefetched into L2 at step kk: an
// instantiation of its own keeps the other tiles' loop free of the
// prefetches).  One flat
// loop over the chunk keeps the accumulators in registers throughout
// (a loop per filter row spilled all 24 of them at every row).  The
// r/p loops are unrolled by pragma: with the asm FMA GCC left them rolled
// and kept the accumulators in memory, a store after every FMA.
enum TileMode { kInit, kAccumulate, kPrefetch };

// acc + broadcast(*s) * f, the scalar broadcast straight from memory into
// the FMA on AVX-512 (vfmadd231ps zmm, zmm, m32{1to16}) with the filter
// vectors in registers (from intrinsics GCC broadcasts into a register and
// reads a filter vector from memory at every FMA of some tiles).
inline Packet MaddScalar(const float* s, Packet f, Packet acc) {
#if defined(__AVX512F__)
  if constexpr (kPacket == 16) {
    asm("vfmadd231ps %[s]%{1to16%}, %[f], %[acc]" : [acc] "+v"(acc) : [f] "v"(f), [s] "m"(*s));
    return acc;
  }
#endif
  return ei::pmadd(ei::pset1<Packet>(*s), f, acc);
}

template <int R, int NP, int kMode>
void Tile(const float* a, const int64_t* pix, const int64_t* aoff, int64_t len, const float* f,
          int64_t ldf, float* out, int64_t ldo, const BlockEpilogue* epi, const float* next,
          const float* res) {
  if (kMode == kInit) {  // the next tile's output lines, first written by it: their
                // misses overlap this tile's work instead of stalling its stores
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < NP; ++p) __builtin_prefetch(out + (R + r) * ldo + p * kPacket, 1, 3);
  }
  Packet acc[R][NP];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p)
      acc[r][p] = kMode == kInit ? ei::pset1<Packet>(0.f)
                                 : ei::ploadu<Packet>(out + r * ldo + p * kPacket);
  const float* ar[R];
  for (int r = 0; r < R; ++r) ar[r] = a + pix[r];
  for (int64_t kk = 0; kk < len; ++kk) {
    const int64_t o = aoff[kk];
    if (kMode == kPrefetch) __builtin_prefetch(next + kk * ldf, 0, 2);
    Packet fv[NP];
    for (int p = 0; p < NP; ++p) fv[p] = ei::ploadu<Packet>(f + kk * ldf + p * kPacket);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) acc[r][p] = MaddScalar(ar[r] + o, fv[p], acc[r][p]);
  }
  if (epi != nullptr) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p)
        acc[r][p] = Finish(*epi, p, acc[r][p], res != nullptr ? res + r * ldo : nullptr);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) ei::pstoreu(out + r * ldo + p * kPacket, acc[r][p]);
}

using TileFn = void (*)(const float*, const int64_t*, const int64_t*, int64_t, const float*,
                        int64_t, float*, int64_t, const BlockEpilogue*, const float*,
                        const float*);

template <int R, int kMode>
constexpr TileFn TileFor(int np) {
  return np == 1   ? &Tile<R, 1, kMode>
         : np == 2 ? &Tile<R, 2, kMode>
         : np == 3 ? &Tile<R, 3, kMode>
                   : &Tile<R, 4, kMode>;
}

template <int kMode>
TileFn PickMode(int rows, int np) {
  static_assert(kRows <= 6 && kPackets == 4, "Pick covers 1..6 rows x 1..4 packets");
  switch (rows) {
    case 1: return TileFor<1, kMode>(np);
    case 2: return TileFor<2, kMode>(np);
    case 3: return TileFor<3, kMode>(np);
    case 4: return TileFor<4, kMode>(np);
    case 5: return TileFor<5, kMode>(np);
    default: return TileFor<6, kMode>(np);
  }
}

TileFn Pick(int rows, int np, TileMode mode) {
  return mode == kInit         ? PickMode<kInit>(rows, np)
         : mode == kAccumulate ? PickMode<kAccumulate>(rows, np)
                               : PickMode<kPrefetch>(rows, np);
}

// Offset of patch element kk = (i * k_w + j) * in_c + ci from the window
// origin, for input rows `row_stride` floats apart.
std::vector<int64_t> PatchOffsets(const DiscWindowArgs& w, int64_t row_stride) {
  const int64_t c = w.in_c;
  std::vector<int64_t> off(w.k_h * w.k_w * c);
  for (int64_t i = 0, kk = 0; i < w.k_h; ++i)
    for (int64_t j = 0; j < w.k_w; ++j)
      for (int64_t ci = 0; ci < c; ++ci, ++kk)
        off[kk] = i * w.dilation_h * row_stride + j * w.dilation_w * c + ci;
  return off;
}

// Row e of the padded image n (ext_w pixels, zeros outside the input).
void PadRow(const DiscWindowArgs& w, int64_t ext_w, int64_t n, int64_t e, float* d) {
  const int64_t c = w.in_c, row = ext_w * c, iy = e - w.pad_top;
  const int64_t x0 = std::min(ext_w, w.pad_left);
  const int64_t x1 = std::min(ext_w, w.pad_left + w.in_w);
  if (iy < 0 || iy >= w.in_h || x1 <= x0) {
    std::fill(d, d + row, 0.f);
    return;
  }
  const float* in = static_cast<const float*>(w.input);
  std::fill(d, d + x0 * c, 0.f);
  std::memcpy(d + x0 * c, in + ((n * w.in_h + iy) * w.in_w) * c, (x1 - x0) * c * sizeof(float));
  std::fill(d + x1 * c, d + row, 0.f);
}

// The input a run of output pixels [p0, p0 + np) reads, and each pixel's
// window origin in it (pix).  Unpadded convolutions read the input itself;
// padded ones a band of zero-padded rows built here, inside the task (one
// parallel step instead of a padding pass then the convolution: each step's
// thread hand-offs cost as much as the copy), per image the rows from the
// first covered output row's window to the last one's.  A band covers as
// many of the thread's coming pixels as fit in `budget` floats, not just
// the run's: neighbouring runs' windows overlap, and a band per run copied
// the shared rows again for each (3x3 64@56: ~1.7 output rows per run,
// 2.2 copies of each input row; the 7x7/2 stem about 4).
class RunInput {
 public:
  RunInput(const DiscWindowArgs& w, bool pad, int64_t ext_h, int64_t ext_w)
      : w_(w), pad_(pad), ext_w_(ext_w),
        eff_h_((w.k_h - 1) * w.dilation_h + 1),
        row_(pad ? ext_w * w.in_c : w.in_w * w.in_c),
        image_((pad ? ext_h : w.in_h) * row_) {}

  int64_t row_stride() const { return row_; }

  // Fills pix[0, np); returns the base pointer, or null when out of memory.
  // [lo, hi) (holding the run) is the range a new band should cover, cut
  // back towards the run while it needs more than `budget` floats.
  const float* Prepare(int64_t p0, int64_t np, int64_t lo, int64_t hi, int64_t budget,
                       int64_t* pix) {
    const int64_t ow = w_.out_w, oh = w_.out_h, c = w_.in_c;
    const int64_t sh = w_.stride_h, sw = w_.stride_w;
    // Each pixel's (image, row, column) stepped from the run's first one,
    // not three 64-bit divisions per pixel.
    int64_t x = p0 % ow, g = p0 / ow, n = g / oh, y = g - n * oh;
    auto step = [&] {
      if (++x < ow) return;
      x = 0;
      if (++y < oh) return;
      y = 0;
      ++n;
    };
    if (!pad_) {
      for (int64_t q = 0; q < np; ++q, step()) pix[q] = n * image_ + y * sh * row_ + x * sw * c;
      return static_cast<const float*>(w_.input);
    }
    if (p0 < lo_ || p0 + np > hi_) {
      if (lo < p0 && BandSize(lo, hi) > budget) lo = p0;
      while (hi > p0 + np && BandSize(lo, hi) > budget) hi = p0 + np + (hi - p0 - np) / 2;
      if (!Cover(lo, hi)) return nullptr;
    }
    for (int64_t q = 0; q < np; ++q, step())
      pix[q] = base_[n - n0_] + (y - ylo_[n - n0_]) * sh * row_ + x * sw * c;
    return band_.get();
  }

 private:
  // Floats of the band for output pixels [lo, hi): per image, input rows
  // [ylo * sh, yhi * sh + eff_h) of its output rows [ylo, yhi].
  int64_t BandSize(int64_t lo, int64_t hi) const {
    const int64_t ow = w_.out_w, oh = w_.out_h, g0 = lo / ow, g1 = (hi - 1) / ow;
    int64_t size = 0;
    for (int64_t n = g0 / oh; n <= g1 / oh; ++n) {
      const int64_t ylo = std::max(g0, n * oh) - n * oh, yhi = std::min(g1, n * oh + oh - 1) - n * oh;
      size += ((yhi - ylo) * w_.stride_h + eff_h_) * row_;
    }
    return size;
  }

  // Builds the band for output pixels [lo, hi).
  bool Cover(int64_t lo, int64_t hi) {
    const int64_t ow = w_.out_w, oh = w_.out_h, g0 = lo / ow, g1 = (hi - 1) / ow;
    const int64_t size = BandSize(lo, hi);
    if (size > capacity_) {
      band_.reset(new (std::nothrow) float[size]);
      capacity_ = band_ ? size : 0;
      if (!band_) return false;
    }
    n0_ = g0 / oh;
    base_.clear();
    ylo_.clear();
    float* d = band_.get();
    for (int64_t n = n0_; n <= g1 / oh; ++n) {
      const int64_t ylo = std::max(g0, n * oh) - n * oh, yhi = std::min(g1, n * oh + oh - 1) - n * oh;
      const int64_t rows = (yhi - ylo) * w_.stride_h + eff_h_;
      for (int64_t e = 0; e < rows; ++e) PadRow(w_, ext_w_, n, ylo * w_.stride_h + e, d + e * row_);
      base_.push_back(d - band_.get());
      ylo_.push_back(ylo);
      d += rows * row_;
    }
    lo_ = lo;
    hi_ = hi;
    return true;
  }

  const DiscWindowArgs& w_;
  const bool pad_;
  const int64_t ext_w_, eff_h_, row_, image_;
  // The thread's band memory, kept across calls: bands above malloc's mmap
  // threshold (128 KiB) were fresh zero pages each call, a page fault per
  // 4 KiB.
  static thread_local std::unique_ptr<float[]> band_;
  static thread_local int64_t capacity_;
  // The band's pixels [lo_, hi_), its first image, and per image from it
  // the offset of its rows and its first output row.
  int64_t lo_ = 0, hi_ = 0, n0_ = 0;
  std::vector<int64_t> base_, ylo_;
};

thread_local std::unique_ptr<float[]> RunInput::band_;
thread_local int64_t RunInput::capacity_ = 0;

// out[c] = act(v[c] + res[c]) for c < n (TF's Relu/Relu6: NaN stays NaN).
void FinishResidual(int32_t activation, const float* v, const float* res, int64_t n, float* out) {
  for (int64_t c = 0; c < n; ++c) {
    float x = v[c] + res[c];
    if (activation != DISC_ACT_NONE && x < 0.f) x = 0.f;
    if (activation == DISC_ACT_RELU6 && x > 6.f) x = 6.f;
    out[c] = x;
  }
}

// A vector of oc floats zero-padded to ocp (null stays null).
const float* PadVector(const void* v, int64_t oc, int64_t ocp, std::vector<float>* store) {
  if (v == nullptr || oc == ocp) return static_cast<const float*>(v);
  const float* f = static_cast<const float*>(v);
  store->assign(ocp, 0.f);
  std::copy(f, f + oc, store->begin());
  return store->data();
}

}  // namespace

bool UseDirectConv(const DiscWindowArgs& w) {
  if (w.dtype != DISC_DTYPE_FLOAT || w.kind != DISC_WINDOW_CONV || w.groups > 1) return false;
  if (w.k_h * w.k_w * w.in_c == 0) return false;  // the GEMM path writes the zeros
  // Plain 1x1s included: the epilogue on the tile registers beats the GEMM
  // and its epilogue pass over the output.
  // Kernel policy direct_conv false switches it off.
  return CurrentKernelPolicy().direct_conv;
}

bool RunDirectConv(const DiscWindowArgs& w, int num_threads,
                   const GemmParallelFor& parallel_for, std::string* error) {
  const int64_t oc = w.out_c, k = w.k_h * w.k_w * w.in_c;
  const int64_t ext_h = (w.out_h - 1) * w.stride_h + (w.k_h - 1) * w.dilation_h + 1;
  const int64_t ext_w = (w.out_w - 1) * w.stride_w + (w.k_w - 1) * w.dilation_w + 1;
  const bool pad = w.pad_top > 0 || w.pad_left > 0 || ext_h - w.pad_top > w.in_h ||
                   ext_w - w.pad_left > w.in_w;
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
  std::vector<float> scale_store, shift_store;
  const float* scale = PadVector(w.scale, oc, ocp, &scale_store);
  const float* shift = PadVector(w.shift, oc, ocp, &shift_store);
  const bool epilogue = HasEpilogue(w);
  const float* residual = static_cast<const float*>(w.residual);
  const std::vector<int64_t> aoff =
      PatchOffsets(w, (pad ? ext_w : w.in_w) * w.in_c);
  // Chunks of at most kChunk (kLongChunk) filter rows, of nearly equal size.
  const int64_t chunks = CeilDiv(k, ocp <= 2 * kBlock ? kLongChunk : kChunk);
  const int64_t blocks = CeilDiv(ocp, kBlock);
  const int64_t pixels = w.batch * w.out_h * w.out_w;
  float* out = static_cast<float*>(w.output);
  // Task order: a shard's consecutive tasks share a run's input band
  // (pixel-major) or, where the filter outweighs the input, a channel
  // block's filter rows (block-major: the filter streamed from L3 once per
  // shard instead of once per run; 3x3 512->512 on 7x7 batch 8, CPU time
  // of RunDirectConv over both threads -7%, interleaved medians).
  const int64_t in_floats = w.batch * (pad ? ext_h * ext_w : w.in_h * w.in_w) * w.in_c;
  const bool filter_major = k * ocp > in_floats;
  // Block-major runs shrink back towards 96 pixels where 256 would leave
  // fewer than 2 tasks per thread.
  const int64_t two_per_thread = pixels * blocks / (2 * std::max(num_threads, 1));
  const int64_t run_cap =
      filter_major ? std::max(kRows * kTilesPerTask, std::min(kFilterMajorRun, two_per_thread))
                   : kRows * kTilesPerTask;
  // Runs of at most run_cap pixels, of nearly equal size.
  const int64_t runs = CeilDiv(pixels, run_cap);
  std::atomic<bool> ok{true};
  // Task = (run of output pixels, in NHWC order across rows and images;
  // channel block): every chunk of filter rows is applied to all of the
  // run's pixel tiles before the next chunk, the run's outputs staying in
  // L1.
  auto run = [&](int64_t begin, int64_t end) {
    std::unique_ptr<float[]> tmp;  // a partial block's outputs (ld = its width)
    RunInput input(w, pad, ext_h, ext_w);
    std::vector<int64_t> pixv(run_cap);
    int64_t* pix = pixv.data();
    int64_t prepared = -1;
    const float* src = nullptr;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t pb = filter_major ? t % runs : t / blocks;
      const int64_t cb = filter_major ? t / runs : t % blocks;
      const int64_t p0 = pb * pixels / runs, np_ = (pb + 1) * pixels / runs - p0;
      if (pb != prepared) {
        // The band's wanted pixels: the thread's coming runs (pixel-major)
        // or, where it cycles the runs, all of them (block-major).
        int64_t lo = p0, hi = ((end - 1) / blocks + 1) * pixels / runs;
        if (filter_major) {
          const bool cycles = (end - 1) / runs != begin / runs;
          lo = cycles ? 0 : p0;
          hi = cycles ? pixels : ((end - 1) % runs + 1) * pixels / runs;
        }
        src = input.Prepare(p0, np_, lo, hi, filter_major ? kBandFloatsFilterMajor : kBandFloats,
                            pix);
        prepared = pb;
      }
      const int64_t c0 = cb * kBlock, width = std::min(kBlock, ocp - c0);
      const int np = static_cast<int>(width / kPacket);
      const bool partial = c0 + width > oc;
      if (partial && !tmp) tmp.reset(new (std::nothrow) float[run_cap * width]);
      if (src == nullptr || (partial && !tmp)) {
        ok = false;
        return;
      }
      float* dst = partial ? tmp.get() : out + p0 * oc + c0;
      const int64_t ldo = partial ? width : oc;
      // A partial block's residual and activation are applied as its
      // channels are copied out (a packet past the last channel would read
      // the next pixel's residual, or past the buffer's end).
      const float* res = residual != nullptr && !partial ? residual + p0 * oc + c0 : nullptr;
      const BlockEpilogue epi{scale ? scale + c0 : nullptr, shift ? shift + c0 : nullptr,
                              partial && residual != nullptr ? DISC_ACT_NONE : w.activation};
      // Tiles of near-equal size (5 or 6 pixels): full tiles then the rest
      // would leave a 1-pixel tile per 7x7 image, whose 4 accumulator chains
      // wait on the FMA latency.
      for (int64_t ch = 0; ch < chunks; ++ch) {
        const int64_t k0 = ch * k / chunks, len = (ch + 1) * k / chunks - k0;
        const BlockEpilogue* last = epilogue && ch + 1 == chunks ? &epi : nullptr;
        // The first np tiles prefetch the next chunk's filter rows into L2,
        // tile ti the rows' packet ti (one line per step: all np lines in
        // one tile made it about 3 times slower than the others; spread,
        // 3x3 512->512 on 7x7 batch 1 -2 to -4%, batch 8 neutral,
        // conv_kernel_ab.py): a block's rows are ocp floats apart, 2 KiB at
        // 512 channels, too few per page for the hardware prefetchers, so
        // where the filter is not L2-resident (3x3 512->512: 1.2 MB per
        // block) each chunk's first tile waited on L3 for every row.
        // (Contiguous rows, ocp <= 64, the hardware prefetchers follow.)
        const int64_t k1 = (ch + 1) * k / chunks;
        const bool fetch = ch > 0 && ch + 1 < chunks && k1 + len <= k && ocp > kBlock;
        const int64_t tiles = CeilDiv(np_, kRows);
        for (int64_t ti = 0, q = 0; ti < tiles; ++ti) {
          const int rows = static_cast<int>((ti + 1) * np_ / tiles - ti * np_ / tiles);
          const TileMode mode = ch == 0 ? kInit : fetch && ti < np ? kPrefetch : kAccumulate;
          Pick(rows, np, mode)(src, pix + q, aoff.data() + k0, len, filt + k0 * ocp + c0, ocp,
                               dst + q * ldo, ldo, last,
                               fetch ? filt + k1 * ocp + c0 + ti * kPacket : nullptr,
                               res != nullptr ? res + q * ldo : nullptr);
          q += rows;
        }
      }
      if (partial && residual != nullptr) {
        for (int64_t q = 0; q < np_; ++q)
          FinishResidual(w.activation, dst + q * ldo, residual + (p0 + q) * oc + c0, oc - c0,
                         out + (p0 + q) * oc + c0);
      } else if (partial) {
        for (int64_t q = 0; q < np_; ++q)
          std::copy(dst + q * ldo, dst + q * ldo + (oc - c0), out + (p0 + q) * oc + c0);
      }
    }
  };
  const int64_t tasks = runs * blocks;
  const double flops = 2.0 * pixels * k * oc;
  if (num_threads > 1 && flops >= 4e5) {
    parallel_for(tasks, static_cast<int64_t>(2.0 * pixels / runs * k * kBlock / 32) + 1, run);
  } else {
    run(0, tasks);
  }
  if (!ok) *error = "conv2d: out of memory for a task's buffers";
  return ok.load();
}

}  // namespace tf_disc
