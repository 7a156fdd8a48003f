// DiscLaunch: runs one clustered subgraph through a compiled executable, or
// falls back to the original function when there is none.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/function.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/lib/strings/proto_serialization.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/platform/logging.h"
#include "tf_disc/ops/cluster_functions.h"
#include "tf_disc/ops/embedded.h"
#include "tf_disc/ops/executable_cache.h"
#include "tf_disc/ops/fallback.h"
#include "tf_disc/ops/json.h"
#include "tf_disc/ops/options.h"
#include "tf_disc/ops/stats.h"
#include "tf_disc/runtime/runtime.h"

namespace tf_disc {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;

REGISTER_OP("DiscLaunch")
    .Input("args: Targs")
    .Output("results: Tresults")
    .Attr("Targs: list(type) >= 0")
    .Attr("Tresults: list(type) >= 0")
    .Attr("f: func")
    .Attr("const_args: list(int) = []")
    // Compiled ahead of time by blade_disc_tf.convert_saved_model, one entry
    // per cache key (format: tf_disc/ops/embedded.h).
    .Attr("executables: list(string) = []")
    // Static output shapes, when the converter inferred them from `f`
    // (empty: unknown), so shape inference sees through converted graphs.
    .Attr("output_shapes: list(shape) = []")
    // Stateful: Grappler must not constant-fold it (that would compile and run
    // it inside the optimizer), nor dedupe or prune it.
    .SetIsStateful()
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      std::vector<tensorflow::PartialTensorShape> shapes;
      if (!c->GetAttr("output_shapes", &shapes).ok() ||
          static_cast<int>(shapes.size()) != c->num_outputs()) {
        shapes.assign(c->num_outputs(), tensorflow::PartialTensorShape());
      }
      for (int i = 0; i < c->num_outputs(); ++i) {
        tensorflow::shape_inference::ShapeHandle h;
        TF_RETURN_IF_ERROR(c->MakeShapeFromPartialTensorShape(shapes[i], &h));
        c->set_output(i, h);
      }
      return absl::OkStatus();
    })
    .Doc("Runs cluster function `f` through a compiled executable specialized "
         "on input ranks and the values of `const_args`; falls back to `f`. "
         "`executables` holds executables compiled ahead of time, by key.");

