#include "tf_disc/runtime/cpu/depthwise_grad.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include "tf_disc/runtime/cpu/conv_direct.h"
#include "tf_disc/runtime/cpu/conv_grad_check.h"
#include "tf_disc/runtime/cpu/window.h"

namespace tf_disc {
namespace {

// The channel counts of a depthwise gradient: `channels` per-image channels
// times `mult` (the depth multiplier) gradient channels.
bool CheckDepths(int64_t channels, int64_t grad_channels, const char* op, std::string* error) {
  if (channels == 0 ? grad_channels != 0 : grad_channels % channels != 0) {
    *error = std::string(op) + ": gradient depth " + std::to_string(grad_channels) +
             " is not a multiple of the input depth " + std::to_string(channels);
    return false;
  }
  return true;
}

// One 64-byte vector of T (GCC vector extension; unaligned, may alias T).
template <typename T>
struct Vec {
  typedef T V __attribute__((vector_size(64), aligned(sizeof(T)), may_alias));
  static constexpr int kLanes = 64 / sizeof(T);
};

// ---- input gradient ------------------------------------------------------
// Args: input = dy [batch, in_h, in_w, in_c = C * mult], output = dx [batch,
// out_h, out_w, out_c = C], filter [k_h, k_w, C, mult]; strides, dilations
// and pads are the forward convolution's (dx -> dy).

// dx rows [begin, end) (row = n * out_h + y), each pixel gathering the dy
// pixels whose windows cover it; channels [c0, out_c).
template <typename T>
void InputRows(const DiscWindowArgs& w, int64_t begin, int64_t end, int64_t c0 = 0) {
  const T* dy = static_cast<const T*>(w.input);
  const T* f = static_cast<const T*>(w.filter);
  T* dx = static_cast<T*>(w.output);
  const int64_t ch = w.out_c, mult = w.in_c / w.out_c;
  for (int64_t ny = begin; ny < end; ++ny) {
    const int64_t n = ny / w.out_h, y = ny % w.out_h;
    for (int64_t x = 0; x < w.out_w; ++x) {
      T* acc = dx + (ny * w.out_w + x) * ch;
      std::fill(acc + c0, acc + ch, T(0));
      for (int64_t i = 0; i < w.k_h; ++i) {
        const int64_t t = y + w.pad_top - i * w.dilation_h;
        if (t < 0 || t % w.stride_h != 0 || t / w.stride_h >= w.in_h) continue;
        const T* grow = dy + (n * w.in_h + t / w.stride_h) * w.in_w * w.in_c;
        for (int64_t j = 0; j < w.k_w; ++j) {
          const int64_t u = x + w.pad_left - j * w.dilation_w;
          if (u < 0 || u % w.stride_w != 0 || u / w.stride_w >= w.in_w) continue;
          const T* g = grow + (u / w.stride_w) * w.in_c;
          const T* fw = f + (i * w.k_w + j) * w.in_c;
          if (mult == 1) {
            for (int64_t c = c0; c < ch; ++c) acc[c] += g[c] * fw[c];
          } else {
            for (int64_t c = c0; c < ch; ++c) {
              T s = T(0);
              for (int64_t q = 0; q < mult; ++q) s += g[c * mult + q] * fw[c * mult + q];
              acc[c] += s;
            }
          }
        }
      }
    }
  }
}

// Stride 1, multiplier 1, undilated columns: one dx row's vector of
// channels from R dy rows (grows, at the vector's channel) and their filter
// rows (frows: taps j at + j * ch), dx column x = the sum over r, j of dy
// column x + pad_left - j times tap j.  The R x KW filter vectors stay in
// registers and 8 columns a step keep 8 independent FMA chains; the
// overlapping windows' dy loads are common subexpressions.  `add`: add to
// dx (a later group of tap rows) instead of storing.
template <typename T, int R, int KW>
void InputRowVec(const T* const* grows, const T* const* frows, int64_t ch, int64_t out_w,
                 int64_t in_w, int64_t pad_left, bool add, T* out) {
  using V = typename Vec<T>::V;
  auto load = [](const T* p) { return *reinterpret_cast<const V*>(p); };
  V f[R][KW];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < KW; ++j) f[r][j] = load(frows[r] + j * ch);
  auto put = [&](int64_t x, V v) {
    V* o = reinterpret_cast<V*>(out + x * ch);
    *o = add ? *o + v : v;
  };
  // Columns whose KW taps all read inside the dy row: x + pad_left - j in
  // [0, in_w) for every j.
  const int64_t lo = std::min(out_w, std::max<int64_t>(0, KW - 1 - pad_left));
  const int64_t hi = std::max(lo, std::min(out_w, in_w - pad_left));
  auto edge = [&](int64_t x) {
    V acc = {};
    for (int j = 0; j < KW; ++j) {
      const int64_t u = x + pad_left - j;
      if (u < 0 || u >= in_w) continue;
      for (int r = 0; r < R; ++r) acc += load(grows[r] + u * ch) * f[r][j];
    }
    put(x, acc);
  };
  for (int64_t x = 0; x < lo; ++x) edge(x);
  constexpr int kU = 8;
  int64_t x = lo;
  for (; x + kU <= hi; x += kU) {
    V acc[kU] = {};
    const int64_t base = x + pad_left - (KW - 1);
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) {
      const T* g = grows[r] + base * ch;
#pragma GCC unroll 8
      for (int u = 0; u < kU; ++u)
#pragma GCC unroll 5
        for (int j = 0; j < KW; ++j) acc[u] += load(g + (u + KW - 1 - j) * ch) * f[r][j];
    }
#pragma GCC unroll 8
    for (int u = 0; u < kU; ++u) put(x + u, acc[u]);
  }
  for (; x < out_w; ++x) edge(x);
}

