// The DiscRuntime (disc_abi.h) of one DiscLaunch call on the CPU: threading
// on TF's intra-op pool and the CPU GEMM and window kernels (allocation and
// errors: runtime_call.h).
#ifndef TF_DISC_RUNTIME_CPU_RUNTIME_H_
#define TF_DISC_RUNTIME_CPU_RUNTIME_H_

#include "tensorflow/core/framework/op_kernel.h"
#include "tf_disc/runtime/cpu/packed_weights.h"
#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/runtime_call.h"

namespace tf_disc {

class KernelRuntime : public RuntimeCall {
 public:
  // stable (may be null; must outlive this): inputs whose float GEMM B
  // operands are packed once (packed_weights.h).
  explicit KernelRuntime(tensorflow::OpKernelContext* ctx,
                         const StableInputs* stable = nullptr);

 private:
  static void ParallelFor(void* self, int64_t n, int64_t cost_per_unit,
                          DiscParallelFn fn, void* closure);
  static int32_t Gemm(void* self, const DiscGemmArgs* args);
  static int32_t GemmMulti(void* self, const DiscGemmMultiArgs* args);
  static int32_t Window(void* self, const DiscWindowArgs* args);

  const StableInputs* stable_;
};

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_RUNTIME_H_
