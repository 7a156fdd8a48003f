// Driver for benchmarks/gemm_bf16_cpu.py: the bf16 GEMM kernel
// (runtime/cpu/gemm_bf16.cc) alone, timed in this thread's CPU time (min of
// repeats), which a machine shared with other jobs perturbs far less than
// wall time; plus the measured vdpbf16ps peak of one core, so that
// efficiency is a ratio of two measurements.  One line per shape:
//   batch m n k trans_b packed_b seconds max_err
// (max_err: sampled |C - exact| / sum |a||b|, float64 reference).
// Usage: gemm_bf16_cpu REPEATS THREAD_SPLIT MAX_TIER [batch m n k trans_b packed_b]...
// THREAD_SPLIT: the num_threads the task plan is made for (tasks run here,
// one after another); MAX_TIER: the highest cpu_isa.h CpuTier (a number)
// the kernel may use, e.g. 3 (avx512_bf16) to time VDPBF16PS on an AMX CPU.
// The first line: the measured VDPBF16PS peak and the path that ran.
#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "driver_host.h"
#include "tf_disc/runtime/cpu/gemm_bf16.h"

namespace {

double ThreadSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// Flop/s of 24 independent vdpbf16ps chains (no memory operands, in
// registers: the asm makes each a register operand every step): the ceiling
// the kernel's 6 x 4 register tile could reach.
#define DISC_PEAK_STEP(a) a = _mm512_dpbf16_ps(a, x, x);
#define DISC_PEAK_ALL(F) F(a0) F(a1) F(a2) F(a3) F(a4) F(a5) F(a6) F(a7) F(a8) F(a9) F(a10) \
  F(a11) F(a12) F(a13) F(a14) F(a15) F(a16) F(a17) F(a18) F(a19) F(a20) F(a21) F(a22) F(a23)
#define DISC_PEAK_DECL(a) __m512 a = _mm512_setzero_ps();
#define DISC_PEAK_SUM(a) sink += _mm512_reduce_add_ps(a);
__attribute__((target("avx512f,avx512bf16"), noinline)) double PeakFlops() {
  volatile int one = 0x3f803f80;  // bf16 pair (1, 1), not a constant to fold
  const __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(one));
  DISC_PEAK_ALL(DISC_PEAK_DECL)
  const long iters = 2000000;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = ThreadSeconds();
    for (long i = 0; i < iters; ++i) {
      DISC_PEAK_ALL(DISC_PEAK_STEP)
      __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),
                       "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
      __asm__ volatile("" : "+v"(a12), "+v"(a13), "+v"(a14), "+v"(a15), "+v"(a16), "+v"(a17),
                       "+v"(a18), "+v"(a19), "+v"(a20), "+v"(a21), "+v"(a22), "+v"(a23));
    }
    best = std::max(best, 24.0 * 64 * iters / (ThreadSeconds() - t0));
  }
  float sink = 0;
  DISC_PEAK_ALL(DISC_PEAK_SUM)
  return sink == 12345.f ? 0 : best;
}

}  // namespace

int main(int argc, char** argv) {
  using tf_disc::GemmArgs;
  if (argc < 4 || (argc - 4) % 6 != 0) {
    std::fprintf(stderr,
                 "usage: %s REPEATS THREAD_SPLIT MAX_TIER [batch m n k trans_b packed_b]...\n",
                 argv[0]);
    return 2;
  }
  driver_host::MaxTier() = static_cast<tf_disc::CpuTier>(std::atoi(argv[3]));
  if (!tf_disc::Bf16GemmAvailable()) {
    std::printf("unavailable\n");
    return 0;
  }
  const int repeats = std::atoi(argv[1]), threads = std::atoi(argv[2]);
  std::printf("peak %.6g %s\n", PeakFlops(),
              tf_disc::HostCpuTier() >= tf_disc::CpuTier::kAvx512Amx ? "amx" : "avx512_bf16");
  const tf_disc::GemmParallelFor serial = [](int64_t n, int64_t,
                                             const std::function<void(int64_t, int64_t)>& fn) {
    fn(0, n);
  };
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  for (int i = 4; i < argc; i += 6) {
    const int64_t batch = std::atol(argv[i]), m = std::atol(argv[i + 1]),
                  n = std::atol(argv[i + 2]), k = std::atol(argv[i + 3]);
    const bool trans_b = std::atoi(argv[i + 4]) != 0, packed = std::atoi(argv[i + 5]) != 0;
    std::vector<float> a(batch * m * k), b(batch * k * n), c(batch * m * n);
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    GemmArgs g{};
    g.dtype = DISC_DTYPE_FLOAT;
    g.trans_b = trans_b;
    g.batch = batch, g.m = m, g.n = n, g.k = k;
    g.a = a.data(), g.lda = k, g.stride_a = m * k;
    g.b = b.data(), g.ldb = trans_b ? k : n, g.stride_b = k * n;
    g.c = c.data(), g.ldc = n, g.stride_c = m * n;
    std::unique_ptr<tf_disc::Bf16PackedB> packed_b;
    if (packed) g.packed_b = (packed_b = tf_disc::PackBf16B(g, 1, serial)).get();
    const double flops = 2.0 * batch * m * n * k;
    const int inner = std::max(1, static_cast<int>(2e8 / flops));
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      const double t0 = ThreadSeconds();
      for (int j = 0; j < inner; ++j) tf_disc::RunGemmBf16(g, threads, serial);
      best = std::min(best, (ThreadSeconds() - t0) / inner);
    }
    double err = 0;  // batch entry 0, a sample of C
    for (int64_t r = 0; r < m; r += 1 + m / 16) {
      for (int64_t col = 0; col < n; col += 1 + n / 16) {
        double exact = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = double(a[r * k + kk]) * (trans_b ? b[col * k + kk] : b[kk * n + col]);
          exact += p, mag += std::fabs(p);
        }
        err = std::max(err, std::fabs(c[r * n + col] - exact) / mag);
      }
    }
    std::printf("%ld %ld %ld %ld %d %d %.6g %.3g\n", long(batch), long(m), long(n), long(k),
                int(trans_b), int(packed), best, err);
  }
  return 0;
}
