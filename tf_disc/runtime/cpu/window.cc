#include "tf_disc/runtime/cpu/window.h"

#include "tf_disc/runtime/cpu/conv_bf16.h"
#include "tf_disc/runtime/cpu/conv_depthwise.h"
#include "tf_disc/runtime/cpu/conv_direct.h"
#include "tf_disc/runtime/cpu/conv_filter_grad.h"
#include "tf_disc/runtime/cpu/conv_transpose.h"
#include "tf_disc/runtime/cpu/depthwise_grad.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>

namespace tf_disc {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows [r0, r1) of group g's patch matrix (row = output pixel n*oh*ow +
// y*ow + x, columns = (i, j, c) in HWIO filter order over the group's cg
// input channels) into buf with row stride k.
template <typename T>
void Im2Col(const DiscWindowArgs& w, int64_t cg, int64_t g, int64_t r0, int64_t r1, T* buf) {
  const T* in = static_cast<const T*>(w.input) + g * cg;
  const int64_t k = w.k_h * w.k_w * cg, ic = w.in_c;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t x = r % w.out_w, y = (r / w.out_w) % w.out_h, n = r / (w.out_w * w.out_h);
    T* row = buf + (r - r0) * k;
    for (int64_t i = 0; i < w.k_h; ++i) {
      const int64_t iy = y * w.stride_h - w.pad_top + i * w.dilation_h;
      T* seg = row + i * w.k_w * cg;
      if (iy < 0 || iy >= w.in_h) {
        std::fill(seg, seg + w.k_w * cg, T(0));
        continue;
      }
      const T* src = in + ((n * w.in_h + iy) * w.in_w) * ic;
      const int64_t bx = x * w.stride_w - w.pad_left;
      if (cg == ic && w.dilation_w == 1 && bx >= 0 && bx + w.k_w <= w.in_w) {
        std::copy(src + bx * ic, src + (bx + w.k_w) * ic, seg);
        continue;
      }
      for (int64_t j = 0; j < w.k_w; ++j) {
        const int64_t ix = bx + j * w.dilation_w;
        T* dst = seg + j * cg;
        if (ix < 0 || ix >= w.in_w) {
          std::fill(dst, dst + cg, T(0));
        } else {
          std::copy(src + ix * ic, src + ix * ic + cg, dst);
        }
      }
    }
  }
}

// Group g's product: m patch rows (row stride lda) x the filter's columns
// of the group into the output rows starting at c (group offset added).
GemmArgs ConvGemm(const DiscWindowArgs& w, int64_t groups, int64_t m, const void* a,
                  int64_t lda, void* c) {
  const int64_t cg = w.in_c / groups, og = w.out_c / groups;
  return GemmArgs{w.dtype, false, false, 1, m, og, w.k_h * w.k_w * cg, a, lda, 0,
                  w.filter, w.out_c, 0, c, w.out_c, 0};
}

// The epilogue over the whole output, for paths whose GEMM wrote it all.
template <typename T>
bool EpiloguePass(const DiscWindowArgs& w, int num_threads, const GemmParallelFor& parallel_for) {
  if (!HasEpilogue(w)) return true;
  T* out = static_cast<T*>(w.output);
  const int64_t rows = w.batch * w.out_h * w.out_w;
  auto run = [&](int64_t b, int64_t e) {
    ApplyEpilogue(w, out + b * w.out_c, w.out_c, e - b, 0, w.out_c);
  };
  if (num_threads <= 1 || rows * w.out_c < 100000) {
    run(0, rows);
  } else {
    parallel_for(rows, w.out_c, run);
  }
  return true;
}

