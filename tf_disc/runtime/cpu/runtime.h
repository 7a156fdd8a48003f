// The DiscRuntime (disc_abi.h) of one DiscLaunch call, routing allocation,
// threading and errors through the calling OpKernelContext.
#ifndef TF_DISC_RUNTIME_CPU_RUNTIME_H_
#define TF_DISC_RUNTIME_CPU_RUNTIME_H_

#include <mutex>
#include <string>

#include "absl/container/inlined_vector.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/packed_weights.h"

namespace tf_disc {

class KernelRuntime {
 public:
  // stable (may be null; must outlive this): inputs whose float GEMM B
  // operands are packed once (packed_weights.h).
  explicit KernelRuntime(tensorflow::OpKernelContext* ctx,
                         const StableInputs* stable = nullptr);
  ~KernelRuntime();  // frees temps the generated code left behind
  KernelRuntime(const KernelRuntime&) = delete;
  KernelRuntime& operator=(const KernelRuntime&) = delete;

  // Calls `entry` on `inputs` and checks the ABI contract afterwards (error
  // reported <=> non-zero return, every output allocated).  Errors end up in
  // ctx->status(); the returned status is the same.
  absl::Status Run(DiscEntryFn entry, const DiscBuffer* inputs, int32_t num_inputs);

  // After Run: non-empty when the executable asked to run the original
  // function instead (DISC_ERROR_FALLBACK); ctx->status() is then untouched.
  const std::string& fallback_reason() const { return fallback_reason_; }

 private:
  static void* AllocOutput(void* self, int32_t index, int32_t rank,
                           const int64_t* dims);
  static void* AllocTemp(void* self, size_t bytes);
  static void FreeTemp(void* self, void* ptr);
  static void ParallelFor(void* self, int64_t n, int64_t cost_per_unit,
                          DiscParallelFn fn, void* closure);
  static void SetError(void* self, int32_t code, const char* message);
  static int32_t Gemm(void* self, const DiscGemmArgs* args);
  static int32_t GemmMulti(void* self, const DiscGemmMultiArgs* args);
  static int32_t Window(void* self, const DiscWindowArgs* args);

  void RecordError(absl::Status status);

  tensorflow::OpKernelContext* ctx_;
  const StableInputs* stable_;
  tensorflow::Allocator* allocator_;
  DiscRuntime abi_;
  std::mutex mu_;  // generated code may call back from parallel_for workers
  absl::InlinedVector<void*, 4> temps_;
  absl::InlinedVector<bool, 16> allocated_;
  bool has_error_ = false;
  std::string fallback_reason_;
};

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_RUNTIME_H_
