// Host-side helpers of every generated CUDA library (host.cc, built by the
// system C++ compiler; codegen/cuda/host.py emits the calls): launch sizes
// from run-time dims and the device's facts, and the launch itself through
// DiscRuntime::launch (runtime/disc_abi.h).
#ifndef TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_LAUNCH_H_
#define TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_LAUNCH_H_

#include <cstddef>
#include <cstdint>

#include "disc_abi.h"

// Threads per block of every generated kernel (disc_cuda_prelude.cuh's).
#define DISC_CUDA_BLOCK 256
// Grid-stride kernels get at most this many waves of resident blocks: enough
// to hide a tail, few enough that each thread loops over several elements.
#define DISC_CUDA_WAVES 4

namespace {

// Blocks for `units` work items at `per_block` items per block, capped at
// DISC_CUDA_WAVES waves of the device's resident blocks (kernels loop).
inline uint32_t disc_grid(const DiscDeviceInfo& dev, int64_t units, int64_t per_block) {
  if (units <= 0) return 0;
  const int64_t want = (units + per_block - 1) / per_block;
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 1;
  const int64_t resident = dev.max_threads_per_sm >= DISC_CUDA_BLOCK
                               ? dev.max_threads_per_sm / DISC_CUDA_BLOCK : 1;
  const int64_t cap = sms * resident * DISC_CUDA_WAVES;
  return uint32_t(want < cap ? want : cap);
}

// Whether a flat loop's int32 index cannot overflow: i < n and i + the
// grid's stride stay below 2^31.
inline bool disc_int32_index(int64_t n, uint32_t grid) {
  return n + int64_t(grid) * DISC_CUDA_BLOCK <= int64_t(0x7fffffff);
}

// Whether p may be read or written with 16-byte vector accesses.
inline bool disc_aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Kernel `kernel` of the library's table on grid blocks of DISC_CUDA_BLOCK
// threads; nothing for an empty grid.
inline int32_t disc_launch(const DiscRuntime* rt, int32_t kernel, uint32_t grid,
                           const void* args, size_t size) {
  if (grid == 0) return 0;
  const DiscLaunchDims dims = {{grid, 1, 1}, {DISC_CUDA_BLOCK, 1, 1}, 0};
  return rt->launch(rt->ctx, kernel, &dims, args, size);
}

}  // namespace

#endif  // TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_LAUNCH_H_
