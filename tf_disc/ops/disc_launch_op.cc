// DiscLaunch: runs one clustered subgraph through a compiled executable, or
// falls back to the original function when there is none.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
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
#include "tf_disc/common/json.h"
#include "tf_disc/ops/options.h"
#include "tf_disc/ops/self_guard.h"
#include "tf_disc/ops/stats.h"
#include "tf_disc/runtime/cpu/kernel_dispatch.h"
#include "tf_disc/runtime/cpu/runtime.h"
#include "tf_disc/runtime/cuda/gpu_runtime.h"
#include "tsl/platform/tensor_float_32_utils.h"

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
    // Inputs that come straight from a Const or a resource ReadVariableOp:
    // their buffers cannot change while referenced, so fast math packs
    // GEMM weights among them once (runtime/cpu/packed_weights.h).
    .Attr("stable_args: list(int) = []")
    // Whether fast_math="bf16" can change the cluster's results (it holds a
    // float32 op that may lower to a `dot` or a convolution): set by the
    // rewrite from the support table's "fast_math" ops
    // (compiler/registry.py FAST_MATH_OPS); such
    // clusters are keyed with the option.  True when absent (older graphs).
    .Attr("fast_math_changes: bool = true")
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

// PackedWeights' gauge: disc.stats()["bf16_weights"] / ["fp32_weights"].
void RecordPackedWeights(PackKind kind, int64_t packs, int64_t bytes) {
  RecordWeightPacks(kind == PackKind::kBf16, packs, bytes);
}

