#include "tf_disc/runtime/cpu/conv_transpose.h"

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <type_traits>

#include "tf_disc/runtime/cpu/conv_grad_check.h"
#include "tf_disc/runtime/cpu/gemm_packed.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"
#include "tf_disc/runtime/cpu/window.h"

namespace tf_disc {
namespace {

// One phase along one spatial axis: output positions first, first + stride,
// ... (count of them) receive taps tap0, tap0 + step, ... (taps of them),
// which read input positions (t - pad + j * dilation) of a stride-1
// convolution with the taps flipped, whose first `lead` results are
// dropped (they lie before the output's first position).
struct Phase {
  int64_t first, count, taps, tap0, step, dilation, pad, lead;
};

Phase AxisPhase(int64_t first, int64_t out, int64_t k, int64_t stride, int64_t dil,
                int64_t pad) {
  Phase p = {first, first < out ? (out - 1 - first) / stride + 1 : 0, 0, 0, 1, 1, 0, 0};
  const int64_t g = std::gcd(stride, dil);
  p.step = stride / g;
  p.dilation = dil / g;
  const int64_t r = (first + pad) % stride;
  for (int64_t i = 0; i < std::min(k, p.step); ++i) {
    if ((i * dil) % stride == r) {
      p.tap0 = i;
      p.taps = (k - 1 - i) / p.step + 1;
      break;
    }
  }
  if (p.taps == 0) return p;
  // Output position first + t * stride reads input (first + pad - tap * dil) / stride
  // + t for each tap, i.e. base + t + j' * dilation with the taps flipped (j').
  const int64_t base = (first + pad - p.tap0 * dil) / stride - (p.taps - 1) * p.dilation;
  p.pad = base < 0 ? -base : 0;
  p.lead = base > 0 ? base : 0;
  return p;
}

// The phase's taps of filter [k_h, k_w, out_c, in_c], flipped, as a
// convolution filter [taps_h, taps_w, in_c, out_c].
template <typename T>
void PhaseFilter(const DiscWindowArgs& w, const Phase& ph, const Phase& pw, T* dst) {
  const T* f = static_cast<const T*>(w.filter);
  const int64_t ci = w.out_c, co = w.in_c;
  for (int64_t a = 0; a < ph.taps; ++a) {
    for (int64_t b = 0; b < pw.taps; ++b) {
      const int64_t i = ph.tap0 + (ph.taps - 1 - a) * ph.step;
      const int64_t j = pw.tap0 + (pw.taps - 1 - b) * pw.step;
      const T* src = f + (i * w.k_w + j) * ci * co;
      T* d = dst + (a * pw.taps + b) * co * ci;
      for (int64_t o = 0; o < co; ++o)
        for (int64_t c = 0; c < ci; ++c) d[o * ci + c] = src[c * co + o];
    }
  }
}

// Copies the phase's convolution result (or zeros when src is null) into
// its output positions, for rows [begin, end) of batch x ph.count.
template <typename T>
void Scatter(const DiscWindowArgs& w, const Phase& ph, const Phase& pw, const T* src,
             int64_t begin, int64_t end) {
  T* out = static_cast<T*>(w.output);
  const int64_t c = w.out_c, sub_h = ph.count + ph.lead, sub_w = pw.count + pw.lead;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r / ph.count, t = r % ph.count;
    T* d = out + ((n * w.out_h + ph.first + t * w.stride_h) * w.out_w + pw.first) * c;
    if (src == nullptr) {
      for (int64_t u = 0; u < pw.count; ++u) std::fill(d + u * w.stride_w * c,
                                                       d + u * w.stride_w * c + c, T(0));
      continue;
    }
    const T* s = src + ((n * sub_h + ph.lead + t) * sub_w + pw.lead) * c;
    for (int64_t u = 0; u < pw.count; ++u)
      std::memcpy(d + u * w.stride_w * c, s + u * c, c * sizeof(T));
  }
}

bool Check(const DiscWindowArgs& w, std::string* error) {
  if (!CheckConvGradArgs(w, "conv_transpose", error)) return false;
  if (w.batch * w.out_h * w.out_w * w.out_c != 0 &&
      (w.output == nullptr || (w.in_h * w.in_w * w.in_c != 0 && w.input == nullptr) ||
       (w.k_h * w.k_w != 0 && w.filter == nullptr))) {
    *error = "conv_transpose: null buffer for a non-empty output";
    return false;
  }
  return true;
}

// Gradient pixels per col2im panel: the panel (pixels x k_h * k_w * out_c)
// stays in L2 while it is added into the output, beside the packed filter
// and the output rows (512 -> 256 KiB, CPU time ours / TF, 3 rounds x 11
// repeats: 8x56x56x64 3x3/2 1.10 -> 1.04, 8x56x56x128 3x3/2 1.02 -> 1.00,
// 32x14x14x128 VALID 1.02 -> 1.01).
constexpr int64_t kPanelBytes = 256 * 1024;

// A col2im panel, rows x (k_h * k_w * out_c): gradient pixels [p0, p0 +
// rows) times the filter's rows (filter [k_h * k_w * out_c, in_c] read as
// B^T).  float runs the packed AVX-512 kernel on the filter packed once per
// call (gemm_packed.h); elsewhere Eigen, from the filter transposed once
// (in_c x k_h * k_w * out_c: Eigen packs its copy for every panel, faster
// from that layout; A/B, CPU time ours / TF, 21 repeats: 32x14x14x128 VALID
// 1.09 -> 1.06, 8x56x56x128 3x3/2 1.10 -> 1.09, 8x56x56x64 3x3/2 1.14 ->
// 1.11).
template <typename T>
class PanelProduct {
 public:
  explicit PanelProduct(const DiscWindowArgs& w)
      : dy_(static_cast<const T*>(w.input)), co_(w.in_c), k_(w.k_h * w.k_w * w.out_c) {
    if constexpr (std::is_same_v<T, float>) {
      if (PackedGemmAvailable()) {
        packed_ = PackFp32B(Args(0, 0, nullptr, w.filter), 1, InlineFor);
        if (packed_ != nullptr) return;
      }
    }
    ft_.reset(new (std::nothrow) T[co_ * k_]);
    if (ft_ != nullptr)
      Eigen::Map<Mat>(ft_.get(), co_, k_) =
          Eigen::Map<const Mat>(static_cast<const T*>(w.filter), k_, co_).transpose();
  }
  bool ok() const { return packed_ != nullptr || ft_ != nullptr; }

