// The device side of the GPU validation harness (issue 26): a DiscRuntime
// (runtime/disc_abi.h v13) without TensorFlow, on a CUstream the caller
// gives (run_cases.py passes torch's current stream), whose device work
// goes through runtime/cuda/cuda_backend.* -- the same launch, GEMM, memset,
// memcpy and device-info code the op library runs in TF -- and whose
// allocations go through a caller's callback (run_cases.py: torch's caching
// allocator).  Built by run.sh into libdisc_harness.so; a C API for ctypes.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "tf_disc/runtime/cuda/cuda_backend.h"
#include "tf_disc/runtime/disc_abi.h"

namespace {

using tf_disc::cuda::CudaBackend;
using tf_disc::cuda::DeviceImage;
using tf_disc::cuda::ModuleTable;

// Allocation callback: output `index` (>= 0; rank and dims given, the
// caller knows its dtype and memory kind) or scratch (index -1, `bytes`).
// Returns the data pointer, or null on failure.
using HarnessAlloc = void* (*)(void* user, int32_t index, int32_t rank, const int64_t* dims,
                               size_t bytes);

void CopyError(const std::string& text, char* error, size_t error_size) {
  if (error == nullptr || error_size == 0) return;
  std::snprintf(error, error_size, "%s", text.c_str());
}

// One disc_entry call's runtime: ctx of every DiscRuntime function.
struct Call {
  DiscRuntime rt;
  CudaBackend* backend;
  ModuleTable* modules;
  CUstream stream;
  CUdevice device;
  bool allow_tf32;
  HarnessAlloc alloc;
  void* user;
  // Scratch comes from this caller-owned device block first (bump
  // allocation, reset per call: work on one stream runs in order, so the
  // next call may reuse it), the callback only when it is full.  A Python
  // callback per temp would cost microseconds that TF's allocator does not.
  char* arena = nullptr;
  size_t arena_bytes = 0, arena_used = 0;
  std::mutex mu;        // generated host code is single-threaded; cheap insurance
  int32_t error_code = 0;
  std::string error;

  int32_t Fail(int32_t code, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu);
    if (error_code == 0) {  // the first error is the one that explains the rest
      error_code = code;
      error = message;
    }
    return 1;
  }
  int32_t Internal(bool ok, const std::string& message) {
    return ok ? 0 : Fail(DISC_ERROR_INTERNAL, message);
  }
};

Call* Self(void* ctx) { return static_cast<Call*>(ctx); }

void* AllocOutput(void* ctx, int32_t index, int32_t rank, const int64_t* dims) {
  Call* c = Self(ctx);
  void* p = c->alloc(c->user, index, rank, dims, 0);
  if (p == nullptr) {
    int64_t n = 1;
    for (int32_t i = 0; i < rank; ++i) n *= dims[i];
    // Zero-element outputs may have no storage (disc_abi.h).
    if (n != 0) c->Fail(DISC_ERROR_RESOURCE_EXHAUSTED, "alloc_output " + std::to_string(index));
  }
  return p;
}

// Arena and scratch alignment (cuBLASLt's and vector loads' best case).
constexpr size_t kTempAlignment = 256;

void* AllocTemp(void* ctx, size_t bytes) {
  Call* c = Self(ctx);
  const uintptr_t base = reinterpret_cast<uintptr_t>(c->arena);
  const size_t at = ((base + c->arena_used + kTempAlignment - 1) & ~(kTempAlignment - 1)) - base;
  if (c->arena != nullptr && at <= c->arena_bytes && bytes <= c->arena_bytes - at) {
    c->arena_used = at + bytes;
    return c->arena + at;
  }
  void* p = c->alloc(c->user, -1, 0, nullptr, bytes);
  if (p == nullptr && bytes > 0) {
    c->Fail(DISC_ERROR_RESOURCE_EXHAUSTED, "alloc_temp of " + std::to_string(bytes) + " bytes");
  }
  return p;
}

// Scratch is the caller's until the call ends (stream order keeps reuse safe).
void FreeTemp(void*, void*) {}

void ParallelFor(void*, int64_t n, int64_t, DiscParallelFn fn, void* closure) {
  if (n > 0) fn(closure, 0, n);
}

void SetError(void* ctx, int32_t code, const char* message) {
  Self(ctx)->Fail(code, message != nullptr ? message : "");
}

int32_t Gemm(void* ctx, const DiscGemmArgs* args) {
  Call* c = Self(ctx);
  if (args == nullptr) return c->Fail(DISC_ERROR_INTERNAL, "gemm: null arguments");
  std::string error;
  auto scratch = [ctx](size_t bytes) { return AllocTemp(ctx, bytes); };
  return c->Internal(c->backend->Gemm(*args, c->allow_tf32, c->stream, scratch, &error), error);
}

int32_t GemmMulti(void* ctx, const DiscGemmMultiArgs*) {
  return Self(ctx)->Fail(DISC_ERROR_UNIMPLEMENTED, "gemm_multi on CUDA");
}

int32_t Launch(void* ctx, int32_t kernel, const DiscLaunchDims* dims, const void* args,
               size_t args_size) {
  Call* c = Self(ctx);
  if (dims == nullptr || (args == nullptr && args_size > 0)) {
    return c->Fail(DISC_ERROR_INTERNAL, "launch: null arguments");
  }
  std::string error;
  return c->Internal(
      c->backend->Launch(c->modules, c->stream, kernel, *dims, args, args_size, &error), error);
}

int32_t DeviceInfo(void* ctx, DiscDeviceInfo* out) {
  Call* c = Self(ctx);
  if (out == nullptr) return c->Fail(DISC_ERROR_INTERNAL, "device_info: null output");
  std::string error;
  return c->Internal(c->backend->DeviceInfo(c->device, out, &error), error);
}

