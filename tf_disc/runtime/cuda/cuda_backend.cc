#include "tf_disc/runtime/cuda/cuda_backend.h"

#include <dlfcn.h>

namespace tf_disc {
namespace cuda {

namespace {

// Dynamic shared memory every kernel may take without opting in.
constexpr uint32_t kDefaultSmemLimit = 48 * 1024;

bool DriverCheck(const CudaDriver& d, CUresult rc, const char* what, std::string* error) {
  if (rc == CUDA_SUCCESS) return true;
  *error = DriverErrorText(d, rc, what);
  return false;
}

CUdeviceptr DevicePtr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

}  // namespace

bool ReadDeviceImage(void* library, DeviceImage* image, std::string* error) {
  using ImageFn = const void* (*)(size_t*);
  using CountFn = int32_t (*)();
  using NameFn = const char* (*)(int32_t);
  auto image_fn = reinterpret_cast<ImageFn>(dlsym(library, "disc_cuda_image"));
  auto count_fn = reinterpret_cast<CountFn>(dlsym(library, "disc_cuda_kernel_count"));
  auto name_fn = reinterpret_cast<NameFn>(dlsym(library, "disc_cuda_kernel_name"));
  if (image_fn == nullptr || count_fn == nullptr || name_fn == nullptr) {
    *error = "CUDA library lacks disc_cuda_image, disc_cuda_kernel_count or disc_cuda_kernel_name";
    return false;
  }
  *image = DeviceImage();
  image->data = image_fn(&image->size);
  const int32_t count = count_fn();
  if (count < 0 || (count > 0 && (image->data == nullptr || image->size == 0))) {
    *error = "CUDA library has a bad kernel table or an empty image";
    return false;
  }
  for (int32_t i = 0; i < count; ++i) {
    const char* name = name_fn(i);
    if (name == nullptr || *name == '\0') {
      *error = "CUDA library has no name for kernel " + std::to_string(i);
      return false;
    }
    image->kernels.emplace_back(name);
  }
  return true;
}

ModuleTable::~ModuleTable() {
  if (driver_ == nullptr) return;
  for (auto& [context, loaded] : loaded_) {
    if (loaded.module == nullptr) continue;
    // Work queued with these functions may still run: wait for it first.
    ScopedContext scope(*driver_, context);
    driver_->CtxSynchronize();
    driver_->ModuleUnload(loaded.module);
  }
}

ModuleTable::Loaded* ModuleTable::LoadLocked(const CudaDriver& driver, CUcontext context,
                                             std::string* error) {
  auto it = loaded_.find(context);
  if (it != loaded_.end()) return &it->second;
  Loaded l;
  // A library without kernels (all its work on the host) has no image.
  if (image_.kernels.empty()) return &loaded_.emplace(context, std::move(l)).first->second;
  ScopedContext scope(driver, context);
  if (!DriverCheck(driver, driver.ModuleLoadData(&l.module, image_.data),
                   "cuModuleLoadData (is the image built for this GPU?)", error)) {
    return nullptr;
  }
  for (const std::string& name : image_.kernels) {
    CUfunction f = nullptr;
    CUresult rc = driver.ModuleGetFunction(&f, l.module, name.c_str());
    if (rc != CUDA_SUCCESS) {
      *error = DriverErrorText(driver, rc, "cuModuleGetFunction " + name);
      driver.ModuleUnload(l.module);
      return nullptr;
    }
    l.functions.push_back(f);
  }
  l.smem_limit.assign(l.functions.size(), kDefaultSmemLimit);
  driver_ = &driver;
  return &loaded_.emplace(context, std::move(l)).first->second;
}

bool ModuleTable::Load(const CudaDriver& driver, CUcontext context, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoadLocked(driver, context, error) != nullptr;
}

bool ModuleTable::Function(const CudaDriver& driver, CUcontext context, int32_t kernel,
                           uint32_t smem, CUfunction* out, std::string* error) {
  if (kernel < 0 || kernel >= kernel_count()) {
    *error = "launch of kernel " + std::to_string(kernel) + " outside the library's table of " +
             std::to_string(kernel_count());
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  Loaded* loaded = LoadLocked(driver, context, error);
  if (loaded == nullptr) return false;
  Loaded& l = *loaded;
  if (smem > l.smem_limit[kernel]) {
    if (!DriverCheck(driver,
                     driver.FuncSetAttribute(l.functions[kernel],
                                             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(smem)),
                     "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", error)) {
      return false;
    }
    l.smem_limit[kernel] = smem;
  }
  *out = l.functions[kernel];
  return true;
}

std::unique_ptr<CudaBackend> CudaBackend::Create(void* driver, const char* driver_why,
                                                 void* cublaslt, const char* cublaslt_why,
                                                 std::string* error) {
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  if (!LoadCudaDriver(driver, driver_why, &b->driver_, error)) return nullptr;
  if (LoadCublasLt(cublaslt, cublaslt_why, &b->cublaslt_, &b->cublaslt_error_)) {
    b->gemm_ = std::make_unique<LtGemmRunner>(b->cublaslt_);
  }
  return b;
}

bool CudaBackend::StreamContext(CUstream stream, CUcontext* context, CUdevice* device,
                                std::string* error) const {
  if (!DriverCheck(driver_, driver_.StreamGetCtx(stream, context), "cuStreamGetCtx", error)) {
    return false;
  }
  ScopedContext scope(driver_, *context);
  return DriverCheck(driver_, driver_.CtxGetDevice(device), "cuCtxGetDevice", error);
}

bool CudaBackend::DeviceInfo(CUdevice device, DiscDeviceInfo* out, std::string* error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = device_info_.find(device);
    if (it != device_info_.end()) {
      *out = it->second;
      return true;
    }
  }
  DiscDeviceInfo info{};
  int l2 = 0;
  const struct {
    int* value;
    CUdevice_attribute attribute;
  } queries[] = {
      {&info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&info.max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {&info.smem_per_block_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
  };
  for (const auto& q : queries) {
    if (!DriverCheck(driver_, driver_.DeviceGetAttribute(q.value, q.attribute, device),
                     "cuDeviceGetAttribute", error)) {
      return false;
    }
  }
  info.l2_bytes = l2;
  std::lock_guard<std::mutex> lock(mu_);
  device_info_[device] = info;
  *out = info;
  return true;
}

bool CudaBackend::Launch(ModuleTable* modules, CUstream stream, int32_t kernel,
                         const DiscLaunchDims& d, const void* args, size_t args_size,
                         std::string* error) const {
  if (d.grid[0] == 0 || d.grid[1] == 0 || d.grid[2] == 0) return true;  // nothing to run
  CUcontext context;
  if (!DriverCheck(driver_, driver_.StreamGetCtx(stream, &context), "cuStreamGetCtx", error)) {
    return false;
  }
  CUfunction f;
  if (!modules->Function(driver_, context, kernel, d.smem, &f, error)) return false;
  size_t size = args_size;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(args),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ScopedContext scope(driver_, context);
  return DriverCheck(driver_,
                     driver_.LaunchKernel(f, d.grid[0], d.grid[1], d.grid[2], d.block[0],
                                          d.block[1], d.block[2], d.smem, stream, nullptr,
                                          args_size > 0 ? extra : nullptr),
                     "cuLaunchKernel", error);
}

bool CudaBackend::Memset(CUstream stream, void* dst, int32_t byte, size_t bytes,
                         std::string* error) const {
  if (bytes == 0) return true;
  return DriverCheck(driver_,
                     driver_.MemsetD8Async(DevicePtr(dst), static_cast<unsigned char>(byte),
                                           bytes, stream),
                     "cuMemsetD8Async", error);
}

bool CudaBackend::Memcpy(CUstream stream, void* dst, const void* src, size_t bytes,
                         int32_t kind, std::string* error) const {
  if (bytes == 0) return true;
  switch (kind) {
    case DISC_COPY_HOST_TO_DEVICE:
      return DriverCheck(driver_, driver_.MemcpyHtoDAsync(DevicePtr(dst), src, bytes, stream),
                         "cuMemcpyHtoDAsync", error);
    case DISC_COPY_DEVICE_TO_HOST:
      return DriverCheck(driver_, driver_.MemcpyDtoHAsync(dst, DevicePtr(src), bytes, stream),
                         "cuMemcpyDtoHAsync", error);
    case DISC_COPY_DEVICE_TO_DEVICE:
      return DriverCheck(driver_,
                         driver_.MemcpyDtoDAsync(DevicePtr(dst), DevicePtr(src), bytes, stream),
                         "cuMemcpyDtoDAsync", error);
    default:
      *error = "memcpy_async: unknown copy kind " + std::to_string(kind);
      return false;
  }
}

bool CudaBackend::Sync(CUstream stream, std::string* error) const {
  return DriverCheck(driver_, driver_.StreamSynchronize(stream), "cuStreamSynchronize", error);
}

bool CudaBackend::Gemm(const DiscGemmArgs& args, bool allow_tf32, CUstream stream,
                       const DeviceAllocator& allocate, std::string* error) {
  LtGemmPlan plan;
  if (!PlanLtGemm(args, allow_tf32, &plan, error)) return false;
  if (plan.zero_fill) {
    // k == 0: C is zeros, written as its longest contiguous runs: all of C
    // when dense, each batch entry when its rows are, else each row.
    const int64_t rows = static_cast<int64_t>(plan.n), cols = static_cast<int64_t>(plan.m);
    const bool dense_rows = plan.ldc == cols;
    const bool dense = dense_rows && (plan.batch == 1 || plan.stride_c == rows * cols);
    const int64_t run = dense ? plan.batch * rows * cols : dense_rows ? rows * cols : cols;
    const int64_t runs_per_batch = dense_rows ? 1 : rows;
    char* c = static_cast<char*>(plan.c);
    for (int32_t b = 0; b < (dense ? 1 : plan.batch); ++b) {
      for (int64_t r = 0; r < runs_per_batch; ++r) {
        const int64_t offset = b * plan.stride_c + r * plan.ldc;
        if (!Memset(stream, c + offset * plan.element_bytes, 0,
                    static_cast<size_t>(run) * plan.element_bytes, error)) {
          return false;
        }
      }
    }
    return true;
  }
  if (plan.empty) return true;
  if (gemm_ == nullptr) {
    *error = "gemm on CUDA: " + cublaslt_error_;
    return false;
  }
  CUcontext context;
  CUdevice device;
  if (!StreamContext(stream, &context, &device, error)) return false;
  ScopedContext scope(driver_, context);
  return gemm_->Run(plan, static_cast<int>(device), stream, allocate, error);
}

}  // namespace cuda
}  // namespace tf_disc
