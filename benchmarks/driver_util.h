// Helpers shared by the standalone kernel drivers (conv_kernel_driver.cc,
// gemm_skinny_driver.cc): CPU-time clocks and deterministic input buffers.
#ifndef BENCHMARKS_DRIVER_UTIL_H_
#define BENCHMARKS_DRIVER_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <ctime>

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

#endif  // BENCHMARKS_DRIVER_UTIL_H_