int32_t MemsetAsync(void* ctx, void* dst, int32_t byte, size_t bytes) {
  Call* c = Self(ctx);
  std::string error;
  return c->Internal(c->backend->Memset(c->stream, dst, byte, bytes, &error), error);
}

int32_t MemcpyAsync(void* ctx, void* dst, const void* src, size_t bytes, int32_t kind) {
  Call* c = Self(ctx);
  std::string error;
  return c->Internal(c->backend->Memcpy(c->stream, dst, src, bytes, kind, &error), error);
}

int32_t Sync(void* ctx) {
  Call* c = Self(ctx);
  std::string error;
  return c->Internal(c->backend->Sync(c->stream, &error), error);
}

void* OpenOrNull(const char* path, std::string* why) {
  if (path == nullptr || *path == '\0') {
    *why = "no path given";
    return nullptr;
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) *why = dlerror();
  return handle;
}

}  // namespace

extern "C" {

// The process's backend from the driver (e.g. "libcuda.so.1") and cuBLASLt
// (a path; empty: GEMMs fail with the reason).  Null with *error.
__attribute__((visibility("default"))) void* disc_harness_create(const char* driver_path,
                                                                  const char* cublaslt_path,
                                                                  char* error, size_t error_size) {
  std::string driver_why, cublaslt_why, text;
  void* driver = OpenOrNull(driver_path, &driver_why);
  void* cublaslt = OpenOrNull(cublaslt_path, &cublaslt_why);
  std::unique_ptr<CudaBackend> backend = CudaBackend::Create(
      driver, driver_why.c_str(), cublaslt, cublaslt_why.c_str(), &text);
  if (backend == nullptr) CopyError(text, error, error_size);
  return backend.release();
}

// The device code of a generated library (its dlopen handle: ctypes'
// CDLL._handle), loaded per context on first launch.  Null with *error.
__attribute__((visibility("default"))) void* disc_harness_load(void* library, char* error,
                                                                size_t error_size) {
  DeviceImage image;
  std::string text;
  if (!tf_disc::cuda::ReadDeviceImage(library, &image, &text)) {
    CopyError(text, error, error_size);
    return nullptr;
  }
  return new ModuleTable(std::move(image));
}

// Unloads a library's modules after the work queued with them.
__attribute__((visibility("default"))) void disc_harness_unload(void* modules) {
  delete static_cast<ModuleTable*>(modules);
}

// The facts of the device `stream` runs on; 0, or non-zero with *error.
__attribute__((visibility("default"))) int32_t disc_harness_device_info(
    void* backend, void* stream, DiscDeviceInfo* out, char* error, size_t error_size) {
  auto* b = static_cast<CudaBackend*>(backend);
  CUcontext context;
  CUdevice device;
  std::string text;
  if (b->StreamContext(static_cast<CUstream>(stream), &context, &device, &text) &&
      b->DeviceInfo(device, out, &text)) {
    return 0;
  }
  CopyError(text, error, error_size);
  return 1;
}

// Runs `entry` (a library's disc_entry) on `inputs`, queued on `stream`:
// returns 0, or the DISC_ERROR_* code with *error.  Outputs come from
// alloc(index >= 0), scratch from `arena` (arena_bytes of device memory, may
// be null) and then alloc(-1); the caller syncs the stream before reading
// the outputs.
__attribute__((visibility("default"))) int32_t disc_harness_call(
    void* backend, void* modules, void* stream, void* entry, const DiscBuffer* inputs,
    int32_t num_inputs, int32_t allow_tf32, HarnessAlloc alloc, void* user, void* arena,
    size_t arena_bytes, char* error, size_t error_size) {
  Call c;
  c.backend = static_cast<CudaBackend*>(backend);
  c.modules = static_cast<ModuleTable*>(modules);
  c.stream = static_cast<CUstream>(stream);
  c.allow_tf32 = allow_tf32 != 0;
  c.alloc = alloc;
  c.user = user;
  c.arena = static_cast<char*>(arena);
  c.arena_bytes = arena != nullptr ? arena_bytes : 0;
  CUcontext context;
  std::string text;
  if (!c.backend->StreamContext(c.stream, &context, &c.device, &text)) {
    CopyError(text, error, error_size);
    return DISC_ERROR_INTERNAL;
  }
  std::memset(&c.rt, 0, sizeof(c.rt));
  c.rt.ctx = &c;
  c.rt.device = DISC_DEVICE_CUDA;
  c.rt.stream = c.stream;
  c.rt.alloc_output = AllocOutput;
  c.rt.alloc_temp = AllocTemp;
  c.rt.free_temp = FreeTemp;
  c.rt.parallel_for = ParallelFor;
  c.rt.set_error = SetError;
  c.rt.gemm = Gemm;
  c.rt.gemm_multi = GemmMulti;
  c.rt.window = nullptr;  // NULL on DISC_DEVICE_CUDA (disc_abi.h)
  c.rt.launch = Launch;
  c.rt.device_info = DeviceInfo;
  c.rt.memset_async = MemsetAsync;
  c.rt.memcpy_async = MemcpyAsync;
  c.rt.sync = Sync;
  const int32_t rc = reinterpret_cast<DiscEntryFn>(entry)(&c.rt, inputs, num_inputs);
  if (rc == 0 && c.error_code == 0) return 0;
  CopyError(c.error.empty() ? "disc_entry failed without set_error" : c.error, error,
            error_size);
  return c.error_code != 0 ? c.error_code : DISC_ERROR_INTERNAL;
}

// The ABI this harness implements (run_cases.py checks each library's).
__attribute__((visibility("default"))) int32_t disc_harness_abi_version(void) {
  return DISC_ABI_VERSION;
}

}  // extern "C"
