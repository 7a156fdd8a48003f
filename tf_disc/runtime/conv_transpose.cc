#include "tf_disc/runtime/conv_transpose.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>

#include "tf_disc/runtime/window.h"

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
  const int64_t sizes[] = {w.batch, w.in_h, w.in_w, w.in_c, w.out_h, w.out_w, w.out_c,
                           w.k_h, w.k_w, w.pad_top, w.pad_left};
  if (std::any_of(std::begin(sizes), std::end(sizes), [](int64_t s) { return s < 0; })) {
    *error = "conv_transpose: negative size";
  } else if (w.stride_h < 1 || w.stride_w < 1 || w.dilation_h < 1 || w.dilation_w < 1) {
    *error = "conv_transpose: strides and dilations must be positive";
  } else if (w.groups > 1 || w.scale != nullptr || w.shift != nullptr ||
             w.activation != DISC_ACT_NONE) {
    *error = "conv_transpose: groups and epilogues are not supported";
  } else if (w.dtype != DISC_DTYPE_FLOAT && w.dtype != DISC_DTYPE_DOUBLE) {
    *error = "conv_transpose: unsupported dtype " + std::to_string(w.dtype);
  } else if (w.batch * w.out_h * w.out_w * w.out_c != 0 &&
             (w.output == nullptr || (w.in_h * w.in_w * w.in_c != 0 && w.input == nullptr) ||
              (w.k_h * w.k_w != 0 && w.filter == nullptr))) {
    *error = "conv_transpose: null buffer for a non-empty output";
  } else {
    return true;
  }
  return false;
}

template <typename T>
bool Run(const DiscWindowArgs& w, int num_threads, void* eigen_pool,
         const GemmParallelFor& parallel_for, std::string* error) {
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
