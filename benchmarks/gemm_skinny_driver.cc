// Times the runtime's float GEMM (RunGemm: the skinny kernel for m <= 128
// with a row-major B) alone, no TF, against the memory bandwidth this
// machine gives: BERT's weight GEMMs at batch 1 read far more weight bytes
// than they do flops per byte, so the bound is the weight stream.  B is
// rotated through enough copies (> 2x L3) that every call reads it from DRAM,
// as a 4-layer model whose 113 MB of weights exceed L3 does.  Built and run
// by benchmarks/gemm_skinny.py.
//
//   gemm_skinny_driver bw THREADS MB            read bandwidth (GB/s)
//   gemm_skinny_driver gemm M K N THREADS REPS  median ms, weight GB/s, GF/s
//   gemm_skinny_driver check                    m 1..64 x odd n, k, op(A) vs a
//                                               double-precision loop
//
// Times are medians of process CPU time divided by THREADS (a shared
// machine's other processes do not count); the parallel-for splits blocks
// evenly over THREADS (the caller runs the first share).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>


#include "driver_host.h"
#include "driver_util.h"
#include "tf_disc/runtime/cpu/gemm.h"

namespace {

int Bandwidth(int threads, int64_t mb) {
  const size_t n = size_t(mb) << 18;  // floats
  float* p = Filled(n, 7);
  Pool pool(threads);
  std::vector<float> sums(threads);
  std::vector<double> t;
  for (int rep = 0; rep < 9; ++rep) {
    const double t0 = CpuSeconds();
    pool.Run([&](int w) {
      const size_t b = n * w / threads / 64 * 64, e = n * (w + 1) / threads / 64 * 64;
      // 256-bit GCC vectors: the same loads on every x86 tier this is built for.
      typedef float V8 __attribute__((vector_size(32)));
      V8 s[8] = {};
      for (size_t i = b; i < e; i += 64) {
        for (int j = 0; j < 8; ++j) {
          V8 v;
          __builtin_memcpy(&v, p + i + 8 * j, sizeof(v));
          s[j] += v;
        }
      }
      V8 all = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
      float sum = 0;
      for (int j = 0; j < 8; ++j) sum += all[j];
      sums[w] = sum;
    });
    t.push_back((CpuSeconds() - t0) / threads);
  }
  std::printf("bw threads=%d MB=%lld GB/s=%.2f (sum %g)\n", threads, (long long)mb,
              n * 4.0 / Median(t) / 1e9, sums[0]);
  return 0;
}

int Gemm(int64_t m, int64_t k, int64_t n, int threads, int reps) {
  const int64_t copies = std::max<int64_t>(2, (96ll << 20) / (k * n * 4) + 1);
  std::vector<float*> bs;
  for (int64_t i = 0; i < copies; ++i) bs.push_back(Filled(k * n, 13 + i));
  float* a = Filled(m * k, 7);
  float* c = Filled(m * n, 3);
  Pool pool(threads);
  tf_disc::GemmParallelFor pfor = [&](int64_t blocks, int64_t,
                                      const std::function<void(int64_t, int64_t)>& fn) {
    pool.Run([&](int w) {
      const int64_t b = blocks * w / pool.threads(), e = blocks * (w + 1) / pool.threads();
      if (b < e) fn(b, e);
    });
  };
  std::vector<double> t;
  std::string error;
  for (int rep = 0; rep < reps; ++rep) {
    tf_disc::GemmArgs g{};
    g.dtype = DISC_DTYPE_FLOAT;
    g.batch = 1;
    g.m = m, g.n = n, g.k = k;
    g.a = a, g.lda = k, g.stride_a = m * k;
    g.b = bs[rep % copies], g.ldb = n, g.stride_b = k * n;
    g.c = c, g.ldc = n, g.stride_c = m * n;
    const double t0 = CpuSeconds();
    if (!tf_disc::RunGemm(g, threads, nullptr, pfor, &error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    t.push_back((CpuSeconds() - t0) / threads);
  }
  const double s = Median(t);
  std::printf("gemm m=%lld k=%lld n=%lld threads=%d ms=%.4f GB/s=%.2f GF/s=%.1f c0=%g\n",
              (long long)m, (long long)k, (long long)n, threads, s * 1e3, k * n * 4.0 / s / 1e9,
              2.0 * m * n * k / s / 1e9, c[0]);
  return 0;
}

// Every m in 1..64 (both tile shapes and all their row tails), n around
// the 32/64-column tiles, k across the 128-row chunks, A plain and
// transposed, padded leading dims, two batch entries: each element within
// 1e-5 of the sum of |terms| of a double-precision loop.
int Check() {
  Pool pool(2);
  tf_disc::GemmParallelFor pfor = [&](int64_t blocks, int64_t,
                                      const std::function<void(int64_t, int64_t)>& fn) {
    pool.Run([&](int w) {
      const int64_t b = blocks * w / 2, e = blocks * (w + 1) / 2;
      if (b < e) fn(b, e);
    });
  };
  int bad = 0, runs = 0;
  for (int64_t m = 1; m <= 64; ++m) {
    for (int64_t n : {31, 32, 33, 63, 64, 65, 97, 200}) {
      for (int64_t k : {1, 17, 129, 300}) {
        for (bool ta : {false, true}) {
          const int64_t batch = 2, lda = (ta ? m : k) + 3, ldb = n + 5, ldc = n + 1;
          const int64_t sa = (ta ? k : m) * lda, sb = k * ldb, sc = m * ldc;
          std::vector<float> a(batch * sa), b(batch * sb), c(batch * sc, 7.f);
          for (size_t i = 0; i < a.size(); ++i) a[i] = float((i * 37 + m) % 101) / 50.f - 1.f;
          for (size_t i = 0; i < b.size(); ++i) b[i] = float((i * 53 + n) % 97) / 48.f - 1.f;
          tf_disc::GemmArgs g{};
          g.dtype = DISC_DTYPE_FLOAT;
          g.trans_a = ta;
          g.batch = batch, g.m = m, g.n = n, g.k = k;
          g.a = a.data(), g.lda = lda, g.stride_a = sa;
          g.b = b.data(), g.ldb = ldb, g.stride_b = sb;
          g.c = c.data(), g.ldc = ldc, g.stride_c = sc;
          std::string error;
          if (!tf_disc::RunGemm(g, 2, nullptr, pfor, &error)) return 1;
          ++runs;
          for (int64_t bi = 0; bi < batch; ++bi) {
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                double want = 0, mag = 0;
                for (int64_t p = 0; p < k; ++p) {
                  const double x = a[bi * sa + (ta ? p * lda + i : i * lda + p)];
                  want += x * b[bi * sb + p * ldb + j];
                  mag += std::abs(x * b[bi * sb + p * ldb + j]);
                }
                const double got = c[bi * sc + i * ldc + j];
                if (std::abs(got - want) > 1e-5 * (mag + 1)) {
                  if (bad++ < 5) {
                    std::printf("bad m=%lld n=%lld k=%lld ta=%d [%lld,%lld,%lld] %g vs %g\n",
                                (long long)m, (long long)n, (long long)k, ta, (long long)bi,
                                (long long)i, (long long)j, got, want);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  std::printf("check: %d products, %d bad elements\n", runs, bad);
  return bad != 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && !std::strcmp(argv[1], "check")) return Check();
  if (argc == 4 && !std::strcmp(argv[1], "bw")) return Bandwidth(atoi(argv[2]), atoll(argv[3]));
  if (argc == 7 && !std::strcmp(argv[1], "gemm")) {
    return Gemm(atoll(argv[2]), atoll(argv[3]), atoll(argv[4]), atoi(argv[5]), atoi(argv[6]));
  }
  std::fprintf(stderr, "usage: %s bw THREADS MB | gemm M K N THREADS REPS | check\n", argv[0]);
  return 2;
}
