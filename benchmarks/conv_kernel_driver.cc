// Times one forward convolution layer on the runtime's kernels alone
// (RunDirectConv, or DepthwiseRowsF32 for depthwise): no TF, no cluster
// launch, so that two source trees' kernels compare in alternating
// processes without rebuilding libblade_disc_tf.so.  Built and run by
// benchmarks/conv_kernel_ab.py.
//
//   conv_kernel_driver KIND BATCH HW IN_C OUT_C K STRIDE THREADS REPEATS
//
// KIND 0 = Conv2D, 1 = depthwise (OUT_C = IN_C); SAME padding, bias + Relu
// epilogue, 64-byte aligned buffers as TF's allocator gives.  Prints the
// median process CPU time per call in ms and a checksum of the output.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "driver_util.h"
#if __has_include("tf_disc/runtime/cpu/conv_depthwise.h")  // an A/B side may predate it
#include "tf_disc/runtime/cpu/conv_depthwise.h"
#endif
#include "tf_disc/runtime/cpu/conv_direct.h"


int main(int argc, char** argv) {
  if (argc != 10) {
    std::fprintf(stderr, "usage: %s KIND BATCH HW IN_C OUT_C K STRIDE THREADS REPEATS\n", argv[0]);
    return 2;
  }
  int64_t v[9];
  for (int i = 0; i < 9; ++i) v[i] = std::atoll(argv[i + 1]);
  const int64_t kind = v[0], batch = v[1], hw = v[2], in_c = v[3], k = v[5], s = v[6];
  const int64_t out_c = kind == 1 ? in_c : v[4];
  const int threads = static_cast<int>(v[7]), repeats = static_cast<int>(std::max<int64_t>(1, v[8]));
  DiscWindowArgs w{};
  w.kind = kind == 1 ? DISC_WINDOW_DEPTHWISE : DISC_WINDOW_CONV;
  w.dtype = DISC_DTYPE_FLOAT;
  w.batch = batch;
  w.in_h = w.in_w = hw;
  w.in_c = in_c;
  w.out_c = out_c;
  w.k_h = w.k_w = k;
  w.stride_h = w.stride_w = s;
  w.dilation_h = w.dilation_w = 1;
  w.out_h = w.out_w = (hw + s - 1) / s;
  w.pad_top = w.pad_left = std::max<int64_t>(0, (w.out_h - 1) * s + k - hw) / 2;
  const size_t out_n = batch * w.out_h * w.out_w * out_c;
  w.input = Filled(batch * hw * hw * in_c, 7919);
  w.filter = Filled(k * k * in_c * (kind == 1 ? 1 : out_c), 104729);
  w.shift = Filled(out_c, 31);
  w.activation = DISC_ACT_RELU;
  float* out = Filled(out_n, 1);
  w.output = out;
  const tf_disc::GemmParallelFor parallel_for =
      [threads](int64_t n, int64_t, const std::function<void(int64_t, int64_t)>& fn) {
        if (threads <= 1) return fn(0, n);
        std::vector<std::thread> pool;
        for (int t = 1; t < threads; ++t)
          pool.emplace_back([&fn, n, t, threads] { fn(n * t / threads, n * (t + 1) / threads); });
        fn(0, n / threads);
        for (std::thread& t : pool) t.join();
      };
  std::vector<double> times;
  std::string error;
  for (int r = 0; r < repeats; ++r) {
    const double start = CpuSeconds();
    if (kind == 1) {
      parallel_for(batch * w.out_h, 0,
                   [&w](int64_t b, int64_t e) { tf_disc::DepthwiseRowsF32(w, b, e); });
    } else if (!tf_disc::RunDirectConv(w, threads, parallel_for, &error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    times.push_back(CpuSeconds() - start);
  }
  std::sort(times.begin(), times.end());
  double checksum = 0;
  for (size_t i = 0; i < out_n; ++i) checksum += out[i] * double(i % 13 + 1);
  std::printf("%.4f %.9g\n", times[times.size() / 2] * 1e3, checksum);
  return 0;
}