// Convolution as GEMMs (groups as a batch of GEMMs over channel slices): a
// 1x1/stride-1/unpadded one reads the input as the patch matrix; otherwise
// each task builds patch panels of `panel` rows (up to 512 KB, L2-resident,
// and enough of them to balance the threads) and multiplies them
// single-threaded.
template <typename T>
bool Conv(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
          const GemmParallelFor& parallel_for, std::string* error) {
  const int64_t groups = std::max<int64_t>(1, w.groups);
  const int64_t cg = w.in_c / groups, og = w.out_c / groups;
  const int64_t rows = w.batch * w.out_h * w.out_w;
  const int64_t k = w.k_h * w.k_w * cg;
  T* out = static_cast<T*>(w.output);
  if (w.k_h == 1 && w.k_w == 1 && w.stride_h == 1 && w.stride_w == 1 && w.pad_top == 0 &&
      w.pad_left == 0 && w.out_h == w.in_h && w.out_w == w.in_w) {
    GemmArgs g = ConvGemm(w, groups, rows, w.input, w.in_c, out);
    g.batch = groups;
    g.stride_a = cg;
    g.stride_b = g.stride_c = og;
    return RunGemm(g, num_threads, eigen_pool, parallel_for, error) &&
           EpiloguePass<T>(w, num_threads, parallel_for);
  }
  const int64_t panel = std::max<int64_t>(
      32, std::min<int64_t>(512, (int64_t(512) * 1024 / sizeof(T) / std::max<int64_t>(k, 1))
                                     / 16 * 16));
  const int64_t panels = CeilDiv(rows, panel);
  // Few rows (deep layers, small images): one patch matrix per group and
  // the threaded GEMM, which packs the filter once instead of once per panel.
  if (num_threads > 1 && panels < 2 * num_threads) {
    std::unique_ptr<T[]> buf(new (std::nothrow) T[groups * rows * k]);
    if (!buf) {
      *error = "conv2d: out of memory for the patch matrix";
      return false;
    }
    for (int64_t g = 0; g < groups; ++g) Im2Col<T>(w, cg, g, 0, rows, buf.get() + g * rows * k);
    GemmArgs g = ConvGemm(w, groups, rows, buf.get(), k, out);
    g.batch = groups;
    g.stride_a = rows * k;
    g.stride_b = g.stride_c = og;
    return RunGemm(g, num_threads, eigen_pool, parallel_for, error) &&
           EpiloguePass<T>(w, num_threads, parallel_for);
  }
  // Tasks = (panel, group); each builds its panel and multiplies it.
  const int64_t tasks = panels * groups;
  std::atomic<bool> ok{true};
  auto run = [&](int64_t begin, int64_t end) {
    std::unique_ptr<T[]> buf(new (std::nothrow) T[panel * k]);
    if (!buf) {
      ok = false;
      return;
    }
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t / groups, g = t % groups;
      const int64_t r0 = p * panel, r1 = std::min(rows, r0 + panel);
      Im2Col<T>(w, cg, g, r0, r1, buf.get());
      GemmArgs a = ConvGemm(w, groups, r1 - r0, buf.get(), k, out + r0 * w.out_c + g * og);
      a.b = static_cast<const T*>(w.filter) + g * og;
      std::string err;
      if (!RunGemm(a, 1, nullptr, parallel_for, &err)) ok = false;
      ApplyEpilogue(w, out + r0 * w.out_c + g * og, w.out_c, r1 - r0, g * og, (g + 1) * og);
    }
  };
  const double flops = 2.0 * rows * k * w.out_c;
  if (num_threads <= 1 || flops < 4e5) {
    run(0, tasks);
  } else {
    parallel_for(tasks, static_cast<int64_t>(flops / tasks / 8) + 1, run);
  }
  if (!ok) *error = "conv2d: out of memory for patch panels";
  return ok.load();
}