// The dx channels [0, cv) (whole vectors) of rows [begin, end) through
// InputRowVec, tap rows in groups of up to 3.
template <typename T, int KW>
void InputRowsVec(const DiscWindowArgs& w, int64_t begin, int64_t end, int64_t cv) {
  const T* dy = static_cast<const T*>(w.input);
  const T* f = static_cast<const T*>(w.filter);
  T* dx = static_cast<T*>(w.output);
  const int64_t ch = w.out_c;
  constexpr int L = Vec<T>::kLanes, kMaxRows = 8;
  for (int64_t ny = begin; ny < end; ++ny) {
    const int64_t n = ny / w.out_h, y = ny % w.out_h;
    T* out = dx + ny * w.out_w * ch;
    const T* grows[kMaxRows];
    const T* frows[kMaxRows];
    int rows = 0;
    for (int64_t i = 0; i < w.k_h; ++i) {
      const int64_t t = y + w.pad_top - i * w.dilation_h;
      if (t < 0 || t >= w.in_h) continue;
      grows[rows] = dy + (n * w.in_h + t) * w.in_w * ch;
      frows[rows++] = f + i * KW * ch;
    }
    if (rows == 0) {
      for (int64_t x = 0; x < w.out_w; ++x) std::fill(out + x * ch, out + x * ch + cv, T(0));
      continue;
    }
    for (int64_t c = 0; c < cv; c += L) {
      for (int r0 = 0; r0 < rows; r0 += 3) {
        const int m = std::min(3, rows - r0);
        const T* g[3];
        const T* fr[3];
        for (int r = 0; r < m; ++r) {
          g[r] = grows[r0 + r] + c;
          fr[r] = frows[r0 + r] + c;
        }
        auto run = m == 3 ? InputRowVec<T, 3, KW> : m == 2 ? InputRowVec<T, 2, KW>
                                                           : InputRowVec<T, 1, KW>;
        run(g, fr, ch, w.out_w, w.in_w, w.pad_left, r0 > 0, out + c);
      }
    }
  }
}

// Rows [begin, end) of a stride-1 multiplier-1 gradient with k_w 3 or 5,
// undilated columns and at least one vector of channels: the vectors by
// InputRowsVec, the rest by InputRows; false (nothing done) otherwise.
template <typename T>
bool InputRowsFast(const DiscWindowArgs& w, int64_t begin, int64_t end) {
  const int64_t cv = w.out_c / Vec<T>::kLanes * Vec<T>::kLanes;
  if (w.stride_h != 1 || w.stride_w != 1 || w.dilation_w != 1 || w.in_c != w.out_c ||
      cv == 0 || w.k_h > 8 || (w.k_w != 3 && w.k_w != 5)) {
    return false;
  }
  if (w.k_w == 3) {
    InputRowsVec<T, 3>(w, begin, end, cv);
  } else {
    InputRowsVec<T, 5>(w, begin, end, cv);
  }
  if (cv < w.out_c) InputRows<T>(w, begin, end, cv);
  return true;
}

