#include "tf_disc/runtime/cuda/gpu_runtime.h"

#include <memory>

#include "tensorflow/core/framework/allocator.h"
#include "tensorflow/core/platform/stream_executor.h"
#include "tf_disc/runtime/cuda/cuda_driver.h"

namespace tf_disc {

namespace {

// GPU scratch alignment: cuBLASLt's and vectorized kernels' best case.
constexpr size_t kGpuAlignment = 256;

// A dlopen handle TF's loader found, or null with *why.
void* TfHandle(absl::StatusOr<void*> handle, std::string* why) {
  if (handle.ok()) return *handle;
  *why = std::string(handle.status().message());
  return nullptr;
}

}  // namespace

cuda::CudaBackend* SharedCudaBackend(std::string* error) {
  struct Shared {
    std::unique_ptr<cuda::CudaBackend> backend;
    std::string error;
  };
  static const Shared* shared = [] {
    auto* s = new Shared();
    std::string driver_why, cublaslt_why;
    void* driver =
        TfHandle(tsl::internal::CachedDsoLoader::GetCudaDriverDsoHandle(), &driver_why);
    void* cublaslt =
        TfHandle(tsl::internal::CachedDsoLoader::GetCublasLtDsoHandle(), &cublaslt_why);
    s->backend = cuda::CudaBackend::Create(driver, driver_why.c_str(), cublaslt,
                                           cublaslt_why.c_str(), &s->error);
    return s;
  }();
  if (shared->backend == nullptr) *error = shared->error;
  return shared->backend.get();
}

std::string CudaArchName(int cc_major, int cc_minor) {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

std::string ResolveGpuCallSite(tensorflow::OpKernelContext* ctx, GpuCallSite* site) {
  std::string error;
  site->backend = SharedCudaBackend(&error);
  if (site->backend == nullptr) return error;
  tensorflow::DeviceContext* dc = ctx->op_device_context();
  stream_executor::Stream* stream = dc != nullptr ? dc->stream() : nullptr;
  if (stream == nullptr) return "no GPU stream for the op";
  site->stream = static_cast<CUstream>(stream->platform_specific_handle().stream);
  if (site->stream == nullptr) return "the GPU stream is not a CUDA stream";
  if (!site->backend->StreamContext(site->stream, &site->context, &site->device, &error)) {
    return error;
  }
  DiscDeviceInfo info;
  if (!site->backend->DeviceInfo(site->device, &info, &error)) return error;
  site->arch = CudaArchName(info.cc_major, info.cc_minor);
  return "";
}

std::string HostMemoryMismatch(tensorflow::OpKernelContext* ctx) {
  for (int i = 0; i < ctx->num_inputs(); ++i) {
    if (ctx->input_dtype(i) == tensorflow::DT_INT32 &&
        ctx->input_memory_type(i) != tensorflow::HOST_MEMORY) {
      return "int32 input " + std::to_string(i) + " in device memory";
    }
  }
  for (int i = 0; i < ctx->num_outputs(); ++i) {
    if (ctx->expected_output_dtype(i) == tensorflow::DT_INT32 &&
        ctx->output_memory_type(i) != tensorflow::HOST_MEMORY) {
      return "int32 output " + std::to_string(i) + " in device memory";
    }
  }
  return "";
}

GpuKernelRuntime::GpuKernelRuntime(tensorflow::OpKernelContext* ctx, const GpuCallSite& site,
                                   cuda::ModuleTable* modules, bool allow_tf32)
    : RuntimeCall(ctx, ctx->device()->GetAllocator(tensorflow::AllocatorAttributes()),
                  kGpuAlignment, DISC_DEVICE_CUDA, site.stream),
      site_(site),
      modules_(modules),
      allow_tf32_(allow_tf32) {
  abi_.gemm = &GpuKernelRuntime::Gemm;
  abi_.launch = &GpuKernelRuntime::Launch;
  abi_.device_info = &GpuKernelRuntime::DeviceInfo;
  abi_.memset_async = &GpuKernelRuntime::MemsetAsync;
  abi_.memcpy_async = &GpuKernelRuntime::MemcpyAsync;
  abi_.sync = &GpuKernelRuntime::Sync;
}

int32_t GpuKernelRuntime::Failed(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  RecordError(absl::InternalError("DiscLaunch: " + error));
  return 1;
}

int32_t GpuKernelRuntime::Gemm(void* p, const DiscGemmArgs* args) {
  GpuKernelRuntime* self = Self(p);
  if (args == nullptr) return self->Failed("gemm: null arguments");
  std::string error;
  // Scratch (the cuBLASLt workspace) is freed when the call returns, before
  // the GPU ran the product: safe, as every user of the allocator queues on
  // this same stream.
  auto allocate = [p](size_t bytes) { return AllocTemp(p, bytes); };
  if (self->site_.backend->Gemm(*args, self->allow_tf32_, self->site_.stream, allocate, &error)) {
    return 0;
  }
  return self->Failed(error);
}

int32_t GpuKernelRuntime::Launch(void* p, int32_t kernel, const DiscLaunchDims* dims,
                                 const void* args, size_t args_size) {
  GpuKernelRuntime* self = Self(p);
  if (dims == nullptr || (args == nullptr && args_size > 0)) {
    return self->Failed("launch: null arguments");
  }
  if (self->modules_ == nullptr) return self->Failed("launch: the executable has no device code");
  std::string error;
  if (self->site_.backend->Launch(self->modules_, self->site_.stream, kernel, *dims, args,
                                  args_size, &error)) {
    return 0;
  }
  return self->Failed(error);
}

int32_t GpuKernelRuntime::DeviceInfo(void* p, DiscDeviceInfo* out) {
  GpuKernelRuntime* self = Self(p);
  if (out == nullptr) return self->Failed("device_info: null output");
  std::string error;
  if (self->site_.backend->DeviceInfo(self->site_.device, out, &error)) return 0;
  return self->Failed(error);
}

int32_t GpuKernelRuntime::MemsetAsync(void* p, void* dst, int32_t byte, size_t bytes) {
  GpuKernelRuntime* self = Self(p);
  std::string error;
  if (self->site_.backend->Memset(self->site_.stream, dst, byte, bytes, &error)) return 0;
  return self->Failed(error);
}

int32_t GpuKernelRuntime::MemcpyAsync(void* p, void* dst, const void* src, size_t bytes,
                                      int32_t kind) {
  GpuKernelRuntime* self = Self(p);
  std::string error;
  if (self->site_.backend->Memcpy(self->site_.stream, dst, src, bytes, kind, &error)) return 0;
  return self->Failed(error);
}

int32_t GpuKernelRuntime::Sync(void* p) {
  GpuKernelRuntime* self = Self(p);
  std::string error;
  if (self->site_.backend->Sync(self->site_.stream, &error)) return 0;
  return self->Failed(error);
}

}  // namespace tf_disc
