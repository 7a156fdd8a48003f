// Helpers shared by the standalone kernel drivers (conv_kernel_driver.cc,
// gemm_skinny_driver.cc, gemm_library_driver.cc): CPU-time clocks,
// deterministic input buffers, medians and a spinning thread pool.
#ifndef BENCHMARKS_DRIVER_UTIL_H_
#define BENCHMARKS_DRIVER_UTIL_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <thread>
#include <vector>

// Process CPU seconds: on a shared machine, time the process spends
// preempted does not count.
inline double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// n floats, 64-byte aligned (as TF's allocator gives), filled from a fixed
// pseudo-random pattern.
inline float* Filled(size_t n, uint64_t mult) {
  float* p = static_cast<float*>(aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64 + 64));
  for (size_t i = 0; i < n; ++i) p[i] = float(i * mult % 1000) / 1000.f - 0.5f;
  return p;
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Spinning workers (as TF's pool spins between regions): the caller runs
// share 0, worker w share w + 1.
class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { Loop(w); });
  }
  ~Pool() {
    stop_ = true;
    epoch_.fetch_add(1);
    for (auto& t : workers_) t.join();
  }
  void Run(const std::function<void(int)>& fn) {
    fn_ = &fn;
    pending_.store(threads_ - 1);
    epoch_.fetch_add(1, std::memory_order_release);
    fn(0);
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }
  int threads() const { return threads_; }

 private:
  void Loop(int w) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t e;
      while ((e = epoch_.load(std::memory_order_acquire)) == seen) std::this_thread::yield();
      seen = e;
      if (stop_) return;
      (*fn_)(w);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }
  int threads_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int> pending_{0};
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<bool> stop_{false};
};

#endif  // BENCHMARKS_DRIVER_UTIL_H_
