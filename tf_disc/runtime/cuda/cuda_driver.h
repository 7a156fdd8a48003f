// The CUDA driver API entry points the GPU runtime uses, resolved with dlsym
// from a handle to libcuda.so.1, so that nothing links against CUDA: the op
// library loads on hosts without a GPU, and the GPU paths stay inert there.
// TF-free (a standalone harness compiles the same file).
#ifndef TF_DISC_RUNTIME_CUDA_CUDA_DRIVER_H_
#define TF_DISC_RUNTIME_CUDA_CUDA_DRIVER_H_

#include <cuda.h>
#include <dlfcn.h>

#include <string>

namespace tf_disc {
namespace cuda {

// The text of every error caused by a missing driver library.
inline constexpr const char* kDriverNotFound = "CUDA driver not found";

// Function pointers of the driver API (versioned symbols where cuda.h
// renames a function, e.g. cuMemcpyHtoDAsync -> cuMemcpyHtoDAsync_v2).
struct CudaDriver {
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuStreamGetCtx) StreamGetCtx = nullptr;
  decltype(&::cuCtxGetCurrent) CtxGetCurrent = nullptr;
  decltype(&::cuCtxPushCurrent) CtxPushCurrent = nullptr;
  decltype(&::cuCtxPopCurrent) CtxPopCurrent = nullptr;
  decltype(&::cuCtxGetDevice) CtxGetDevice = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuMemsetD8Async) MemsetD8Async = nullptr;
  decltype(&::cuMemcpyHtoDAsync) MemcpyHtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoHAsync) MemcpyDtoHAsync = nullptr;
  decltype(&::cuMemcpyDtoDAsync) MemcpyDtoDAsync = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
};

// *out = symbol `symbol` of dlopen handle `handle`; false with *error
// ("<library> lacks <symbol>") when it has none.
template <typename Fn>
bool ResolveSymbol(void* handle, const char* library, const char* symbol, Fn* out,
                   std::string* error) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out != nullptr) return true;
  *error = std::string(library) + " lacks " + symbol;
  return false;
}

// Resolves every entry point from `handle` (a dlopen handle of libcuda.so.1).
// A null handle gives kDriverNotFound (plus `why`, when given, after a colon);
// a missing symbol names it.  Returns false with *error set on failure.
bool LoadCudaDriver(void* handle, const char* why, CudaDriver* driver, std::string* error);

// "<what>: <driver's name and text of rc>".
std::string DriverErrorText(const CudaDriver& driver, CUresult rc, const std::string& what);

// Makes `context` current on this thread for the scope when it is not (the
// stream's context: TF's executor thread usually has it current already).
class ScopedContext {
 public:
  ScopedContext(const CudaDriver& driver, CUcontext context);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const CudaDriver& driver_;
  bool pushed_ = false;
};

}  // namespace cuda
}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CUDA_CUDA_DRIVER_H_