namespace {

class DiscLaunchOp : public AsyncOpKernel {
 public:
  explicit DiscLaunchOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx) {
    tensorflow::NameAttrList f;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("f", &f));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("const_args", &const_args_));
    std::vector<std::string> blobs;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("executables", &blobs));
    function_ = f.name();
    claim_ = std::make_unique<FunctionClaim>(function_);
    if (!blobs.empty()) {
      embedded_ = std::make_unique<EmbeddedExecutables>(function_, blobs);
    }
    fallback_ = std::make_unique<FunctionFallback>(std::move(f));
    stats_ = GetFunctionStats(function_);
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    std::string key;
    const bool fast_math = FastMathBf16();  // read once: key and request agree
    std::string reason = BuildKey(ctx, fast_math, &key);
    if (!reason.empty()) {
      stats_->RecordRun(key);
      Fallback(ctx, std::move(done), reason);
      return;
    }
    stats_->RecordRun(key);
    if (embedded_ != nullptr && RunEmbedded(ctx, key, &done)) return;
    if (std::shared_ptr<const Executable> exe = Remembered(key)) {
      stats_->RecordCacheHit();
      RunExecutable(ctx, *exe);
      done();
      return;
    }
    Options options = GetOptions();
    LookupParams params{&function_, &key, stats_, options.async_compile,
                        options.compile_timeout_s};
    auto make_request = [this, ctx, &key, fast_math](std::string* request,
                                                     std::string* fdef) {
      return BuildRequest(ctx, key, fast_math, request, fdef);
    };
    // A waiting caller resumes on the compile/timeout thread: hop back onto
    // the device's worker threads before doing real work.
    auto cont = [this, ctx, done](const CacheOutcome& o) {
      auto* threads = ctx->device()->tensorflow_cpu_worker_threads();
      if (threads == nullptr || threads->workers == nullptr) {
        Continue(ctx, done, o);  // no pool (unexpected on CPU): run here
        return;
      }
      threads->workers->Schedule([this, ctx, done, o]() mutable {
        Continue(ctx, std::move(done), o);
      });
    };
    const uint64_t epoch = ExecutableCacheEpoch();
    CacheOutcome outcome;
    if (LookupExecutable(params, make_request, &outcome, std::move(cont))) {
      if (outcome.exe) Remember(key, epoch, outcome.exe);
      Continue(ctx, std::move(done), outcome);
    }
  }

 private:
  // Per-kernel memo of the last key's executable: a steady-state call skips
  // the process-wide locked lookup.  Stale once the cache was cleared.
  std::shared_ptr<const Executable> Remembered(const std::string& key) {
    std::lock_guard<std::mutex> lock(memo_mu_);
    if (memo_exe_ == nullptr || memo_key_ != key ||
        memo_epoch_ != ExecutableCacheEpoch()) {
      return nullptr;
    }
    return memo_exe_;
  }

  void Remember(const std::string& key, uint64_t epoch,
                std::shared_ptr<const Executable> exe) {
    std::lock_guard<std::mutex> lock(memo_mu_);
    memo_key_ = key;
    memo_epoch_ = epoch;
    memo_exe_ = std::move(exe);
  }

  // Runs the executable embedded for `key` (or, when it was refused, the
  // original function).  False when nothing is embedded for `key`: the
  // caller then compiles as usual and *done is untouched.
  bool RunEmbedded(OpKernelContext* ctx, const std::string& key,
                   DoneCallback* done) {
    std::shared_ptr<const Executable> exe;
    std::string reason;
    if (!embedded_->Find(key, &exe, &reason)) return false;
    if (!exe) {
      Fallback(ctx, std::move(*done), reason);
      return true;
    }
    stats_->RecordCacheHit();
    RunExecutable(ctx, *exe);
    (*done)();
    return true;
  }

  void Continue(OpKernelContext* ctx, DoneCallback done, const CacheOutcome& o) {
    if (!o.exe) {
      Fallback(ctx, std::move(done), o.fallback_reason);
      return;
    }
    if (!o.triggered_compile) {
      stats_->RecordCacheHit();
      VLOG(1) << "DiscLaunch: " << function_ << ": executable cache hit";
    }
    RunExecutable(ctx, *o.exe);
    done();
  }

  // Computes the cache key: input ranks plus values of const args, plus
  // "|fast_math=bf16" under that option (so an executable built with it is
  // never run without it, nor the reverse).  Returns a non-empty fallback
  // reason when the inputs cannot be compiled for.
  std::string BuildKey(OpKernelContext* ctx, bool fast_math, std::string* key) const {
    key->reserve(32);
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      int rank = ctx->input(i).dims();
      if (rank > DISC_MAX_RANK) {
        return "rank > " + std::to_string(DISC_MAX_RANK);
      }
      if (i) key->push_back(',');
      *key += std::to_string(rank);
    }
    for (int64_t arg : const_args_) {
      if (arg < 0 || arg >= ctx->num_inputs()) return "bad const_args attr";
      std::string values;
      if (!ConstValues(ctx->input(arg), &values)) {
        return "unsupported const arg dtype";
      }
      *key += "|" + std::to_string(arg) + "=[" + values + "]";
    }
    if (fast_math) *key += "|fast_math=bf16";
    return "";
  }

  // Comma-separated values of an int32/int64 host tensor.
  static bool ConstValues(const Tensor& t, std::string* out) {
    if (t.dtype() == tensorflow::DT_INT32) {
      auto flat = t.flat<int32_t>();
      for (int64_t i = 0; i < flat.size(); ++i) {
        if (i) out->push_back(',');
        *out += std::to_string(flat(i));
      }
      return true;
    }
    if (t.dtype() == tensorflow::DT_INT64) {
      auto flat = t.flat<int64_t>();
      for (int64_t i = 0; i < flat.size(); ++i) {
        if (i) out->push_back(',');
        *out += std::to_string(flat(i));
      }
      return true;
    }
    return false;
  }

  absl::Status BuildRequest(OpKernelContext* ctx, const std::string& key, bool fast_math,
                            std::string* request, std::string* fdef) const {
    // Prefer the body as clustered over the library's Grappler-optimized one.
    if (!LookupClusterFunction(function_, fdef)) {
      auto* lib = ctx->function_library();
      const tensorflow::FunctionDef* def =
          lib ? lib->GetFunctionLibraryDefinition()->Find(function_) : nullptr;
      if (def == nullptr) {
        return absl::NotFoundError("function " + function_ + " not in library");
      }
      if (!tensorflow::SerializeToStringDeterministic(*def, fdef)) {
        return absl::InternalError("cannot serialize " + function_);
      }
    }
    std::string& r = *request;
    r = "{\"function\": ";
    json::AppendQuoted(function_, &r);
    r += ", \"key\": ";
    json::AppendQuoted(key, &r);
    r += ", \"inputs\": [";
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& t = ctx->input(i);
      if (i) r += ", ";
      r += "{\"dtype\": " + std::to_string(static_cast<int>(t.dtype())) +
           ", \"rank\": " + std::to_string(t.dims()) + ", \"value\": ";
      bool is_const = false;
      for (int64_t a : const_args_) is_const = is_const || a == i;
      std::string values;
      if (is_const && ConstValues(t, &values)) {
        r += "[" + values + "]";
      } else {
        r += "null";
      }
      r += "}";
    }
    r += fast_math ? "], \"fast_math\": \"bf16\"}" : "], \"fast_math\": \"\"}";
    return absl::OkStatus();
  }

  void RunExecutable(OpKernelContext* ctx, const Executable& exe) const {
    std::vector<DiscBuffer> buffers(ctx->num_inputs());
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& t = ctx->input(i);
      DiscBuffer& b = buffers[i];
      b.data = t.NumElements() == 0 ? nullptr
                                    : const_cast<char*>(t.tensor_data().data());
      b.rank = t.dims();
      for (int d = 0; d < b.rank; ++d) b.dims[d] = t.dim_size(d);
    }
    KernelRuntime runtime(ctx);
    runtime.Run(exe.entry, buffers).IgnoreError();  // status already in ctx
  }

  void Fallback(OpKernelContext* ctx, DoneCallback done,
                const std::string& reason) {
    if (stats_->RecordFallback(reason)) {
      LOG(WARNING) << "DiscLaunch: running " << function_
                   << " with TensorFlow (fallback): " << reason;
    }
    fallback_->RunAsync(ctx, std::move(done));
  }

  std::string function_;
  std::vector<int64_t> const_args_;
  std::unique_ptr<FunctionFallback> fallback_;
  std::unique_ptr<EmbeddedExecutables> embedded_;  // null: none embedded
  FunctionStats* stats_ = nullptr;
  std::unique_ptr<FunctionClaim> claim_;  // keeps this function's executables
  std::mutex memo_mu_;
  std::string memo_key_;
  uint64_t memo_epoch_ = 0;
  std::shared_ptr<const Executable> memo_exe_;
};

REGISTER_KERNEL_BUILDER(Name("DiscLaunch").Device(tensorflow::DEVICE_CPU),
                        DiscLaunchOp);

}  // namespace
}  // namespace tf_disc