// Stride 1, multiplier 1: dx is the depthwise convolution of dy with the
// filter flipped in both spatial dims and padding (k - 1) * dilation - pad,
// run by RunWindow's register-blocked depthwise kernel.  False (nothing
// done) when that padding would be negative (an EXPLICIT pad past the
// window).
template <typename T>
bool AsFlippedDepthwise(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
                        const GemmParallelFor& parallel_for, bool* ok, std::string* error) {
  DiscWindowArgs d = w;
  d.kind = DISC_WINDOW_DEPTHWISE;
  d.pad_top = (w.k_h - 1) * w.dilation_h - w.pad_top;
  d.pad_left = (w.k_w - 1) * w.dilation_w - w.pad_left;
  if (w.stride_h != 1 || w.stride_w != 1 || w.in_c != w.out_c || d.pad_top < 0 ||
      d.pad_left < 0 || w.batch * w.in_h * w.in_w * w.in_c == 0) {
    return false;
  }
  const T* f = static_cast<const T*>(w.filter);
  const int64_t taps = w.k_h * w.k_w, ch = w.out_c;
  std::vector<T> flipped(taps * ch);
  for (int64_t t = 0; t < taps; ++t)
    std::copy(f + t * ch, f + (t + 1) * ch, flipped.data() + (taps - 1 - t) * ch);
  d.filter = flipped.data();
  *ok = RunWindow(d, num_threads, eigen_pool, parallel_for, error);
  return true;
}

template <typename T>
bool RunInput(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
              const GemmParallelFor& parallel_for, std::string* error) {
  const int64_t rows = w.batch * w.out_h;
  const double taps = static_cast<double>(w.k_h * w.k_w) / (w.stride_h * w.stride_w);
  const double cost = w.out_w * static_cast<double>(w.in_c) * taps / 8 + 1;  // cycles per row
  auto over_rows = [&](const std::function<void(int64_t, int64_t)>& rows_fn) {
    if (num_threads <= 1 || rows * cost < 20000) {
      rows_fn(0, rows);
    } else {
      parallel_for(rows, static_cast<int64_t>(cost), rows_fn);
    }
  };
  if (w.batch * w.in_h * w.in_w * w.in_c != 0 && InputRowsFast<T>(w, 0, 0)) {
    over_rows([&w](int64_t b, int64_t e) { InputRowsFast<T>(w, b, e); });
    return true;
  }
  bool ok = true;
  if (AsFlippedDepthwise<T>(w, num_threads, eigen_pool, parallel_for, &ok, error)) return ok;
  over_rows([&w](int64_t b, int64_t e) { InputRows<T>(w, b, e); });
  return true;
}

// ---- filter gradient -----------------------------------------------------
// Args: input = x [batch, in_h, in_w, in_c = C], filter = dy [batch, out_h,
// out_w, out_c = C * mult], output = dF [k_h, k_w, C, mult].

// Adds to acc (one tap's [C] slice) the products of B channels from c0 of
// the columns [lo, hi) of one x row and one dy row: the B sums stay in
// registers across the columns, in four independent chains (one FMA's
// latency would otherwise bound a 16-channel block).
template <typename T, int B>
inline void TapBlock(const T* xrow, const T* grow, int64_t ch, int64_t xstep, int64_t lo,
                     int64_t hi, T* acc) {
  T r[4][B] = {};
  int64_t ox = lo;
  for (; ox + 4 <= hi; ox += 4) {
    for (int u = 0; u < 4; ++u) {
      const T* a = xrow + (ox + u) * xstep;
      const T* g = grow + (ox + u) * ch;
#pragma GCC unroll 16
      for (int b = 0; b < B; ++b) r[u][b] += a[b] * g[b];
    }
  }
  for (; ox < hi; ++ox) {
    const T* a = xrow + ox * xstep;
    const T* g = grow + ox * ch;
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b) r[0][b] += a[b] * g[b];
  }
  for (int b = 0; b < B; ++b) acc[b] += (r[0][b] + r[1][b]) + (r[2][b] + r[3][b]);
}

