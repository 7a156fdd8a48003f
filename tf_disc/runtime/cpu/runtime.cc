#include "tf_disc/runtime/cpu/runtime.h"

#include <algorithm>
#include <string>

#include "absl/container/inlined_vector.h"
#include "tensorflow/core/framework/allocator.h"
#include "tensorflow/core/platform/threadpool.h"
#include "tf_disc/runtime/cpu/conv_bf16.h"
#include "tf_disc/runtime/cpu/gemm.h"
#include "tf_disc/runtime/cpu/kernel_dispatch.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"

namespace tf_disc {

using tensorflow::OpKernelContext;

KernelRuntime::KernelRuntime(OpKernelContext* ctx, const StableInputs* stable)
    : RuntimeCall(ctx, ctx->device()->GetAllocator(tensorflow::AllocatorAttributes()), 64,
                  DISC_DEVICE_CPU, nullptr),
      stable_(stable) {
  abi_.parallel_for = &KernelRuntime::ParallelFor;
  abi_.gemm = &KernelRuntime::Gemm;
  abi_.gemm_multi = &KernelRuntime::GemmMulti;
  abi_.window = &KernelRuntime::Window;
}

// Cycles (n * cost_per_unit) below which ParallelFor runs the range on the
// calling thread.  Generated code checks the same value before calling
// (INLINE_COST in compiler/codegen/cpu/dispatch.py; a test keeps them equal).
constexpr double kInlineCost = 32768;

void KernelRuntime::ParallelFor(void* self_ptr, int64_t n,
                                int64_t cost_per_unit, DiscParallelFn fn,
                                void* closure) {
  if (n <= 0) return;
  auto* self = static_cast<KernelRuntime*>(Of(self_ptr));
  auto* workers = self->ctx_->device()->tensorflow_cpu_worker_threads();
  // Tiny ranges run inline: a thread hop costs more than the work.
  if (n == 1 || workers == nullptr || workers->workers == nullptr ||
      workers->num_threads <= 1 ||
      static_cast<double>(n) * std::max<int64_t>(cost_per_unit, 1) < kInlineCost) {
    fn(closure, 0, n);
    return;
  }
  workers->workers->ParallelFor(
      n, tsl::thread::ThreadPool::SchedulingParams::Adaptive(
             std::max<int64_t>(cost_per_unit, 1)),
      [fn, closure](int64_t begin, int64_t end) { fn(closure, begin, end); });
}

// The intra-op pool as (threads, Eigen pool, parallel_for) for gemm.cc and
// window.cc; one thread and no pool when TF gives none, or under kernel
// policy kernel_threads 1 (kernel_policy.h).
struct PoolView {
  int threads = 1;
  void* eigen_pool = nullptr;
  GemmParallelFor parallel_for;
};

static PoolView ViewPool(OpKernelContext* ctx) {
  auto* workers = ctx->device()->tensorflow_cpu_worker_threads();
  PoolView v;
  if (workers != nullptr && workers->workers != nullptr && workers->num_threads > 1 &&
      CurrentKernelPolicy().kernel_threads != 1) {
    v.threads = workers->num_threads;
    v.eigen_pool = static_cast<void*>(workers->workers->AsEigenThreadPool());
  }
  v.parallel_for = [workers](int64_t blocks, int64_t cost,
                             const std::function<void(int64_t, int64_t)>& fn) {
    workers->workers->ParallelFor(blocks, cost, fn);
  };
  return v;
}

int32_t KernelRuntime::Gemm(void* self_ptr, const DiscGemmArgs* g) {
  auto* self = static_cast<KernelRuntime*>(Of(self_ptr));
  if (g == nullptr) {
    SetError(self_ptr, DISC_ERROR_INTERNAL, "DiscLaunch: gemm: null arguments");
    return 1;
  }
  if (g->bias != nullptr || g->activation != DISC_ACT_NONE) {
    SetError(self_ptr, DISC_ERROR_INTERNAL,
             "DiscLaunch: gemm: bias/activation are device-only (CPU code uses the epilogue)");
    return 1;
  }
  PoolView pool = ViewPool(self->ctx_);
  GemmArgs args{g->dtype, g->trans_a != 0, g->trans_b != 0, g->batch, g->m, g->n, g->k,
                g->a, g->lda, g->stride_a, g->b, g->ldb, g->stride_b, g->c, g->ldc,
                g->stride_c, g->epilogue, g->closure, g->c_offset};
  std::shared_ptr<const PackedWeights::Pack> packed;  // a weight's B, packed once
  if ((g->dtype & ~DISC_GEMM_FAST_BF16) == DISC_DTYPE_FLOAT && self->stable_ != nullptr) {
    packed = self->stable_->Attach(&args, pool.threads, pool.parallel_for);
  }
  std::string error;
  if (Kernels().run_gemm(args, pool.threads, pool.eigen_pool, pool.parallel_for, &error)) {
    return 0;
  }
  SetError(self_ptr, DISC_ERROR_INTERNAL, ("DiscLaunch: " + error).c_str());
  return 1;
}

// Each part as its own GemmArgs (a weight's B attached packed as in Gemm),
// all run by RunGemmMulti.
int32_t KernelRuntime::GemmMulti(void* self_ptr, const DiscGemmMultiArgs* g) {
  auto* self = static_cast<KernelRuntime*>(Of(self_ptr));
  if (g == nullptr || g->num_parts < 0 || (g->num_parts > 0 && g->parts == nullptr)) {
    SetError(self_ptr, DISC_ERROR_INTERNAL, "DiscLaunch: gemm_multi: bad part list");
    return 1;
  }
  PoolView pool = ViewPool(self->ctx_);
  // Per call: no heap allocation for up to 4 parts (Q, K, V).
  absl::InlinedVector<GemmArgs, 4> args;
  absl::InlinedVector<std::shared_ptr<const PackedWeights::Pack>, 4> packed;  // held until done
  args.reserve(g->num_parts);
  for (int32_t i = 0; i < g->num_parts; ++i) {
    const DiscGemmPart& p = g->parts[i];
    args.push_back(GemmArgs{g->dtype, g->trans_a != 0, g->trans_b != 0, 1, g->m, p.n, g->k,
                            g->a, g->lda, 0, p.b, p.ldb, 0, p.c, p.ldc, 0, p.epilogue,
                            p.closure, p.c_offset});
    if ((g->dtype & ~DISC_GEMM_FAST_BF16) == DISC_DTYPE_FLOAT && self->stable_ != nullptr) {
      packed.push_back(self->stable_->Attach(&args.back(), pool.threads, pool.parallel_for));
    }
  }
  std::string error;
  if (Kernels().run_gemm_multi(args.data(), g->num_parts, pool.threads, pool.eigen_pool,
                               pool.parallel_for, &error)) {
    return 0;
  }
  SetError(self_ptr, DISC_ERROR_INTERNAL, ("DiscLaunch: " + error).c_str());
  return 1;
}

int32_t KernelRuntime::Window(void* self_ptr, const DiscWindowArgs* args) {
  auto* self = static_cast<KernelRuntime*>(Of(self_ptr));
  if (args == nullptr) {
    SetError(self_ptr, DISC_ERROR_INTERNAL, "DiscLaunch: window: null arguments");
    return 1;
  }
  PoolView pool = ViewPool(self->ctx_);
  std::string error;
  bool done;
  if ((args->dtype & DISC_GEMM_FAST_BF16) != 0) {
    // A fast-math Conv2D: its filter, when a stable input, packed once.
    DiscWindowArgs plain = *args;
    plain.dtype &= ~DISC_GEMM_FAST_BF16;
    GemmArgs filter = ConvFilterAsB(plain);
    std::shared_ptr<const PackedWeights::Pack> packed;  // held until done
    if (self->stable_ != nullptr && Kernels().conv_bf16_applies(plain)) {
      packed = self->stable_->Attach(&filter, pool.threads, pool.parallel_for);
    }
    done = Kernels().run_window_fast_bf16(*args, filter.packed_b, pool.threads, pool.eigen_pool,
                                          pool.parallel_for, &error);
  } else {
    done = Kernels().run_window(*args, pool.threads, pool.eigen_pool, pool.parallel_for, &error);
  }
  if (done) return 0;
  SetError(self_ptr, DISC_ERROR_INTERNAL, ("DiscLaunch: " + error).c_str());
  return 1;
}

}  // namespace tf_disc
