// A stand-in for libcuda.so.1 with the entry points cuda_driver.h resolves:
// each records its call in a log the check reads back (FakeCudaLog), so
// cuda_backend_check.cc drives the real backend code on a machine without
// a GPU.  Contexts, modules and functions are tagged fake pointers.
#include <cuda.h>

#include <cstdint>
#include <string>

namespace {

std::string& Log() {
  static std::string log;
  return log;
}

void Record(const std::string& call) { Log() += call + ";"; }

CUcontext FakeContext() { return reinterpret_cast<CUcontext>(uintptr_t{0x1000}); }

}  // namespace

extern "C" {

const char* FakeCudaLog() { return Log().c_str(); }
void FakeCudaClearLog() { Log().clear(); }

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_INVALID_VALUE ? "invalid argument" : "fake error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCtx(CUstream, CUcontext* ctx) {
  *ctx = FakeContext();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = FakeContext();  // current already: the backend pushes nothing
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext) {
  Record("push");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext*) {
  Record("pop");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  *device = 3;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize() {
  Record("ctx_sync");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  Record("attr");
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 50 << 20; break;
    default: *value = device * 1000 + static_cast<int>(attribute); break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  Record(std::string("load:") + static_cast<const char*>(image));
  *module = reinterpret_cast<CUmodule>(uintptr_t{0x2000});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  if (std::string(name) == "missing") return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(uintptr_t{0x3000} + std::string(name).size());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule) {
  Record("unload");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction, CUfunction_attribute, int value) {
  Record("smem_optin:" + std::to_string(value));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned smem, CUstream, void**,
                                void** extra) {
  std::string args = "none";
  if (extra != nullptr && extra[0] == CU_LAUNCH_PARAM_BUFFER_POINTER &&
      extra[2] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[4] == CU_LAUNCH_PARAM_END) {
    const size_t size = *static_cast<size_t*>(extra[3]);
    args = std::string(static_cast<const char*>(extra[1]), size);
  }
  Record("launch:f" + std::to_string(reinterpret_cast<uintptr_t>(f) - 0x3000) + ":" +
         std::to_string(gx) + "," + std::to_string(gy) + "," + std::to_string(gz) + "/" +
         std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) + ":" +
         std::to_string(smem) + ":" + args);
  return gx > 65535 && gy > 1 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char byte, size_t n, CUstream) {
  Record("memset:" + std::to_string(dst) + ":" + std::to_string(byte) + ":" + std::to_string(n));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr, const void*, size_t n, CUstream) {
  Record("h2d:" + std::to_string(n));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void*, CUdeviceptr, size_t n, CUstream) {
  Record("d2h:" + std::to_string(n));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr, CUdeviceptr, size_t n, CUstream) {
  Record("d2d:" + std::to_string(n));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream) {
  Record("sync");
  return CUDA_SUCCESS;
}

}  // extern "C"