  void Run(int64_t p0, int64_t rows, T* panel) const {
    if constexpr (std::is_same_v<T, float>) {
      if (packed_ != nullptr) {
        GemmArgs g = Args(p0, rows, panel, nullptr);
        g.packed_b32 = packed_.get();
        return RunPackedGemm(g, 1, InlineFor);
      }
    }
    Eigen::Map<Mat>(panel, rows, k_).noalias() =
        Eigen::Map<const Mat>(dy_ + p0 * co_, rows, co_) * Eigen::Map<const Mat>(ft_.get(), co_, k_);
  }

 private:
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  // panel = dy[p0:p0 + rows] (rows x in_c) times filter^T (in_c x k).
  GemmArgs Args(int64_t p0, int64_t rows, T* panel, const void* filter) const {
    return GemmArgs{DISC_DTYPE_FLOAT, false, true, 1, rows, k_, co_, dy_ + p0 * co_, co_, 0,
                    filter, co_, 0, panel, k_, 0};
  }
  // The panel's product runs on its caller's thread (one part per thread).
  static void InlineFor(int64_t n, int64_t, const std::function<void(int64_t, int64_t)>& fn) {
    fn(0, n);
  }

  const T* dy_;
  const int64_t co_, k_;
  std::unique_ptr<Fp32PackedB> packed_;
  std::unique_ptr<T[]> ft_;
};

// Images [n0, n1) of the output by col2im: each panel of gradient pixels
// times the filter (rows x k_h * k_w * out_c) is added into the output rows
// its windows cover.
template <typename T>
void Col2ImImages(const DiscWindowArgs& w, int64_t n0, int64_t n1, int64_t chunk,
                  const PanelProduct<T>& product, T* panel) {
  const int64_t ci = w.out_c, k = w.k_h * w.k_w * ci;
  const int64_t per_image = w.in_h * w.in_w;
  T* dx = static_cast<T*>(w.output);
  const int64_t row = w.out_w * ci;  // one output row
  int64_t zeroed = n0 * w.out_h;  // output rows (n * out_h + y) [n0 * out_h, zeroed) are zero
  for (int64_t p0 = n0 * per_image; p0 < n1 * per_image; p0 += chunk) {
    const int64_t rows = std::min(chunk, n1 * per_image - p0);
    // Output rows are zeroed just before the first panel that adds into
    // them (up to the last one the panel's last pixel reaches), so the adds
    // find them in cache: zeroing a thread's images up front evicted them
    // (8x56x56x64 3x3/2 SAME, CPU time ours / TF 1.13 -> 1.08; 32x14x14x128
    // VALID 1.10 -> 1.08).
    const int64_t last = p0 + rows - 1, ln = last / per_image;
    const int64_t ly = (last / w.in_w) % w.in_h * w.stride_h + (w.k_h - 1) * w.dilation_h -
                       w.pad_top;
    const int64_t need = ln * w.out_h + std::max<int64_t>(0, std::min(w.out_h, ly + 1));
    if (need > zeroed) {
      std::fill(dx + zeroed * row, dx + need * row, T(0));
      zeroed = need;
    }
    product.Run(p0, rows, panel);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t p = p0 + r, x = p % w.in_w, y = (p / w.in_w) % w.in_h, n = p / per_image;
      const T* src = panel + r * k;
      for (int64_t i = 0; i < w.k_h; ++i) {
        const int64_t iy = y * w.stride_h + i * w.dilation_h - w.pad_top;
        if (iy < 0 || iy >= w.out_h) {
          src += w.k_w * ci;
          continue;
        }
        for (int64_t j = 0; j < w.k_w; ++j, src += ci) {
          const int64_t ix = x * w.stride_w + j * w.dilation_w - w.pad_left;
          if (ix < 0 || ix >= w.out_w) continue;
          T* d = dx + ((n * w.out_h + iy) * w.out_w + ix) * ci;
          for (int64_t c = 0; c < ci; ++c) d[c] += src[c];
        }
      }
    }
  }
  std::fill(dx + zeroed * row, dx + n1 * w.out_h * row, T(0));  // rows no window reaches
}

