#include "tf_disc/runtime/share_for.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "tf_disc/runtime/switches.h"

namespace tf_disc {
namespace {

// Blocks per thread (load balance when a core is shared with other work)
// and the fewest cycles a block should hold (one counter claim each).
constexpr int64_t kBlocksPerThread = 4;
constexpr int64_t kMinBlockCycles = 16384;
// Eigen's cost model (TensorCostModel, which TF's ParallelFor applies): a
// region's first cycles pay for waking a worker, so each thread must bring
// this much work; below 2 threads' worth the caller runs it alone (a thread
// hop on a ~100k-cycle region cost 6-8% of the call).
constexpr double kStartupCycles = 100000, kPerThreadCycles = 100000;
// Polls of the done count before the caller sleeps (~ tens of microseconds:
// about what one block of a region's tail takes).
constexpr int kSpins = 2048;

// Held by every helper task through a shared_ptr: a helper the pool starts
// only after the region ended finds nothing to claim and returns; fn is
// dereferenced only after a claim, while the caller still waits.
struct Region {
  Region(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>* fn)
      : n(n), grain(grain), fn(fn) {}
  const int64_t n, grain;
  const std::function<void(int64_t, int64_t)>* const fn;
  std::atomic<int64_t> next{0}, done{0};
  std::mutex mu;
  std::condition_variable finished;

  // Claims and runs blocks until none is left.
  void Work() {
    for (;;) {
      const int64_t begin = next.fetch_add(grain, std::memory_order_relaxed);
      if (begin >= n) return;
      const int64_t end = std::min(n, begin + grain);
      (*fn)(begin, end);
      if (done.fetch_add(end - begin, std::memory_order_acq_rel) + (end - begin) == n) {
        std::lock_guard<std::mutex> lock(mu);  // the caller may be about to sleep
        finished.notify_all();
      }
    }
  }

  void Wait() {
    for (int i = 0; i < kSpins; ++i) {
      if (done.load(std::memory_order_acquire) == n) return;
      __builtin_ia32_pause();
    }
    std::unique_lock<std::mutex> lock(mu);
    finished.wait(lock, [this] { return done.load(std::memory_order_acquire) == n; });
  }
};

}  // namespace

void ShareFor(tsl::thread::ThreadPool* pool, int threads, int64_t n, int64_t cost_per_unit,
              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (RuntimeSwitchValue(RuntimeSwitch::kPoolShare) == '0') {
    return pool->ParallelFor(n, std::max<int64_t>(cost_per_unit, 1), fn);
  }
  const int64_t cost = std::max<int64_t>(cost_per_unit, 1);
  const double total = static_cast<double>(n) * static_cast<double>(cost);
  threads = static_cast<int>(std::min<double>(
      threads, std::max(1.0, (total - kStartupCycles) / kPerThreadCycles + 0.9)));
  const int64_t grain = std::max<int64_t>(
      {int64_t(1), (n + kBlocksPerThread * threads - 1) / (kBlocksPerThread * threads),
       (kMinBlockCycles + cost - 1) / cost});
  const int64_t blocks = (n + grain - 1) / grain;
  const int helpers = static_cast<int>(std::min<int64_t>(threads - 1, blocks - 1));
  if (helpers <= 0) return fn(0, n);
  auto region = std::make_shared<Region>(n, grain, &fn);
  for (int h = 0; h < helpers; ++h) pool->Schedule([region] { region->Work(); });
  region->Work();
  region->Wait();
}

}  // namespace tf_disc
