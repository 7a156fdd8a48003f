// bf16-packed copies of GEMM weights (fast_math="bf16"), made once per
// DiscLaunch kernel instead of on every call.
//
// Which inputs qualify: the Grappler rewrite lists in DiscLaunch's
// `stable_args` the inputs that come straight from a Const or a resource
// variable's ReadVariableOp.  Why holding a reference makes their memory
// immutable (TF 2.21, kernels/resource_variable_ops.cc and
// training_op_helpers.h): AssignVariableOp writes into the variable's
// buffer only when Tensor::RefCountIsOne(), AssignAdd/Sub and the
// optimizers' dense Resource* ops copy first unless it is
// (PrepareToUpdateVariable), and sparse updates switch the variable to
// copy-on-read mode, copying a shared buffer first (EnsureSparseVariableAccess),
// after which ReadVariableOp returns fresh copies.  A Const's tensor is
// never written.  So each entry holds a Tensor of the buffer it packed:
// while held, the buffer cannot change, and (buffer, byte size) identifies
// the packed copy; a new buffer for the same input (the variable was
// updated) replaces the entry.  TF1 ref variables (VariableV2/Assign write
// in place regardless) and computed tensors are never listed.
//
// Cost: a packed weight takes half its fp32 bytes (k padded to 32, n to 64)
// for as long as the kernel lives, and the held reference makes the next
// in-place update of that variable copy it once (then the entry moves on).
#ifndef TF_DISC_RUNTIME_PACKED_WEIGHTS_H_
#define TF_DISC_RUNTIME_PACKED_WEIGHTS_H_

#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "tensorflow/core/framework/tensor.h"
#include "tf_disc/runtime/gemm_bf16.h"

namespace tf_disc {

// One DiscLaunch kernel's packed weights; thread-safe.
class PackedWeights {
 public:
  PackedWeights() = default;
  ~PackedWeights();  // gives their bytes back to the stats gauge
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // The packed B of g, whose B lies wholly in `input` (input `index`, listed
  // stable), packing it when this buffer or layout is new; null when g does
  // not run the bf16 kernel or memory is short.
  std::shared_ptr<const Bf16PackedB> Get(int index, const tensorflow::Tensor& input,
                                         const GemmArgs& g, int num_threads,
                                         const GemmParallelFor& parallel_for);

 private:
  struct Layout {
    int index;
    int64_t offset;  // bytes from the input's data to B
    bool trans_b;
    int64_t n, k, ldb, stride_b, entries;
    bool operator==(const Layout& o) const;
  };
  struct Entry {
    Layout layout;
    tensorflow::Tensor held;  // keeps the packed buffer from changing
    std::shared_ptr<const Bf16PackedB> packed;
  };
  static constexpr size_t kMaxEntries = 256;

  std::mutex mu_;
  std::vector<Entry> entries_;
};

// The stable inputs of one call: what KernelRuntime checks a fast-math GEMM's
// B against.
struct StableInputs {
  PackedWeights* weights = nullptr;
  absl::InlinedVector<std::pair<int, const tensorflow::Tensor*>, 8> inputs;

  // The packed B of g when its B is in a stable input, else null.
  std::shared_ptr<const Bf16PackedB> Find(const GemmArgs& g, int num_threads,
                                          const GemmParallelFor& parallel_for) const;
};

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_PACKED_WEIGHTS_H_