// The multiplier-1 filter gradient of one dy row for one vector of channels,
// R x KW taps at once: acc[r][j] (tap row r, column j) sums x[r] column
// ox * S + j - pad_left times dy column ox over the row's columns.  Why:
// per column one dy load and S new x loads per tap row feed R * KW
// independent FMA chains, where one tap at a time needs two loads per FMA
// and one chain; x rows are shared by the taps (4 columns per step, so
// that the overlapping windows' loads are common subexpressions).
// xrows: the R x rows at the block's channel; taps[r]: dF's tap row r at the
// block's channel (taps j at + j * ch).
template <typename T, int R, int KW, int S>
void TapRowsVec(const T* const* xrows, const T* grow, int64_t ch, int64_t out_w, int64_t in_w,
                int64_t pad_left, T* const* taps) {
  using V = typename Vec<T>::V;
  V acc[R][KW] = {};
  auto load = [](const T* p) { return *reinterpret_cast<const V*>(p); };
  // Columns whose KW taps all land inside the row.
  int64_t lo, hi, lo2, hi2;
  TapRange(-pad_left, S, out_w, in_w, &lo, &hi);
  TapRange(KW - 1 - pad_left, S, out_w, in_w, &lo2, &hi2);
  lo = std::min(std::max(lo, lo2), out_w);  // TapRange's lo may pass the row
  hi = std::max(lo, std::min(hi, hi2));
  auto edge = [&](int64_t ox) {
    const V g = load(grow + ox * ch);
    for (int j = 0; j < KW; ++j) {
      const int64_t ix = ox * S + j - pad_left;
      if (ix < 0 || ix >= in_w) continue;
      for (int r = 0; r < R; ++r) acc[r][j] += load(xrows[r] + ix * ch) * g;
    }
  };
  for (int64_t ox = 0; ox < lo; ++ox) edge(ox);
  constexpr int kU = 4;
  int64_t ox = lo;
  for (; ox + kU <= hi; ox += kU) {
    V g[kU];
#pragma GCC unroll 4
    for (int u = 0; u < kU; ++u) g[u] = load(grow + (ox + u) * ch);
    const int64_t base = ox * S - pad_left;
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) {
      const T* xr = xrows[r] + base * ch;
#pragma GCC unroll 4
      for (int u = 0; u < kU; ++u)
#pragma GCC unroll 5
        for (int j = 0; j < KW; ++j) acc[r][j] += load(xr + (u * S + j) * ch) * g[u];
    }
  }
  for (; ox < hi; ++ox) {
    const V g = load(grow + ox * ch);
    const int64_t base = ox * S - pad_left;
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < KW; ++j) acc[r][j] += load(xrows[r] + (base + j) * ch) * g;
  }
  for (ox = std::max(lo, hi); ox < out_w; ++ox) edge(ox);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < KW; ++j) {
      V* t = reinterpret_cast<V*>(taps[r] + j * ch);
      *t += acc[r][j];
    }
}

// The vector channel blocks of TapRowsVec for R tap rows (runtime) in
// groups of up to 3; false (nothing done) for a shape it has no
// instantiation for.
template <typename T, int KW, int S>
void TapRowsBlocks(const T* const* xrows, int rows, const T* grow, int64_t ch, int64_t cv,
                   int64_t out_w, int64_t in_w, int64_t pad_left, T* const* taps) {
  constexpr int L = Vec<T>::kLanes;
  for (int r0 = 0; r0 < rows; r0 += 3) {
    const int n = std::min(3, rows - r0);
    for (int64_t c = 0; c < cv; c += L) {
      const T* xr[3];
      T* tp[3];
      for (int r = 0; r < n; ++r) {
        xr[r] = xrows[r0 + r] + c;
        tp[r] = taps[r0 + r] + c;
      }
      if (n == 3) {
        TapRowsVec<T, 3, KW, S>(xr, grow + c, ch, out_w, in_w, pad_left, tp);
      } else if (n == 2) {
        TapRowsVec<T, 2, KW, S>(xr, grow + c, ch, out_w, in_w, pad_left, tp);
      } else {
        TapRowsVec<T, 1, KW, S>(xr, grow + c, ch, out_w, in_w, pad_left, tp);
      }
    }
  }
}

