// The bf16 fast-math convolution (conv_bf16.h).
#include "tf_disc/runtime/cpu/conv_bf16.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tf_disc/runtime/cpu/conv_direct.h"

namespace tf_disc {

#ifdef DISC_BF16_KERNEL
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kRowUnit = 32;         // rows per panel: a multiple of two AMX tiles
constexpr int64_t kMaxPanelRows = 512;
constexpr int64_t kPanelBytes = 256 * 1024;  // a panel of patch rows stays in L2
constexpr int64_t kColUnit = 64;         // a packed B group
constexpr int64_t kMinRowsToPack = 16;   // as gemm_bf16.cc's kMinRows

// Output pixels [r0, r1) (r = (n * out_h + y) * out_w + x) as bf16 patch
// rows a_row apart: for each filter tap (i, j), in_c input channels (zeros
// where the tap falls in the padding), then zeros up to a_row.
void PatchRows(const DiscWindowArgs& w, int64_t r0, int64_t r1, uint16_t* buf, int64_t a_row) {
  const float* in = static_cast<const float*>(w.input);
  const int64_t ic = w.in_c, span = w.k_w * ic, k = w.k_h * span;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t x = r % w.out_w, y = (r / w.out_w) % w.out_h, n = r / (w.out_w * w.out_h);
    uint16_t* row = buf + (r - r0) * a_row;
    for (int64_t i = 0; i < w.k_h; ++i) {
      const int64_t iy = y * w.stride_h - w.pad_top + i * w.dilation_h;
      uint16_t* seg = row + i * span;
      if (iy < 0 || iy >= w.in_h) {
        std::memset(seg, 0, span * sizeof(uint16_t));
        continue;
      }
      const float* src = in + ((n * w.in_h + iy) * w.in_w) * ic;
      const int64_t bx = x * w.stride_w - w.pad_left;
      if (w.dilation_w == 1 && bx >= 0 && bx + w.k_w <= w.in_w) {
        ConvertToBf16(src + bx * ic, span, seg);
        continue;
      }
      for (int64_t j = 0; j < w.k_w; ++j) {
        const int64_t ix = bx + j * w.dilation_w;
        if (ix < 0 || ix >= w.in_w) {
          std::memset(seg + j * ic, 0, ic * sizeof(uint16_t));
        } else {
          ConvertToBf16(src + ix * ic, ic, seg + j * ic);
        }
      }
    }
    std::memset(row + k, 0, (a_row - k) * sizeof(uint16_t));
  }
}

}  // namespace

bool ConvBf16Applies(const DiscWindowArgs& w) {
  return w.kind == DISC_WINDOW_CONV && w.dtype == DISC_DTYPE_FLOAT && w.groups <= 1 &&
         Bf16GemmApplies(ConvFilterAsB(w));
}

bool RunConvBf16(const DiscWindowArgs& w, const Bf16PackedB* packed_filter, int num_threads,
                 const GemmParallelFor& parallel_for) {
  if (!ConvBf16Applies(w)) return false;
  const int64_t rows = w.batch * w.out_h * w.out_w, k = w.k_h * w.k_w * w.in_c;
  std::unique_ptr<Bf16PackedB> own;
  if (packed_filter == nullptr) {
    if (rows < kMinRowsToPack) return false;  // packing costs more than it saves
    own = PackBf16B(ConvFilterAsB(w), num_threads, parallel_for);
    if (own == nullptr) return false;
    packed_filter = own.get();
  }
  const int64_t a_row = CeilDiv(k, 32) * 32;
  // Panels as large as L2 allows, then smaller until every thread has a few.
  int64_t panel = std::clamp<int64_t>(kPanelBytes / (2 * a_row) / kRowUnit * kRowUnit,
                                      kRowUnit, kMaxPanelRows);
  while (panel > kRowUnit && CeilDiv(rows, panel) < 4 * int64_t(num_threads)) panel -= kRowUnit;
  const int64_t panels = CeilDiv(rows, panel);
  // Few panels (small images, deep layers): split the channels as well.
  int64_t col_step = w.out_c;
  if (num_threads > 1 && panels < 2 * int64_t(num_threads)) {
    const int64_t blocks = std::min(CeilDiv(w.out_c, kColUnit), CeilDiv(2 * num_threads, panels));
    col_step = CeilDiv(CeilDiv(w.out_c, blocks), kColUnit) * kColUnit;
  }
  const int64_t col_blocks = CeilDiv(w.out_c, col_step), tasks = panels * col_blocks;
  float* out = static_cast<float*>(w.output);
  std::atomic<bool> ok{true};
  auto run = [&](int64_t begin, int64_t end) {
    const size_t bytes = size_t(panel * a_row) * sizeof(uint16_t);
    std::unique_ptr<uint16_t, decltype(&std::free)> buf(
        static_cast<uint16_t*>(std::aligned_alloc(64, CeilDiv(bytes, 64) * 64)), &std::free);
    if (buf == nullptr) {
      ok = false;
      return;
    }
    int64_t built = -1;  // the panel whose patch rows buf holds
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t / col_blocks, c0 = (t % col_blocks) * col_step;
      const int64_t r0 = p * panel, r1 = std::min(rows, r0 + panel);
      const int64_t c1 = std::min(w.out_c, c0 + col_step);
      if (built != p) PatchRows(w, r0, r1, buf.get(), a_row);
      built = p;
      Bf16RowsTimesPackedB(buf.get(), a_row, r1 - r0, k, *packed_filter, c0, c1,
                           out + r0 * w.out_c, w.out_c);
      ApplyEpilogue(w, out + r0 * w.out_c + c0, w.out_c, r1 - r0, c0, c1);
    }
  };
  const double flops = 2.0 * rows * k * w.out_c;
  if (num_threads <= 1 || tasks == 1 || flops < 4e5) {
    run(0, tasks);
  } else {
    parallel_for(tasks, static_cast<int64_t>(flops / tasks / 32) + 1, run);
  }
  // Out of memory for a panel: some outputs may be missing, so the caller
  // runs the fp32 convolution over all of them.
  return ok.load();
}

#else  // no bf16 kernel in this library: the fp32 convolution runs

bool ConvBf16Applies(const DiscWindowArgs&) { return false; }

bool RunConvBf16(const DiscWindowArgs&, const Bf16PackedB*, int, const GemmParallelFor&) {
  return false;
}

#endif  // DISC_BF16_KERNEL

}  // namespace tf_disc
