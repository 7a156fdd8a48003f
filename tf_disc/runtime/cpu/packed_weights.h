// Packed copies of GEMM weights, made once instead of on every call: for
// the bf16 kernel (fast_math="bf16", gemm_bf16.h) and for the fp32 packed
// kernel (gemm_packed.h).
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
// never written.  So each packed copy holds a Tensor of the buffer it
// packed: while held, the buffer cannot change (nor be freed and reused),
// and (buffer, byte size, layout) identifies the packed copy, within one
// kernel and across kernels (two clusters reading one variable share one
// copy); a new buffer for the same input (the variable was updated)
// replaces the kernel's entry.  TF1 ref variables (VariableV2/Assign write
// in place regardless) and computed tensors are never listed.
//
// Cost: a bf16-packed weight takes half its fp32 bytes (k padded to 32, n
// to 64), an fp32-packed one its fp32 bytes (n padded to 32), for as long
// as a kernel using it lives, and the held reference makes the next
// in-place update of that variable copy it once (then the entry moves on).
#ifndef TF_DISC_RUNTIME_CPU_PACKED_WEIGHTS_H_
#define TF_DISC_RUNTIME_CPU_PACKED_WEIGHTS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "tensorflow/core/framework/tensor.h"
#include "tf_disc/runtime/cpu/gemm.h"

namespace tf_disc {

enum class PackKind { kBf16, kFp32 };

// Told of every packed copy made (packs = 1, bytes > 0) and freed
// (packs = 0, bytes < 0): the owner's stats gauge (runtime/ knows no stats).
using PackGauge = void (*)(PackKind kind, int64_t packs, int64_t bytes);

// One DiscLaunch kernel's packed weights; thread-safe.
class PackedWeights {
 public:
  explicit PackedWeights(PackGauge gauge = nullptr) : gauge_(gauge) {}
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // How B lies in its input and which kernel's layout it is packed in.
  struct Layout {
    PackKind kind;
    int64_t offset;  // bytes from the input's data to B
    bool trans_b;
    int64_t n, k, ldb, stride_b, entries;
    bool operator==(const Layout& o) const;
  };
  struct Pack;  // a packed copy and the buffer it holds (packed_weights.cc)

  // Sets g->packed_b (bf16 kernel) or g->packed_b32 (fp32 packed kernel)
  // to the packed B of *g, whose B lies wholly in `input` (input `index`,
  // listed stable), packing it when this buffer or layout is new.  Returns
  // what keeps it alive for the call; null, *g unchanged, when g runs no
  // kernel that reads a packed B or memory is short.
  std::shared_ptr<const Pack> Attach(int index, const tensorflow::Tensor& input, GemmArgs* g,
                                     int num_threads, const GemmParallelFor& parallel_for);

 private:
  struct Entry {
    int index;  // of the input
    Layout layout;
    std::shared_ptr<const Pack> pack;
  };
  static constexpr size_t kMaxEntries = 256;

  PackGauge gauge_;
  std::mutex mu_;
  std::vector<Entry> entries_;
};

// The stable inputs of one call: what KernelRuntime checks a GEMM's B
// against.
struct StableInputs {
  PackedWeights* weights = nullptr;
  absl::InlinedVector<std::pair<int, const tensorflow::Tensor*>, 8> inputs;

  // PackedWeights::Attach for the stable input holding g's B, if any.
  std::shared_ptr<const PackedWeights::Pack> Attach(GemmArgs* g, int num_threads,
                                                    const GemmParallelFor& parallel_for) const;
};

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_PACKED_WEIGHTS_H_