// Output rows (n, y) of a depthwise convolution or pooling, vectorized over
// channels: acc[c] accumulates the window of pixel x.
template <typename T>
void DirectRows(const DiscWindowArgs& w, int64_t begin, int64_t end) {
  const T* in = static_cast<const T*>(w.input);
  const T* f = static_cast<const T*>(w.filter);
  T* out = static_cast<T*>(w.output);
  const int64_t mult = w.kind == DISC_WINDOW_DEPTHWISE ? w.out_c / w.in_c : 1;
  const int64_t ic = w.in_c, oc = w.out_c;
  for (int64_t ny = begin; ny < end; ++ny) {
    const int64_t n = ny / w.out_h, y = ny % w.out_h;
    const int64_t by = y * w.stride_h - w.pad_top;
    int64_t i0, i1;
    TapRange(by, w.dilation_h, w.k_h, w.in_h, &i0, &i1);
    for (int64_t x = 0; x < w.out_w; ++x) {
      T* acc = out + ((n * w.out_h + y) * w.out_w + x) * oc;
      const int64_t bx = x * w.stride_w - w.pad_left;
      int64_t j0, j1;
      TapRange(bx, w.dilation_w, w.k_w, w.in_w, &j0, &j1);
      const T init = w.kind == DISC_WINDOW_MAX_POOL ? -std::numeric_limits<T>::infinity() : T(0);
      std::fill(acc, acc + oc, init);
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t iy = by + i * w.dilation_h;
        for (int64_t j = j0; j < j1; ++j) {
          const T* src = in + ((n * w.in_h + iy) * w.in_w + bx + j * w.dilation_w) * ic;
          if (w.kind == DISC_WINDOW_DEPTHWISE) {
            const T* fw = f + (i * w.k_w + j) * oc;
            if (mult == 1) {
              for (int64_t c = 0; c < ic; ++c) acc[c] += src[c] * fw[c];
            } else {
              for (int64_t c = 0; c < ic; ++c)
                for (int64_t q = 0; q < mult; ++q) acc[c * mult + q] += src[c] * fw[c * mult + q];
            }
          } else if (w.kind == DISC_WINDOW_MAX_POOL) {
            for (int64_t c = 0; c < ic; ++c) acc[c] = src[c] > acc[c] ? src[c] : acc[c];
          } else {
            for (int64_t c = 0; c < ic; ++c) acc[c] += src[c];
          }
        }
      }
      if (w.kind == DISC_WINDOW_AVG_POOL) {
        const T inv = T(1) / T((i1 - i0) * (j1 - j0));
        for (int64_t c = 0; c < oc; ++c) acc[c] *= inv;
      }
      if (w.kind == DISC_WINDOW_DEPTHWISE) ApplyEpilogue(w, acc, oc, 1, 0, oc);
    }
  }
}

// Rows of a depthwise convolution or pooling: the register-blocked float
// depthwise kernel (conv_direct.cc) where it applies, else DirectRows.
template <typename T>
void WindowRows(const DiscWindowArgs& w, int64_t begin, int64_t end) {
  if (std::is_same<T, float>::value && w.kind == DISC_WINDOW_DEPTHWISE && w.out_c == w.in_c) {
    DepthwiseRowsF32(w, begin, end);
  } else {
    DirectRows<T>(w, begin, end);
  }
}

template <typename T>
bool Run(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
         const GemmParallelFor& parallel_for, std::string* error) {
  if (w.kind == DISC_WINDOW_CONV) return Conv<T>(w, num_threads, eigen_pool, parallel_for, error);
  const int64_t rows = w.batch * w.out_h;
  const double cost = 2.0 * w.out_w * w.out_c * w.k_h * w.k_w / 4 + 1;  // ~4 flop/cycle
  if (num_threads <= 1 || rows * cost < 20000) {
    WindowRows<T>(w, 0, rows);
  } else {
    parallel_for(rows, static_cast<int64_t>(cost),
                 [&w](int64_t b, int64_t e) { WindowRows<T>(w, b, e); });
  }
  return true;
}

