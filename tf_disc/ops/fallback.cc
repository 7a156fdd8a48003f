#include "tf_disc/ops/fallback.h"

#include <vector>

#include "tensorflow/core/common_runtime/device.h"

namespace tf_disc {

using tensorflow::FunctionLibraryRuntime;

absl::Status FunctionFallback::GetHandle(FunctionLibraryRuntime* lib, int num_inputs,
                                         FunctionLibraryRuntime::Handle* handle) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find(lib);
    if (it != handles_.end()) {
      *handle = it->second;
      return absl::OkStatus();
    }
  }
  // Instantiate outside the lock: it may optimize the function (Grappler).
  // As a multi-device function, like TF's own PartitionedCall: only that
  // path runs the graph optimization passes, among them oneDNN's layout
  // rewrite, without which a cluster's remapper op such as
  // _FusedDepthwiseConv2dNative runs a placeholder kernel that leaves its
  // output unset ("Missing 0-th output").
  FunctionLibraryRuntime::InstantiateOptions options;
  options.is_multi_device_function = true;
  options.target = lib->device()->name();
  options.input_devices.assign(num_inputs, options.target);
  FunctionLibraryRuntime::Handle h;
  absl::Status s = lib->Instantiate(function_.name(),
                                    tensorflow::AttrSlice(&function_.attr()), options, &h);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  handles_.emplace(lib, h);  // a concurrent Instantiate returned the same handle
  *handle = h;
  return absl::OkStatus();
}

void FunctionFallback::RunAsync(tensorflow::OpKernelContext* ctx,
                                tensorflow::AsyncOpKernel::DoneCallback done) {
  FunctionLibraryRuntime* lib = ctx->function_library();
  if (lib == nullptr) {
    ctx->SetStatus(absl::InternalError("DiscLaunch: no function library"));
    done();
    return;
  }
  FunctionLibraryRuntime::Handle handle;
  absl::Status s = GetHandle(lib, ctx->num_inputs(), &handle);
  if (!s.ok()) {
    ctx->SetStatus(s);
    done();
    return;
  }
  FunctionLibraryRuntime::Options opts(ctx->step_id());
  opts.rendezvous = ctx->rendezvous();
  opts.cancellation_manager = ctx->cancellation_manager();
  opts.step_container = ctx->step_container();
  opts.stats_collector = ctx->stats_collector();
  // Inline: DiscLaunch blocks its thread until done (disc_launch_op.cc), so
  // the function must not wait for a pool thread.
  static std::function<void(std::function<void()>)>* inline_runner =
      new std::function<void(std::function<void()>)>(
          [](std::function<void()> fn) { fn(); });
  opts.runner = inline_runner;
  opts.run_all_kernels_inline = true;
  opts.collective_executor = ctx->collective_executor();
  opts.stack_trace = ctx->stack_trace();
  std::vector<tensorflow::Tensor> args;
  args.reserve(ctx->num_inputs());
  for (int i = 0; i < ctx->num_inputs(); ++i) args.push_back(ctx->input(i));
  auto* rets = new std::vector<tensorflow::Tensor>;
  lib->Run(opts, handle, args, rets,
           [ctx, done = std::move(done), rets](const absl::Status& status) {
             if (!status.ok()) {
               ctx->SetStatus(status);
             } else if (static_cast<int>(rets->size()) != ctx->num_outputs()) {
               ctx->SetStatus(absl::InternalError(
                   "DiscLaunch: fallback function returned " +
                   std::to_string(rets->size()) + " values, expected " +
                   std::to_string(ctx->num_outputs())));
             } else {
               for (size_t i = 0; i < rets->size(); ++i) {
                 ctx->set_output(static_cast<int>(i), (*rets)[i]);
               }
             }
             delete rets;
             done();
           });
}

}  // namespace tf_disc
