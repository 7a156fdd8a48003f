#include "tf_disc/runtime/cuda/cuda_driver.h"

namespace tf_disc {
namespace cuda {

namespace {

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* out, std::string* error) {
  return ResolveSymbol(handle, "the CUDA driver", symbol, out, error);
}

}  // namespace

bool LoadCudaDriver(void* handle, const char* why, CudaDriver* d, std::string* error) {
  if (handle == nullptr) {
    *error = kDriverNotFound;
    if (why != nullptr && *why != '\0') *error += std::string(": ") + why;
    return false;
  }
  return Resolve(handle, "cuGetErrorString", &d->GetErrorString, error) &&
         Resolve(handle, "cuStreamGetCtx", &d->StreamGetCtx, error) &&
         Resolve(handle, "cuCtxGetCurrent", &d->CtxGetCurrent, error) &&
         Resolve(handle, "cuCtxPushCurrent_v2", &d->CtxPushCurrent, error) &&
         Resolve(handle, "cuCtxPopCurrent_v2", &d->CtxPopCurrent, error) &&
         Resolve(handle, "cuCtxGetDevice", &d->CtxGetDevice, error) &&
         Resolve(handle, "cuCtxSynchronize", &d->CtxSynchronize, error) &&
         Resolve(handle, "cuDeviceGetAttribute", &d->DeviceGetAttribute, error) &&
         Resolve(handle, "cuModuleLoadData", &d->ModuleLoadData, error) &&
         Resolve(handle, "cuModuleGetFunction", &d->ModuleGetFunction, error) &&
         Resolve(handle, "cuModuleUnload", &d->ModuleUnload, error) &&
         Resolve(handle, "cuFuncSetAttribute", &d->FuncSetAttribute, error) &&
         Resolve(handle, "cuLaunchKernel", &d->LaunchKernel, error) &&
         Resolve(handle, "cuMemsetD8Async", &d->MemsetD8Async, error) &&
         Resolve(handle, "cuMemcpyHtoDAsync_v2", &d->MemcpyHtoDAsync, error) &&
         Resolve(handle, "cuMemcpyDtoHAsync_v2", &d->MemcpyDtoHAsync, error) &&
         Resolve(handle, "cuMemcpyDtoDAsync_v2", &d->MemcpyDtoDAsync, error) &&
         Resolve(handle, "cuStreamSynchronize", &d->StreamSynchronize, error);
}

std::string DriverErrorText(const CudaDriver& driver, CUresult rc, const std::string& what) {
  const char* text = nullptr;
  if (driver.GetErrorString == nullptr || driver.GetErrorString(rc, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    text = "unknown CUDA error";
  }
  return what + ": " + text + " (CUresult " + std::to_string(static_cast<int>(rc)) + ")";
}

ScopedContext::ScopedContext(const CudaDriver& driver, CUcontext context) : driver_(driver) {
  CUcontext current = nullptr;
  if (context == nullptr || driver_.CtxGetCurrent(&current) != CUDA_SUCCESS ||
      current == context) {
    return;
  }
  pushed_ = driver_.CtxPushCurrent(context) == CUDA_SUCCESS;
}

ScopedContext::~ScopedContext() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  driver_.CtxPopCurrent(&popped);
}

}  // namespace cuda
}  // namespace tf_disc