// The dF channels [0, cv) of one dy row through TapRowsBlocks when its
// window (k_w 3 or 5, stride 1 or 2, undilated columns) has an
// instantiation: cv = whole vectors of channels; 0 when none.
template <typename T>
int64_t VectorTaps(const DiscWindowArgs& w, const T* const* xrows, int rows, const T* grow,
                   T* const* taps) {
  const int64_t ch = w.in_c, cv = ch / Vec<T>::kLanes * Vec<T>::kLanes;
  if (cv == 0 || w.dilation_w != 1 || w.in_c != w.out_c) return 0;
  const int64_t s = w.stride_w, kw = w.k_w;
#define TF_DISC_TAP_ROWS(KW, S)                                                               \
  if (kw == KW && s == S) {                                                                   \
    TapRowsBlocks<T, KW, S>(xrows, rows, grow, ch, cv, w.out_w, w.in_w, w.pad_left, taps);  \
    return cv;                                                                                \
  }
  TF_DISC_TAP_ROWS(3, 1)
  TF_DISC_TAP_ROWS(3, 2)
  TF_DISC_TAP_ROWS(5, 1)
  TF_DISC_TAP_ROWS(5, 2)
#undef TF_DISC_TAP_ROWS
  return 0;
}

// dy rows [begin, end) (row = n * out_h + oy) added into acc (dF's shape).
template <typename T>
void FilterRows(const DiscWindowArgs& w, int64_t begin, int64_t end, T* acc) {
  const T* x = static_cast<const T*>(w.input);
  const T* dy = static_cast<const T*>(w.filter);
  const int64_t ch = w.in_c, mult = w.out_c / w.in_c, oc = w.out_c;
  constexpr int kBlock = 64 / sizeof(T) * 4;  // four vector registers
  constexpr int kMaxRows = 8;
  for (int64_t ny = begin; ny < end; ++ny) {
    const int64_t n = ny / w.out_h, oy = ny % w.out_h;
    const T* grow = dy + ny * w.out_w * oc;
    // The tap rows inside the image, for the vector kernel.
    const T* xrows[kMaxRows];
    T* taps[kMaxRows];
    int rows = 0;
    for (int64_t i = 0; i < w.k_h && w.k_h <= kMaxRows; ++i) {
      const int64_t iy = oy * w.stride_h + i * w.dilation_h - w.pad_top;
      if (iy < 0 || iy >= w.in_h) continue;
      xrows[rows] = x + (n * w.in_h + iy) * w.in_w * ch;
      taps[rows++] = acc + i * w.k_w * oc;
    }
    const int64_t c0 = w.k_h <= kMaxRows ? VectorTaps<T>(w, xrows, rows, grow, taps) : 0;
    for (int64_t i = 0; i < w.k_h; ++i) {
      const int64_t iy = oy * w.stride_h + i * w.dilation_h - w.pad_top;
      if (iy < 0 || iy >= w.in_h) continue;
      for (int64_t j = 0; j < w.k_w; ++j) {
        const int64_t off = j * w.dilation_w - w.pad_left;
        // The output columns whose tap lands inside the input row: a tap
        // range of conv_direct.h with the roles of taps and columns swapped.
        int64_t lo, hi;
        TapRange(off, w.stride_w, w.out_w, w.in_w, &lo, &hi);
        if (lo == hi) continue;
        // Column ox reads x column ox * stride + off.
        const T* xrow = x + ((n * w.in_h + iy) * w.in_w + off) * ch;
        T* tap = acc + (i * w.k_w + j) * oc;
        if (mult == 1) {
          const int64_t step = w.stride_w * ch;
          int64_t c = c0;
          for (; c + kBlock <= ch; c += kBlock)
            TapBlock<T, kBlock>(xrow + c, grow + c, ch, step, lo, hi, tap + c);
          for (; c + kBlock / 4 <= ch; c += kBlock / 4)
            TapBlock<T, kBlock / 4>(xrow + c, grow + c, ch, step, lo, hi, tap + c);
          for (; c < ch; ++c) TapBlock<T, 1>(xrow + c, grow + c, ch, step, lo, hi, tap + c);
        } else {
          for (int64_t ox = lo; ox < hi; ++ox) {
            const T* a = xrow + ox * w.stride_w * ch;
            const T* g = grow + ox * oc;
            for (int64_t c = 0; c < ch; ++c)
              for (int64_t q = 0; q < mult; ++q) tap[c * mult + q] += a[c] * g[c * mult + q];
          }
        }
      }
    }
  }
}

