#include "tf_disc/runtime/cpu/conv_filter_grad.h"

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "tf_disc/runtime/cpu/conv_grad_check.h"

namespace tf_disc {
namespace {

template <typename T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Bytes of one thread's patch panel: L2-sized, so the GEMM reads it from cache.
constexpr int64_t kPanelBytes = 512 * 1024;

// Patches of output pixels [p0, p0 + rows) (pixel = (n * out_h + y) * out_w
// + x) as rows of k_h * k_w * in_c elements, zeros outside the input.
template <typename T>
void Patches(const DiscWindowArgs& w, int64_t p0, int64_t rows, T* panel) {
  const T* in = static_cast<const T*>(w.input);
  const int64_t c = w.in_c, k = w.k_h * w.k_w * c;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t p = p0 + r, x = p % w.out_w, y = (p / w.out_w) % w.out_h;
    const int64_t n = p / (w.out_w * w.out_h);
    T* d = panel + r * k;
    for (int64_t i = 0; i < w.k_h; ++i) {
      const int64_t iy = y * w.stride_h + i * w.dilation_h - w.pad_top;
      for (int64_t j = 0; j < w.k_w; ++j, d += c) {
        const int64_t ix = x * w.stride_w + j * w.dilation_w - w.pad_left;
        if (iy < 0 || iy >= w.in_h || ix < 0 || ix >= w.in_w) {
          std::fill(d, d + c, T(0));
        } else {
          std::memcpy(d, in + ((n * w.in_h + iy) * w.in_w + ix) * c, c * sizeof(T));
        }
      }
    }
  }
}

bool Check(const DiscWindowArgs& w, std::string* error) {
  if (!CheckConvGradArgs(w, "conv_backprop_filter", error)) return false;
  if (w.k_h * w.k_w * w.in_c * w.out_c != 0 && w.output == nullptr) {
    *error = "conv_backprop_filter: null buffer for a non-empty output";
    return false;
  }
  if (w.batch * w.out_h * w.out_w * w.k_h * w.k_w * w.in_c * w.out_c != 0 &&
      (w.input == nullptr || w.filter == nullptr)) {
    *error = "conv_backprop_filter: null input for a non-empty gradient";
    return false;
  }
  return true;
}

// out (k x co, row-major) = the sum of `parts` column-major k x co copies,
// in 16 x 16 tiles so that reads and writes both run along cache lines.
template <typename T>
void SumTransposed(const T* partial, int64_t parts, int64_t k, int64_t co, T* out) {
  constexpr int64_t kTile = 16;
  T tile[kTile][kTile];
  for (int64_t i0 = 0; i0 < k; i0 += kTile) {
    const int64_t ni = std::min(kTile, k - i0);
    for (int64_t c0 = 0; c0 < co; c0 += kTile) {
      const int64_t nc = std::min(kTile, co - c0);
      for (int64_t c = 0; c < nc; ++c) {
        const T* src = partial + (c0 + c) * k + i0;
        for (int64_t i = 0; i < ni; ++i) tile[c][i] = src[i];
        for (int64_t part = 1; part < parts; ++part) {
          const T* more = src + part * co * k;
          for (int64_t i = 0; i < ni; ++i) tile[c][i] += more[i];
        }
      }
      for (int64_t i = 0; i < ni; ++i)
        for (int64_t c = 0; c < nc; ++c) out[(i0 + i) * co + c0 + c] = tile[c][i];
    }
  }
}

// Each part's copy of dW is column-major (dW^T, out_c x k): Eigen then
// tiles the k side (576+ rows, whole 48-row micro-tiles) rather than out_c
// (64 = 48 + a 16-row remainder tile).  Measured by benchmarks/
// conv_grad_vs_tf.py --clock cpu (process CPU time medians, ours / stock
// TF), row-major -> column-major copies: 8x56x56x64->64 k3 SAME 1.13 ->
// 1.05, 8x32x32x32->64 k3 1.10 -> 1.06, 8x56x56x256->64 k1 1.10 -> 1.07,
// 32x14x14x128 k3 VALID 0.98 -> 0.97.
template <typename T>
bool Run(const DiscWindowArgs& w, int num_threads, const GemmParallelFor& parallel_for,
         std::string* error) {
  using ColMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const int64_t k = w.k_h * w.k_w * w.in_c, co = w.out_c;
  const int64_t pixels = w.batch * w.out_h * w.out_w;
  T* out = static_cast<T*>(w.output);
  const int64_t chunk = std::max<int64_t>(8, kPanelBytes / static_cast<int64_t>(k * sizeof(T)));
  // Parts of the pixels, one per thread, each with its panel and its copy
  // of dW^T; the copies are summed (and transposed) into the output.
  const int64_t parts = std::max<int64_t>(
      1, std::min<int64_t>(num_threads, (pixels + chunk - 1) / chunk));
  // A 1x1 window at stride 1 without padding: the input's pixels are the
  // patches, read in place rather than copied (panels of the same size: one
  // product per part measured slower in CPU time, 1.10 vs 1.07 ours / TF at
  // 8x56x56x256->64).
  const bool in_place = w.k_h == 1 && w.k_w == 1 && w.stride_h == 1 && w.stride_w == 1 &&
                        w.pad_top == 0 && w.pad_left == 0 && w.out_h == w.in_h &&
                        w.out_w == w.in_w;
  const int64_t panel_size = in_place ? 0 : chunk * k;
  std::unique_ptr<T[]> scratch(new (std::nothrow) T[parts * panel_size + parts * k * co]);
  if (!scratch) {
    *error = "conv_backprop_filter: out of memory for patch panels";
    return false;
  }
  const T* dy = static_cast<const T*>(w.filter);
  T* partial = scratch.get() + parts * panel_size;
  // One parallel region: the thread that finishes the last part sums all
  // copies, instead of a second parallel_for whose thread hop, on a loaded
  // machine, cost more wall time than the sum.
  std::atomic<int64_t> finished{0};
  parallel_for(parts, pixels * k * co / parts + 1, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      T* panel = scratch.get() + part * panel_size;
      Eigen::Map<ColMajor> acc(partial + part * k * co, k, co);
      acc.setZero();
      const int64_t p_end = pixels * (part + 1) / parts;
      for (int64_t p0 = pixels * part / parts; p0 < p_end; p0 += chunk) {
        const int64_t rows = std::min(chunk, p_end - p0);
        const T* patches = in_place ? static_cast<const T*>(w.input) + p0 * k : panel;
        if (!in_place) Patches(w, p0, rows, panel);
        Eigen::Map<const RowMajor<T>> a(patches, rows, k), b(dy + p0 * co, rows, co);
        acc.noalias() += a.transpose() * b;
      }
    }
    if (finished.fetch_add(end - begin, std::memory_order_acq_rel) + (end - begin) == parts)
      SumTransposed(partial, parts, k, co, out);
  });
  return true;
}

}  // namespace

bool RunConvBackpropFilter(const DiscWindowArgs& w, int num_threads,
                           const GemmParallelFor& parallel_for, std::string* error) {
  if (!Check(w, error)) return false;
  const int64_t size = w.k_h * w.k_w * w.in_c * w.out_c;
  if (size == 0) return true;
  if (w.batch * w.out_h * w.out_w == 0) {  // no pixels: a zero gradient
    if (w.dtype == DISC_DTYPE_FLOAT) {
      std::fill_n(static_cast<float*>(w.output), size, 0.f);
    } else {
      std::fill_n(static_cast<double*>(w.output), size, 0.0);
    }
    return true;
  }
  if (w.dtype == DISC_DTYPE_FLOAT) return Run<float>(w, num_threads, parallel_for, error);
  return Run<double>(w, num_threads, parallel_for, error);
}

}  // namespace tf_disc