// Col2im, one part of the images per thread (no two write the same output).
template <typename T>
bool RunCol2Im(const DiscWindowArgs& w, int num_threads, const GemmParallelFor& parallel_for,
               std::string* error) {
  const int64_t k = w.k_h * w.k_w * w.out_c;
  // Whole 8-pixel blocks: Eigen's register tile is 8 wide on the panel's
  // pixel side, a remainder runs a slower path.
  const int64_t chunk =
      std::max<int64_t>(8, kPanelBytes / static_cast<int64_t>(k * sizeof(T)) / 8 * 8);
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads, w.batch));
  std::unique_ptr<T[]> panels(new (std::nothrow) T[parts * chunk * k]);
  const PanelProduct<T> product(w);
  if (!panels || !product.ok()) {
    *error = "conv_transpose: out of memory for col2im panels";
    return false;
  }
  const int64_t cost = w.in_h * w.in_w * k * w.in_c * w.batch / parts + 1;
  parallel_for(parts, cost, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part)
      Col2ImImages(w, w.batch * part / parts, w.batch * (part + 1) / parts, chunk, product,
                   panels.get() + part * chunk * k);
  });
  return true;
}

// Whether col2im is used instead of the per-phase convolutions: when every
// thread gets whole images and the output has 64+ channels, and at stride 1
// only where the output has 1.2x the gradient's pixels or more (a VALID
// gradient's "full" convolution, whose direct kernel also multiplies the
// k-1 rows and columns of zero padding).  Measured by `benchmarks/
// conv_grad_vs_tf.py --clock cpu` (process CPU time, the machine being
// shared) with conv_transpose_col2im off vs on, ours / stock TF, direct
// -> col2im: 32x14x14x128->128 k3 VALID 1.31 -> 1.23, 32x14x14x64 VALID
// 1.14 -> 1.05; stride 1 SAME stays direct: 8x56x56x64->64 k3 1.10 ->
// 1.41, 8x56x56x256->64 k1 0.97 -> 1.39, 8x28x28x128 k3 1.04 -> 1.22,
// 8x14x14x256 k3 1.16 -> 1.41, 8x32x32x32->64 k3 0.94 -> 1.13; stride 2 at
// 56x56, 64 / 128 channels: 1.31 / 1.16 -> 1.28 / 1.19.
// Kernel policy conv_transpose_col2im kOff / kOn forces it off / on (where
// supported).
bool UseCol2Im(const DiscWindowArgs& w, int num_threads) {
  if (w.in_h * w.in_w * w.in_c == 0 || w.k_h * w.k_w == 0) return false;
  const PathChoice choice = CurrentKernelPolicy().conv_transpose_col2im;
  if (choice != PathChoice::kAuto) return choice == PathChoice::kOn;
  if (w.batch < num_threads || w.out_c < 64) return false;
  return w.stride_h > 1 || w.stride_w > 1 || 5 * w.out_h * w.out_w >= 6 * w.in_h * w.in_w;
}

