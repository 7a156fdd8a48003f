// The DiscRuntime (disc_abi.h) of one DiscLaunch call on a GPU: TF's glue
// around cuda_backend.h.  Device work goes on the op's CUDA stream (TF's
// compute stream of the device), outputs and scratch through TF's GPU
// allocator, GEMMs through cuBLASLt with TF's TF32 setting.
#ifndef TF_DISC_RUNTIME_CUDA_GPU_RUNTIME_H_
#define TF_DISC_RUNTIME_CUDA_GPU_RUNTIME_H_

#include <cuda.h>

#include <string>

#include "tensorflow/core/framework/op_kernel.h"
#include "tf_disc/runtime/cuda/cuda_backend.h"
#include "tf_disc/runtime/runtime_call.h"

namespace tf_disc {

// Where one call runs on a GPU.
struct GpuCallSite {
  cuda::CudaBackend* backend = nullptr;
  CUstream stream = nullptr;
  CUcontext context = nullptr;  // the stream's
  CUdevice device = 0;
  std::string arch;  // "sm_XY" of the device: the compile target and key
};

// The process's CudaBackend, made on first use from the driver and cuBLASLt
// TF itself loaded (so both match TF's CUDA); null with *error ("CUDA driver
// not found: ...") where there is no usable driver.
cuda::CudaBackend* SharedCudaBackend(std::string* error);

// Fills *site for the op's stream.  Returns "" or why the call cannot run
// on this GPU (the caller falls back to the cluster's function).
std::string ResolveGpuCallSite(tensorflow::OpKernelContext* ctx, GpuCallSite* site);

// "sm_<major><minor>": the architecture a compute capability compiles for.
std::string CudaArchName(int cc_major, int cc_minor);

// "" when every int32 input and output of the call is in host memory, as a
// CUDA library reads and writes them (disc_abi.h) and DiscLaunch reads
// const args; else which one is not (the launch node lacked its
// _input_hostmem / _output_hostmem entry).
std::string HostMemoryMismatch(tensorflow::OpKernelContext* ctx);

class GpuKernelRuntime : public RuntimeCall {
 public:
  // modules: the executable's device code; allow_tf32: float32 GEMMs may
  // round to TF32 (tsl::tensor_float_32_execution_enabled()).
  GpuKernelRuntime(tensorflow::OpKernelContext* ctx, const GpuCallSite& site,
                   cuda::ModuleTable* modules, bool allow_tf32);

 private:
  static int32_t Gemm(void* self, const DiscGemmArgs* args);
  static int32_t Launch(void* self, int32_t kernel, const DiscLaunchDims* dims,
                        const void* args, size_t args_size);
  static int32_t DeviceInfo(void* self, DiscDeviceInfo* out);
  static int32_t MemsetAsync(void* self, void* dst, int32_t byte, size_t bytes);
  static int32_t MemcpyAsync(void* self, void* dst, const void* src, size_t bytes,
                             int32_t kind);
  static int32_t Sync(void* self);

  static GpuKernelRuntime* Self(void* ctx) { return static_cast<GpuKernelRuntime*>(Of(ctx)); }
  // Records an internal error "DiscLaunch: <error>"; returns 1 (rt's failure).
  int32_t Failed(const std::string& error);

  GpuCallSite site_;
  cuda::ModuleTable* modules_;
  bool allow_tf32_;
};

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CUDA_GPU_RUNTIME_H_