class DiscLaunchOp : public AsyncOpKernel {
 public:
  explicit DiscLaunchOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx) {
    tensorflow::NameAttrList f;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("f", &f));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("const_args", &const_args_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("stable_args", &stable_args_));
    for (int64_t i : stable_args_) {
      if (i < 0) continue;
      if (static_cast<size_t>(i) >= stable_input_.size()) stable_input_.resize(i + 1, false);
      stable_input_[i] = true;
    }
    std::vector<std::string> blobs;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("executables", &blobs));
    function_ = f.name();
    claim_ = std::make_unique<FunctionClaim>(function_);
    if (!blobs.empty()) {
      embedded_ = std::make_unique<EmbeddedExecutables>(function_, blobs);
    }
    OP_REQUIRES_OK(ctx, ctx->GetAttr("fast_math_changes", &fast_math_changes_));
    fallback_ = std::make_unique<FunctionFallback>(std::move(f));
    on_gpu_ = ctx->device_type() == tensorflow::DeviceType(tensorflow::DEVICE_GPU);
    stats_ = GetFunctionStats(function_);
    stats_->AttachGuard(&guard_);
  }

  ~DiscLaunchOp() override {
    if (stats_ != nullptr) stats_->DetachGuard(&guard_);
  }

  // The executor treats the kernel as synchronous: after an async kernel's
  // done() it hands every successor to the inter-op pool, a thread hop per
  // launch (benchmarks/call_overhead.py, 32 clusters of six ops at 2x2:
  // a launch cost 10-30 us more than the six TF ops async, 3-9 us less sync).  The steady state
  // calls done() inline; the rare waits (compile, fallback) block this
  // thread and depend on no executor thread: the compile thread resumes the
  // call itself, the fallback runs its function inline.
  // (AsyncOpKernel::Compute: ComputeAsync, then wait for done.)
  tensorflow::AsyncOpKernel* AsAsync() override { return nullptr; }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    // The steady state: the key is one this kernel has run since the last
    // cache clear and stats reset.  Built into a per-thread buffer (no
    // allocation), matched against the memo (no hashing, no global lock).
    static thread_local std::string scratch;
    // Read once: key and request agree.  Only clusters with a float dot get
    // the option (and with it a key of their own): it changes nothing else.
    const bool fast_math = fast_math_changes_ && FastMathBf16();
    GpuCallSite site;  // on a GPU: where this call runs
    std::string reason = BuildKey(ctx, fast_math, &site, &scratch);
    if (reason.empty()) {
      uint64_t generation;
      if (std::shared_ptr<const Executable> exe = Remembered(scratch, &generation)) {
        const uint64_t hit = stats_->RecordMemoRun(scratch, generation);
        RunGuarded(ctx, site, scratch, *exe, std::move(done), hit);
        return;
      }
    }
    const std::string key = scratch;  // scratch is reused by nested calls
    const uint64_t stats_generation = stats_->RecordRun(key);
    if (!reason.empty()) {
      Fallback(ctx, std::move(done), reason);
      return;
    }
    // Converted SavedModels embed CPU executables only.
    if (embedded_ != nullptr && !on_gpu_ && RunEmbedded(ctx, key, stats_generation, &done)) {
      return;
    }
    Options options = GetOptions();
    LookupParams params{&function_, &key, stats_, options.async_compile,
                        options.compile_timeout_s, on_gpu_ ? DISC_DEVICE_CUDA : DISC_DEVICE_CPU};
    auto make_request = [this, ctx, &key, &site, fast_math](std::string* request,
                                                            std::string* fdef) {
      return BuildRequest(ctx, key, fast_math, site.arch, request, fdef);
    };
    // A waiting caller resumes on the compile/timeout thread (Compute is
    // blocked meanwhile): a pool could be fully blocked in such waits.
    auto cont = [this, ctx, site, done, stats_generation, key](const CacheOutcome& o) {
      Continue(ctx, site, key, done, o, stats_generation);
    };
    const uint64_t epoch = ExecutableCacheEpoch();
    CacheOutcome outcome;
    if (LookupExecutable(params, make_request, &outcome, std::move(cont))) {
      if (outcome.exe) Remember(key, epoch, stats_generation, outcome.exe);
      Continue(ctx, site, key, std::move(done), outcome, stats_generation);
    }
  }

 private:
  // Per-kernel memo of the executables of the last few keys (a cluster
  // usually sees one or two rank signatures).  An entry is stale once the
  // cache was cleared (epoch) or the stats reset (which forgot the key);
  // stats_generation is the one the key was recorded under (RecordRun).
  struct MemoEntry {
    std::string key;
    uint64_t epoch;
    uint64_t stats_generation;
    std::shared_ptr<const Executable> exe;
  };
  static constexpr size_t kMemoSize = 4;

  std::shared_ptr<const Executable> Remembered(const std::string& key,
                                              uint64_t* stats_generation) {
    const uint64_t epoch = ExecutableCacheEpoch();
    const uint64_t generation = stats_->generation();
    std::lock_guard<std::mutex> lock(memo_mu_);
    for (const MemoEntry& e : memo_) {
      if (e.key == key && e.epoch == epoch && e.stats_generation == generation) {
        *stats_generation = generation;
        return e.exe;
      }
    }
    return nullptr;
  }

  void Remember(const std::string& key, uint64_t epoch, uint64_t stats_generation,
                std::shared_ptr<const Executable> exe) {
    std::lock_guard<std::mutex> lock(memo_mu_);
    MemoEntry* slot = nullptr;
    for (MemoEntry& e : memo_) {
      if (e.key == key || e.epoch != epoch) slot = &e;  // same key or stale
    }
    if (slot == nullptr && memo_.size() < kMemoSize) {
      slot = &memo_.emplace_back();
    }
    if (slot == nullptr) slot = &memo_[memo_next_++ % kMemoSize];  // round robin
    *slot = MemoEntry{key, epoch, stats_generation, std::move(exe)};
  }

  // Runs the executable embedded for `key` (or, when it was refused, the
  // original function).  False when nothing is embedded for `key`: the
  // caller then compiles as usual and *done is untouched.
  bool RunEmbedded(OpKernelContext* ctx, const std::string& key, uint64_t stats_generation,
                   DoneCallback* done) {
    const uint64_t epoch = ExecutableCacheEpoch();
    std::shared_ptr<const Executable> exe;
    std::string reason;
    // Converters before fast_math_changes_ keyed every cluster with the
    // option, dot or not: such an executable is the same code.
    if (!embedded_->Find(key, &exe, &reason) &&
        (fast_math_changes_ || !FastMathBf16() ||
         !embedded_->Find(key + kFastMathSuffix, &exe, &reason))) {
      return false;
    }
    if (!exe) {
      Fallback(ctx, std::move(*done), reason);
      return true;
    }
    Remember(key, epoch, stats_generation, exe);
    RunGuarded(ctx, GpuCallSite(), key, *exe, std::move(*done), stats_generation);
    return true;
  }

  // stats_generation: the one the run was recorded under (RecordRun).
  void Continue(OpKernelContext* ctx, const GpuCallSite& site, const std::string& key,
                DoneCallback done, const CacheOutcome& o, uint64_t stats_generation) {
    if (!o.exe) {
      Fallback(ctx, std::move(done), o.fallback_reason);
      return;
    }
    std::optional<uint64_t> hit;
    if (!o.triggered_compile) {
      hit = stats_generation;
      VLOG(1) << "DiscLaunch: " << function_ << ": executable cache hit";
    }
    RunGuarded(ctx, site, key, *o.exe, std::move(done), hit);
  }

  // The self-guard's size bucket: activations only (stable inputs are
  // weights, the same size at every call).
  int GuardBucket(OpKernelContext* ctx) const {
    int64_t elements = 0;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const bool stable = static_cast<size_t>(i) < stable_input_.size() && stable_input_[i];
      if (!stable) elements += ctx->input(i).NumElements();
    }
    return SelfGuard::Bucket(elements);
  }

  // Runs `exe` or, where the self-guard measured TF's own ops faster for
  // this key and size, the original function; times the run for the guard.
  // site: where the call runs when on a GPU.  Not on a GPU: a call's host
  // time there measures how long queueing its work took, not the work.
  void RunGuarded(OpKernelContext* ctx, const GpuCallSite& site, const std::string& key,
                  const Executable& exe, DoneCallback done, std::optional<uint64_t> hit) {
    if (!SelfGuardOn() || on_gpu_) {
      RunExecutable(ctx, site, exe, std::move(done), hit, nullptr);
      return;
    }
    const SelfGuard::Ticket ticket = guard_.Choose(key, GuardBucket(ctx));
    if (ticket.route == SelfGuard::Route::kExecutable) {
      RunExecutable(ctx, site, exe, std::move(done), hit, &ticket);
      return;
    }
    stats_->RecordGuardTfRun();
    const auto start = std::chrono::steady_clock::now();
    fallback_->RunAsync(ctx, [this, ctx, ticket, start, done = std::move(done)]() {
      if (ctx->status().ok()) RecordGuardRun(ticket, start);
      done();
    });
  }

  void RecordGuardRun(const SelfGuard::Ticket& ticket,
                      std::chrono::steady_clock::time_point start) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (guard_.Record(ticket, took.count())) {
      const SelfGuard::SlotReport report = guard_.Report(ticket.slot);
      VLOG(1) << "DiscLaunch: " << function_ << " key " << report.key << " bucket "
              << report.bucket << ": self-guard routes to "
              << (report.route == SelfGuard::Route::kTf ? "TF" : "the executable")
              << " (executable " << report.executable_s * 1e3 << " ms, TF "
              << report.tf_s * 1e3 << " ms, medians)";
    }
  }

  // Computes the cache key into *key (cleared first): input ranks plus
  // values of const args, plus "|fast_math=bf16" when the option applies (so
  // an executable built with it is never run without it, nor the reverse),
  // plus "|cuda=sm_XY" on a GPU (its architecture; *site filled).
  // Returns a non-empty fallback reason when the inputs cannot be compiled for.
  std::string BuildKey(OpKernelContext* ctx, bool fast_math, GpuCallSite* site,
                       std::string* key) const {
    static_assert(DISC_MAX_RANK <= 9, "ranks are written as one digit");
    key->clear();
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      int rank = ctx->input(i).dims();
      if (rank > DISC_MAX_RANK) {
        return "rank > " + std::to_string(DISC_MAX_RANK);
      }
      if (i) key->push_back(',');
      key->push_back(static_cast<char>('0' + rank));
    }
    // Const args are read below, and int32 buffers by CUDA libraries, on the host.
    if (on_gpu_) {
      if (std::string why = HostMemoryMismatch(ctx); !why.empty()) return why;
    }
    for (int64_t arg : const_args_) {
      if (arg < 0 || arg >= ctx->num_inputs()) return "bad const_args attr";
      *key += "|" + std::to_string(arg) + "=[";
      if (!ConstValues(ctx->input(arg), key)) {
        return "unsupported const arg dtype";
      }
      key->push_back(']');
    }
    if (fast_math) *key += kFastMathSuffix;
    if (on_gpu_) {
      if (std::string why = ResolveGpuCallSite(ctx, site); !why.empty()) return why;
      *key += "|cuda=" + site->arch;
      return "";
    }
    // A broken install (no kernel library beside the op library) runs every
    // cluster in TF rather than failing in its first GEMM or convolution.
    if (!KernelsLoaded()) return "no kernel library for this CPU beside the op library";
    return "";
  }

  // Appends the comma-separated values of an int32/int64 host tensor.
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

  // cuda_arch: the GPU's architecture on a GPU (compiled for target "cuda").
  absl::Status BuildRequest(OpKernelContext* ctx, const std::string& key, bool fast_math,
                            const std::string& cuda_arch, std::string* request,
                            std::string* fdef) const {
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
    r += fast_math ? "], \"fast_math\": \"bf16\"" : "], \"fast_math\": \"\"";
    if (on_gpu_) {
      r += ", \"target\": \"cuda\", \"cuda_arch\": ";
      json::AppendQuoted(cuda_arch, &r);
      r += "}";
    } else {
      r += ", \"target_isa\": \"";
      r += CpuTierName(CodegenCpuTier());
      r += "\"}";
    }
    return absl::OkStatus();
  }

  // Runs `exe`, then done(); or the original function when the executable
  // refuses these inputs (DISC_ERROR_FALLBACK: a compile-time assumption
  // about run-time dims that they break).  `hit`: the stats generation of a
  // cache hit, counted only when the executable ran (a refusal is a fallback).
  // ticket (may be null): the self-guard's, which the run's time is recorded for.
  void RunExecutable(OpKernelContext* ctx, const GpuCallSite& site, const Executable& exe,
                     DoneCallback done, std::optional<uint64_t> hit,
                     const SelfGuard::Ticket* ticket) {
    const auto start = std::chrono::steady_clock::now();
    absl::InlinedVector<DiscBuffer, 16> buffers(ctx->num_inputs());
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& t = ctx->input(i);
      DiscBuffer& b = buffers[i];
      b.data = t.NumElements() == 0 ? nullptr
                                    : const_cast<char*>(t.tensor_data().data());
      b.rank = t.dims();
      for (int d = 0; d < b.rank; ++d) b.dims[d] = t.dim_size(d);
    }
    // Float GEMMs whose B is one of these read it packed once (bf16 for
    // fast-math GEMMs, fp32 otherwise).
    StableInputs stable{&packed_weights_, {}};
    for (int64_t i : stable_args_) {
      if (!on_gpu_ && i >= 0 && i < ctx->num_inputs()) {
        stable.inputs.emplace_back(i, &ctx->input(i));
      }
    }
    auto run = [&](RuntimeCall& runtime) {
      runtime.Run(exe.entry, buffers.data(), static_cast<int32_t>(buffers.size()))
          .IgnoreError();  // status already in ctx
      return runtime.fallback_reason();
    };
    std::string refused;
    if (on_gpu_) {
      // Device code this GPU cannot load runs in TF: found before any work
      // is queued.
      if (exe.modules == nullptr) {
        refused = "the executable has no device code";
      } else if (exe.modules->Load(site.backend->driver(), site.context, &refused)) {
        GpuKernelRuntime runtime(ctx, site, exe.modules.get(),
                                 tsl::tensor_float_32_execution_enabled());
        refused = run(runtime);
      }
    } else {
      KernelRuntime runtime(ctx, stable.inputs.empty() ? nullptr : &stable);
      refused = run(runtime);
    }
    if (!refused.empty()) {
      Fallback(ctx, std::move(done), refused);
      return;
    }
    if (hit) stats_->RecordCacheHit(*hit);
    if (ticket != nullptr && ctx->status().ok()) RecordGuardRun(*ticket, start);
    done();
  }

  void Fallback(OpKernelContext* ctx, DoneCallback done,
                const std::string& reason) {
    if (stats_->RecordFallback(reason)) {
      LOG(WARNING) << "DiscLaunch: running " << function_
                   << " with TensorFlow (fallback): " << reason;
    }
    fallback_->RunAsync(ctx, std::move(done));
  }

  static constexpr const char* kFastMathSuffix = "|fast_math=bf16";

  std::string function_;
  bool fast_math_changes_ = true;  // fast_math=bf16 can change the cluster's results
  bool on_gpu_ = false;            // a DEVICE_GPU kernel: CUDA executables
  std::vector<int64_t> const_args_;
  std::vector<int64_t> stable_args_;
  std::vector<bool> stable_input_;  // by input index: listed in stable_args_
  PackedWeights packed_weights_{RecordPackedWeights};  // of stable_args_
  std::unique_ptr<FunctionFallback> fallback_;
  SelfGuard guard_;
  std::unique_ptr<EmbeddedExecutables> embedded_;  // null: none embedded
  FunctionStats* stats_ = nullptr;
  std::unique_ptr<FunctionClaim> claim_;  // keeps this function's executables
  std::mutex memo_mu_;
  std::vector<MemoEntry> memo_;  // at most kMemoSize
  size_t memo_next_ = 0;
};

REGISTER_KERNEL_BUILDER(Name("DiscLaunch").Device(tensorflow::DEVICE_CPU),
                        DiscLaunchOp);
// Inert without a CUDA driver: every call then falls back ("CUDA driver not
// found").  Int32 args and results (among them every const or value input)
// are placed in host memory through the launch node's _input_hostmem /
// _output_hostmem (grappler/cluster_rewrite.cc).
REGISTER_KERNEL_BUILDER(Name("DiscLaunch").Device(tensorflow::DEVICE_GPU),
                        DiscLaunchOp);

}  // namespace
}  // namespace tf_disc