template <typename T>
bool Run(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
         const GemmParallelFor& parallel_for, std::string* error) {
  if (UseCol2Im(w, num_threads)) return RunCol2Im<T>(w, num_threads, parallel_for, error);
  const int64_t phases_h = std::min(w.stride_h, w.out_h), phases_w = std::min(w.stride_w, w.out_w);
  // Scratch: the largest phase filter and (strided or offset phases) result.
  int64_t filter_size = 0, result_size = 0;
  bool direct = false;
  for (int64_t a = 0; a < phases_h; ++a) {
    for (int64_t b = 0; b < phases_w; ++b) {
      const Phase ph = AxisPhase(a, w.out_h, w.k_h, w.stride_h, w.dilation_h, w.pad_top);
      const Phase pw = AxisPhase(b, w.out_w, w.k_w, w.stride_w, w.dilation_w, w.pad_left);
      filter_size = std::max(filter_size, ph.taps * pw.taps * w.in_c * w.out_c);
      direct = phases_h == 1 && phases_w == 1 && ph.lead == 0 && pw.lead == 0;
      if (!direct)
        result_size = std::max(result_size, w.batch * (ph.count + ph.lead) *
                                                (pw.count + pw.lead) * w.out_c);
    }
  }
  std::unique_ptr<T[]> filter(new (std::nothrow) T[std::max<int64_t>(filter_size, 1)]);
  std::unique_ptr<T[]> result(new (std::nothrow) T[std::max<int64_t>(result_size, 1)]);
  if (!filter || !result) {
    *error = "conv_transpose: out of memory for phase buffers";
    return false;
  }
  // An empty gradient (or filter) adds nothing: every output is zero.
  const bool zeros = w.in_h * w.in_w * w.in_c == 0;
  for (int64_t a = 0; a < phases_h; ++a) {
    for (int64_t b = 0; b < phases_w; ++b) {
      const Phase ph = AxisPhase(a, w.out_h, w.k_h, w.stride_h, w.dilation_h, w.pad_top);
      const Phase pw = AxisPhase(b, w.out_w, w.k_w, w.stride_w, w.dilation_w, w.pad_left);
      const T* src = nullptr;
      if (ph.taps > 0 && pw.taps > 0 && !zeros) {
        PhaseFilter(w, ph, pw, filter.get());
        DiscWindowArgs sub = {};
        sub.kind = DISC_WINDOW_CONV;
        sub.dtype = w.dtype;
        sub.batch = w.batch;
        sub.in_h = w.in_h, sub.in_w = w.in_w, sub.in_c = w.in_c;
        sub.out_h = ph.count + ph.lead, sub.out_w = pw.count + pw.lead, sub.out_c = w.out_c;
        sub.k_h = ph.taps, sub.k_w = pw.taps, sub.stride_h = 1, sub.stride_w = 1;
        sub.dilation_h = ph.dilation, sub.dilation_w = pw.dilation;
        sub.pad_top = ph.pad, sub.pad_left = pw.pad;
        sub.input = w.input, sub.filter = filter.get();
        sub.output = direct ? w.output : result.get();
        if (!RunWindow(sub, num_threads, eigen_pool, parallel_for, error)) return false;
        if (direct) continue;
        src = result.get();
      }
      const int64_t rows = w.batch * ph.count;
      if (rows > 0 && pw.count > 0)
        parallel_for(rows, pw.count * w.out_c, [&](int64_t lo, int64_t hi) {
          Scatter<T>(w, ph, pw, src, lo, hi);
        });
    }
  }
  return true;
}

}  // namespace

bool RunConvTranspose(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
                      const GemmParallelFor& parallel_for, std::string* error) {
  if (!Check(w, error)) return false;
  if (w.batch * w.out_h * w.out_w * w.out_c == 0) return true;
  if (w.dtype == DISC_DTYPE_FLOAT) return Run<float>(w, num_threads, eigen_pool, parallel_for, error);
  return Run<double>(w, num_threads, eigen_pool, parallel_for, error);
}

}  // namespace tf_disc
