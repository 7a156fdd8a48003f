// Runs a DiscLaunch node's original cluster function through TF's function
// runtime, so a model keeps working whenever we cannot use an executable.
#ifndef TF_DISC_OPS_FALLBACK_H_
#define TF_DISC_OPS_FALLBACK_H_

#include <mutex>
#include <unordered_map>

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/function.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace tf_disc {

class FunctionFallback {
 public:
  explicit FunctionFallback(tensorflow::NameAttrList function)
      : function_(std::move(function)) {}

  // Runs the function on ctx's inputs, sets its outputs, then calls done.
  void RunAsync(tensorflow::OpKernelContext* ctx,
                tensorflow::AsyncOpKernel::DoneCallback done);

 private:
  absl::Status GetHandle(tensorflow::FunctionLibraryRuntime* lib, int num_inputs,
                         tensorflow::FunctionLibraryRuntime::Handle* handle);

  const tensorflow::NameAttrList function_;
  std::mutex mu_;
  // One instantiation per function runtime (as TF's own call ops do).
  std::unordered_map<tensorflow::FunctionLibraryRuntime*,
                     tensorflow::FunctionLibraryRuntime::Handle>
      handles_;
};

}  // namespace tf_disc

#endif  // TF_DISC_OPS_FALLBACK_H_
