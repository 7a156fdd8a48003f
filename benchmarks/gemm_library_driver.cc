// Times one float GEMM C[m,n] = A[m,k] B[k,n] (row-major, dense) by one of
// two implementations, in process CPU time divided by the thread count:
//   ours - the runtime's RunGemm (gemm.h) as the op library calls it: blocks
//          on a parallel-for, large dense products by Eigen's contraction,
//          both on one Eigen thread pool (as TF's intra-op pool serves both);
//   mkl  - oneMKL's cblas_sgemm on its sequential threading layer, one call
//          per row panel inside the same parallel-for (how a library would
//          run on TF's pool without a thread pool of its own; the same
//          kind of Eigen pool), loaded with
//          dlopen from the path given.
// Built and run by benchmarks/gemm_library.py.
//
//   gemm_library_driver ours M K N THREADS REPS
//   gemm_library_driver mkl  M K N THREADS REPS LIBMKL_RT
//   gemm_library_driver check M K N THREADS LIBMKL_RT   max |ours - mkl| / max |mkl|
#define EIGEN_USE_THREADS
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "driver_host.h"
#include "driver_util.h"
#include "tf_disc/runtime/cpu/gemm.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace {

// cblas_sgemm's row-major, no-transpose arguments (mkl_cblas.h values).
constexpr int kRowMajor = 101, kNoTrans = 111, kMklSequential = 1;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                         int, float, float*, int);
using SetLayerFn = int (*)(int);

struct Problem {
  int64_t m, k, n;
  float *a, *b, *c;
};

Problem Make(int64_t m, int64_t k, int64_t n) {
  return {m, k, n, Filled(m * k, 7), Filled(k * n, 13), Filled(m * n, 3)};
}

// Runs fn(0..threads-1) on `pool` (the caller runs share 0), as TF's
// intra-op ParallelFor runs on the same pool that serves Eigen's
// contraction: one pool, no spinning second one competing with it.
void RunShares(Eigen::ThreadPool& pool, int threads, const std::function<void(int)>& fn) {
  Eigen::Barrier done(static_cast<unsigned>(threads - 1));
  for (int w = 1; w < threads; ++w) {
    pool.Schedule([&fn, &done, w] {
      fn(w);
      done.Notify();
    });
  }
  fn(0);
  done.Wait();
}

class Ours {
 public:
  explicit Ours(int threads) : threads_(threads), eigen_(threads) {}
  bool Run(const Problem& p, std::string* error) {
    tf_disc::GemmArgs g{};
    g.dtype = DISC_DTYPE_FLOAT;
    g.batch = 1, g.m = p.m, g.n = p.n, g.k = p.k;
    g.a = p.a, g.lda = p.k, g.stride_a = p.m * p.k;
    g.b = p.b, g.ldb = p.n, g.stride_b = p.k * p.n;
    g.c = p.c, g.ldc = p.n, g.stride_c = p.m * p.n;
    tf_disc::GemmParallelFor pfor = [&](int64_t blocks, int64_t,
                                        const std::function<void(int64_t, int64_t)>& fn) {
      RunShares(eigen_, threads_, [&](int w) {
        const int64_t b = blocks * w / threads_, e = blocks * (w + 1) / threads_;
        if (b < e) fn(b, e);
      });
    };
    return tf_disc::RunGemm(g, threads_, &eigen_, pfor, error);
  }

 private:
  int threads_;
  Eigen::ThreadPool eigen_;
};

