// What every DiscRuntime (disc_abi.h) of one DiscLaunch call shares, on any
// device: outputs through the OpKernelContext (each once), scratch through
// one TF allocator, errors recorded into the context (the first wins), the
// executable's request to run the original function instead
// (DISC_ERROR_FALLBACK), and the ABI contract checked after the call.
// Device runtimes (runtime/cpu/runtime.h, runtime/cuda/gpu_runtime.h)
// derive from it and fill the rest of the table.
#ifndef TF_DISC_RUNTIME_RUNTIME_CALL_H_
#define TF_DISC_RUNTIME_RUNTIME_CALL_H_

#include <cstddef>
#include <mutex>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tf_disc/runtime/disc_abi.h"

namespace tf_disc {

class RuntimeCall {
 public:
  RuntimeCall(const RuntimeCall&) = delete;
  RuntimeCall& operator=(const RuntimeCall&) = delete;

  // Calls `entry` on `inputs` and checks the ABI contract afterwards (error
  // reported <=> non-zero return, every output allocated).  Errors end up in
  // ctx->status(); the returned status is the same.
  absl::Status Run(DiscEntryFn entry, const DiscBuffer* inputs, int32_t num_inputs);

  // After Run: non-empty when the executable asked to run the original
  // function instead (DISC_ERROR_FALLBACK); ctx->status() is then untouched.
  const std::string& fallback_reason() const { return fallback_reason_; }

 protected:
  // temps come from `temp_allocator` aligned to temp_alignment bytes.  The
  // table's ctx, device, stream, alloc_output, alloc_temp, free_temp and
  // set_error are filled; every other entry is null.
  RuntimeCall(tensorflow::OpKernelContext* ctx, tensorflow::Allocator* temp_allocator,
              size_t temp_alignment, int32_t device, void* stream);
  ~RuntimeCall();  // frees temps the generated code left behind

  // The RuntimeCall behind a table's ctx.
  static RuntimeCall* Of(void* ctx) { return static_cast<RuntimeCall*>(ctx); }

  // rt->set_error with a DISC_ERROR_* code.
  static void SetError(void* self, int32_t code, const char* message);
  // Records `status` unless an error is recorded already; mu_ held.
  void RecordError(absl::Status status);

  // rt->alloc_temp.
  static void* AllocTemp(void* self, size_t bytes);

  tensorflow::OpKernelContext* ctx_;
  DiscRuntime abi_;
  std::mutex mu_;  // generated code may call back from several threads

 private:
  static void* AllocOutput(void* self, int32_t index, int32_t rank, const int64_t* dims);
  static void FreeTemp(void* self, void* ptr);

  tensorflow::Allocator* temp_allocator_;
  size_t temp_alignment_;
  absl::InlinedVector<void*, 4> temps_;
  absl::InlinedVector<bool, 16> allocated_;
  bool has_error_ = false;
  std::string fallback_reason_;
};

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_RUNTIME_CALL_H_
