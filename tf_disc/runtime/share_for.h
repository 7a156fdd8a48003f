// Parallel-for on TF's intra-op pool with at most as many threads as the
// pool has: the calling thread and (threads - 1) pool workers claim blocks
// of the range from one counter until none is left.
//
// TF's ThreadPool::ParallelFor (Eigen's parallelFor) cuts the range into a
// fixed set of blocks and, with more blocks than threads, hands them all to
// the pool's workers while the caller (a DiscLaunch runs on an inter-op
// thread) sleeps on a barrier: every region paid for waking the workers and
// then the caller.  Here the caller starts at once and keeps claiming
// blocks, and only (threads - 1) workers are woken.  Batch-1 BERT
// (benchmarks/bert_dynamic.py workload C, ~24 GEMM regions per request):
// 2-6% less steady time than TF's ParallelFor in the same process.
// DISC_POOL_SHARE=0 (a benchmark A/B switch) restores TF's ParallelFor.
#ifndef TF_DISC_RUNTIME_SHARE_FOR_H_
#define TF_DISC_RUNTIME_SHARE_FOR_H_

#include <cstdint>
#include <functional>

#include "tensorflow/core/platform/threadpool.h"

namespace tf_disc {

// fn(begin, end) over [0, n) in blocks, with cost_per_unit cycles per index
// sizing the blocks; threads counts the caller.  Returns when every block
// has run.
void ShareFor(tsl::thread::ThreadPool* pool, int threads, int64_t n, int64_t cost_per_unit,
              const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_SHARE_FOR_H_