class Mkl {
 public:
  Mkl(int threads, const char* path) : threads_(threads), pool_(threads) {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return;
    auto set_layer = reinterpret_cast<SetLayerFn>(dlsym(lib, "MKL_Set_Threading_Layer"));
    sgemm_ = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
    if (set_layer != nullptr) set_layer(kMklSequential);
  }
  bool ok() const { return sgemm_ != nullptr; }
  // Row panels (multiples of 16 rows), one sequential sgemm each.
  void Run(const Problem& p) {
    const int t = threads_;
    RunShares(pool_, t, [&](int w) {
      const int64_t r0 = p.m * w / t / 16 * 16;
      const int64_t r1 = w + 1 == t ? p.m : p.m * (w + 1) / t / 16 * 16;
      if (r0 >= r1) return;
      sgemm_(kRowMajor, kNoTrans, kNoTrans, int(r1 - r0), int(p.n), int(p.k), 1.f,
             p.a + r0 * p.k, int(p.k), p.b, int(p.n), 0.f, p.c + r0 * p.n, int(p.n));
    });
  }

 private:
  int threads_;
  Eigen::ThreadPool pool_;
  SgemmFn sgemm_ = nullptr;
};

void Report(const char* side, const Problem& p, int threads, const std::vector<double>& t) {
  const double s = Median(t);
  std::printf("%s m=%lld k=%lld n=%lld threads=%d ms=%.4f GF/s=%.1f c0=%g\n", side,
              (long long)p.m, (long long)p.k, (long long)p.n, threads, s * 1e3,
              2.0 * p.m * p.n * p.k / s / 1e9, p.c[0]);
}

template <typename Fn>
std::vector<double> Times(int reps, int threads, Fn run) {
  run();  // warm: first-touch pages, library dispatch
  std::vector<double> t;
  for (int rep = 0; rep < reps; ++rep) {
    const double t0 = CpuSeconds();
    run();
    t.push_back((CpuSeconds() - t0) / threads);
  }
  return t;
}

int Time(const std::string& side, Problem p, int threads, int reps, const char* mkl_path) {
  std::string error;
  if (side == "ours") {
    Ours ours(threads);
    bool ok = true;
    auto t = Times(reps, threads, [&] { ok = ok && ours.Run(p, &error); });
    if (!ok) return std::fprintf(stderr, "%s\n", error.c_str()), 1;
    Report("ours", p, threads, t);
    return 0;
  }
  Mkl mkl(threads, mkl_path);
  if (!mkl.ok()) return std::fprintf(stderr, "cannot load cblas_sgemm from %s\n", mkl_path), 1;
  Report("mkl", p, threads, Times(reps, threads, [&] { mkl.Run(p); }));
  return 0;
}

int Check(Problem p, int threads, const char* mkl_path) {
  Mkl mkl(threads, mkl_path);
  if (!mkl.ok()) return std::fprintf(stderr, "cannot load cblas_sgemm from %s\n", mkl_path), 1;
  mkl.Run(p);
  std::vector<float> want(p.c, p.c + p.m * p.n);
  std::string error;
  if (!Ours(threads).Run(p, &error)) return std::fprintf(stderr, "%s\n", error.c_str()), 1;
  double diff = 0, mag = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, double(std::abs(p.c[i] - want[i])));
    mag = std::max(mag, double(std::abs(want[i])));
  }
  std::printf("check m=%lld k=%lld n=%lld rel_diff=%.3g\n", (long long)p.m, (long long)p.k,
              (long long)p.n, diff / (mag + 1e-30));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 7 && (!std::strcmp(argv[1], "ours") || !std::strcmp(argv[1], "mkl"))) {
    return Time(argv[1], Make(atoll(argv[2]), atoll(argv[3]), atoll(argv[4])), atoi(argv[5]),
                atoi(argv[6]), argc > 7 ? argv[7] : "");
  }
  if (argc == 7 && !std::strcmp(argv[1], "check")) {
    return Check(Make(atoll(argv[2]), atoll(argv[3]), atoll(argv[4])), atoi(argv[5]), argv[6]);
  }
  std::fprintf(stderr,
               "usage: %s ours|mkl M K N THREADS REPS [LIBMKL_RT] | check M K N THREADS "
               "LIBMKL_RT\n",
               argv[0]);
  return 2;
}
