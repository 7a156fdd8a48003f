// The CUDA side of DiscRuntime (disc_abi.h) without TensorFlow: device code
// loaded per CUcontext, kernel launches, copies and fills on a caller's
// stream, device facts, and GEMMs through cuBLASLt.  Its inputs are dlopen
// handles (driver, cuBLASLt), a CUstream per call and an allocator callback,
// so the op library (runtime/cuda/gpu_runtime.h) and a standalone harness
// without TF run this same code.
#ifndef TF_DISC_RUNTIME_CUDA_CUDA_BACKEND_H_
#define TF_DISC_RUNTIME_CUDA_CUDA_BACKEND_H_

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tf_disc/runtime/cuda/cublaslt_gemm.h"
#include "tf_disc/runtime/cuda/cuda_driver.h"
#include "tf_disc/runtime/disc_abi.h"

namespace tf_disc {
namespace cuda {

// A DISC_DEVICE_CUDA library's device code (disc_cuda_image and its kernel
// table); the image stays valid while the library is loaded.
struct DeviceImage {
  const void* data = nullptr;
  size_t size = 0;
  std::vector<std::string> kernels;  // rt->launch's kernel indices
};

// Reads the image and kernel table a CUDA library exports (disc_abi.h) from
// its dlopen handle.  False with *error when one is missing or empty.
bool ReadDeviceImage(void* library, DeviceImage* image, std::string* error);

// One library's modules, one per CUcontext, each loaded on first use and
// unloaded (after the context's queued work) when the table goes.
class ModuleTable {
 public:
  explicit ModuleTable(DeviceImage image) : image_(std::move(image)) {}
  ~ModuleTable();
  ModuleTable(const ModuleTable&) = delete;
  ModuleTable& operator=(const ModuleTable&) = delete;

  int32_t kernel_count() const { return static_cast<int32_t>(image_.kernels.size()); }

  // Loads the module into `context` unless it is there: false with *error
  // when the image has no code for the context's GPU or lacks a kernel, so
  // a caller can run something else before queuing any work.
  bool Load(const CudaDriver& driver, CUcontext context, std::string* error);

  // Kernel `kernel` in `context`, able to take `smem` bytes of dynamic
  // shared memory (the opt-in attribute is raised once above 48 KiB).
  bool Function(const CudaDriver& driver, CUcontext context, int32_t kernel, uint32_t smem,
                CUfunction* out, std::string* error);

 private:
  struct Loaded {
    CUmodule module = nullptr;
    std::vector<CUfunction> functions;
    std::vector<uint32_t> smem_limit;  // dynamic smem each function may take
  };
  // The module of `context`, loaded first when needed; null with *error.
  // mu_ held.
  Loaded* LoadLocked(const CudaDriver& driver, CUcontext context, std::string* error);
  const DeviceImage image_;
  const CudaDriver* driver_ = nullptr;  // the one that loaded the modules
  std::mutex mu_;
  std::map<CUcontext, Loaded> loaded_;
};

// Where allocations for a call come from (device memory, freed by the
// caller's runtime after the call; stream order makes that safe).
using DeviceAllocator = WorkspaceAllocator;

// The process's CUDA state: the driver, cuBLASLt (optional: GEMMs then
// fail), device facts cached per device.  Thread-safe.
class CudaBackend {
 public:
  // driver / cublaslt: dlopen handles (null when the library was not found;
  // *_why says why, for the error).  Null with *error ("CUDA driver not
  // found...") when the driver is unusable.
  static std::unique_ptr<CudaBackend> Create(void* driver, const char* driver_why,
                                             void* cublaslt, const char* cublaslt_why,
                                             std::string* error);

  const CudaDriver& driver() const { return driver_; }

  // The context and device of a stream.
  bool StreamContext(CUstream stream, CUcontext* context, CUdevice* device,
                     std::string* error) const;

  bool DeviceInfo(CUdevice device, DiscDeviceInfo* out, std::string* error);

  // Queues kernel `kernel` of `modules` on `stream`; an empty grid (any
  // dimension 0) launches nothing.  args: the kernel's one by-value
  // parameter, args_size bytes.
  bool Launch(ModuleTable* modules, CUstream stream, int32_t kernel, const DiscLaunchDims& dims,
              const void* args, size_t args_size, std::string* error) const;

  bool Memset(CUstream stream, void* dst, int32_t byte, size_t bytes, std::string* error) const;
  bool Memcpy(CUstream stream, void* dst, const void* src, size_t bytes, int32_t kind,
              std::string* error) const;
  bool Sync(CUstream stream, std::string* error) const;

  // rt->gemm: allow_tf32 as PlanLtGemm; scratch from `allocate`.
  bool Gemm(const DiscGemmArgs& args, bool allow_tf32, CUstream stream,
            const DeviceAllocator& allocate, std::string* error);

 private:
  CudaBackend() = default;

  CudaDriver driver_;
  CublasLtApi cublaslt_;
  std::string cublaslt_error_;  // non-empty: no cuBLASLt
  std::unique_ptr<LtGemmRunner> gemm_;
  std::mutex mu_;
  std::map<CUdevice, DiscDeviceInfo> device_info_;
};

}  // namespace cuda
}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CUDA_CUDA_BACKEND_H_