// Parts of the dy rows, one per thread, each summing into its own copy of
// dF (part 0 into the output); the copies are then added on the caller
// (dF is small: k_h * k_w * out_c elements).
template <typename T>
bool RunFilter(const DiscWindowArgs& w, int num_threads, const GemmParallelFor& parallel_for,
               std::string* error) {
  const int64_t rows = w.batch * w.out_h, size = w.k_h * w.k_w * w.out_c;
  const double row_cost = static_cast<double>(w.out_w) * w.out_c * w.k_h * w.k_w / 8 + 1;
  const int64_t parts = rows * row_cost < 20000 ? 1 : std::max<int64_t>(
      1, std::min<int64_t>(num_threads, rows));
  T* out = static_cast<T*>(w.output);
  std::unique_ptr<T[]> extra;
  if (parts > 1) {
    extra.reset(new (std::nothrow) T[(parts - 1) * size]);
    if (!extra) {
      *error = "depthwise_backprop_filter: out of memory for partial sums";
      return false;
    }
  }
  auto part_fn = [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      T* acc = p == 0 ? out : extra.get() + (p - 1) * size;
      std::fill(acc, acc + size, T(0));
      FilterRows<T>(w, rows * p / parts, rows * (p + 1) / parts, acc);
    }
  };
  if (parts == 1) {
    part_fn(0, 1);
    return true;
  }
  parallel_for(parts, static_cast<int64_t>(row_cost * rows / parts), part_fn);
  for (int64_t p = 1; p < parts; ++p) {
    const T* src = extra.get() + (p - 1) * size;
    for (int64_t e = 0; e < size; ++e) out[e] += src[e];
  }
  return true;
}

template <typename T>
bool Dispatch(bool input, const DiscWindowArgs& w, int num_threads, void* eigen_pool,
              const GemmParallelFor& parallel_for, std::string* error) {
  return input ? RunInput<T>(w, num_threads, eigen_pool, parallel_for, error)
               : RunFilter<T>(w, num_threads, parallel_for, error);
}

bool Run(bool input, const DiscWindowArgs& w, int num_threads, void* eigen_pool,
         const GemmParallelFor& parallel_for, std::string* error) {
  const char* op = input ? "depthwise_backprop_input" : "depthwise_backprop_filter";
  if (!CheckConvGradArgs(w, op, error)) return false;
  // The image's channels and the gradient's (a multiple of them).
  const int64_t channels = input ? w.out_c : w.in_c, grad = input ? w.in_c : w.out_c;
  if (!CheckDepths(channels, grad, op, error)) return false;
  const int64_t out_size = input ? w.batch * w.out_h * w.out_w * w.out_c
                                 : w.k_h * w.k_w * w.out_c;
  if (out_size == 0) return true;
  if (w.output == nullptr) {
    *error = std::string(op) + ": null buffer for a non-empty output";
    return false;
  }
  const int64_t work = input ? w.batch * w.in_h * w.in_w * w.in_c * w.k_h * w.k_w
                             : w.batch * w.out_h * w.out_w * w.in_c;
  if (work != 0 && (w.input == nullptr || w.filter == nullptr)) {
    *error = std::string(op) + ": null input for a non-empty gradient";
    return false;
  }
  if (w.dtype == DISC_DTYPE_FLOAT)
    return Dispatch<float>(input, w, num_threads, eigen_pool, parallel_for, error);
  return Dispatch<double>(input, w, num_threads, eigen_pool, parallel_for, error);
}

}  // namespace

bool RunDepthwiseBackpropInput(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
                               const GemmParallelFor& parallel_for, std::string* error) {
  return Run(true, w, num_threads, eigen_pool, parallel_for, error);
}

bool RunDepthwiseBackpropFilter(const DiscWindowArgs& w, int num_threads,
                                const GemmParallelFor& parallel_for, std::string* error) {
  return Run(false, w, num_threads, nullptr, parallel_for, error);
}

}  // namespace tf_disc