bool Check(const DiscWindowArgs& w, std::string* error) {
  const int64_t sizes[] = {w.batch, w.in_h, w.in_w, w.in_c, w.out_h, w.out_w, w.out_c,
                           w.k_h, w.k_w, w.pad_top, w.pad_left};
  for (int64_t s : sizes) {
    if (s < 0) {
      *error = "window: negative size";
      return false;
    }
  }
  if (w.stride_h < 1 || w.stride_w < 1 || w.dilation_h < 1 || w.dilation_w < 1) {
    *error = "window: strides and dilations must be positive";
    return false;
  }
  const bool pool = w.kind == DISC_WINDOW_MAX_POOL || w.kind == DISC_WINDOW_AVG_POOL;
  if (w.kind < DISC_WINDOW_CONV || w.kind > DISC_WINDOW_AVG_POOL) {
    *error = "window: unknown kind " + std::to_string(w.kind);
    return false;
  }
  const int64_t groups = w.groups == 0 ? 1 : w.groups;
  if (groups < 1 || (groups > 1 && w.kind != DISC_WINDOW_CONV) || w.in_c % groups != 0 ||
      w.out_c % groups != 0) {
    *error = "window: groups " + std::to_string(w.groups) + " do not divide the channels";
    return false;
  }
  if (w.activation < DISC_ACT_NONE || w.activation > DISC_ACT_RELU6 ||
      (pool && HasEpilogue(w)) || (w.residual != nullptr && w.kind != DISC_WINDOW_CONV)) {
    *error = "window: bad epilogue (activation " + std::to_string(w.activation) + ")";
    return false;
  }
  if ((pool && w.out_c != w.in_c) ||
      (w.kind == DISC_WINDOW_DEPTHWISE && (w.in_c == 0 || w.out_c % w.in_c != 0))) {
    *error = "window: channel counts do not match the kind";
    return false;
  }
  const bool empty = w.batch * w.out_h * w.out_w * w.out_c == 0;
  if (!empty && (w.output == nullptr || w.input == nullptr || (!pool && w.filter == nullptr))) {
    *error = "window: null buffer for a non-empty output";
    return false;
  }
  return true;
}

}  // namespace

bool RunWindow(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
               const GemmParallelFor& parallel_for, std::string* error) {
  if (w.kind == DISC_WINDOW_CONV_TRANSPOSE)  // runtime/cpu/conv_transpose.cc
    return RunConvTranspose(w, num_threads, eigen_pool, parallel_for, error);
  if (w.kind == DISC_WINDOW_CONV_BACKPROP_FILTER)  // runtime/cpu/conv_filter_grad.cc
    return RunConvBackpropFilter(w, num_threads, parallel_for, error);
  if (w.kind == DISC_WINDOW_DEPTHWISE_BACKPROP_INPUT)  // runtime/cpu/depthwise_grad.cc
    return RunDepthwiseBackpropInput(w, num_threads, eigen_pool, parallel_for, error);
  if (w.kind == DISC_WINDOW_DEPTHWISE_BACKPROP_FILTER)
    return RunDepthwiseBackpropFilter(w, num_threads, parallel_for, error);
  if (!Check(w, error)) return false;
  if (w.batch * w.out_h * w.out_w * w.out_c == 0) return true;
  if (UseDirectConv(w)) return RunDirectConv(w, num_threads, parallel_for, error);
  switch (w.dtype) {
    case DISC_DTYPE_FLOAT:
      return Run<float>(w, num_threads, eigen_pool, parallel_for, error);
    case DISC_DTYPE_DOUBLE:
      return Run<double>(w, num_threads, eigen_pool, parallel_for, error);
    default:
      *error = "window: unsupported dtype " + std::to_string(w.dtype);
      return false;
  }
}

bool RunWindowFastBf16(const DiscWindowArgs& args, const Bf16PackedB* packed_filter,
                       int num_threads, void* eigen_pool, const GemmParallelFor& parallel_for,
                       std::string* error) {
  DiscWindowArgs w = args;
  w.dtype &= ~DISC_GEMM_FAST_BF16;
  if (w.kind == DISC_WINDOW_CONV) {
    if (!Check(w, error)) return false;
    if (w.batch * w.out_h * w.out_w * w.out_c == 0) return true;
    if (RunConvBf16(w, packed_filter, num_threads, parallel_for)) return true;
  }
  return RunWindow(w, num_threads, eigen_pool, parallel_for, error);
}

}  // namespace tf_disc
