// Checks of the TF-free CUDA backend (tf_disc/runtime/cuda) on a machine
// without a GPU: the driver-not-found error, the row-major to cuBLASLt
// translation of rt->gemm (PlanLtGemm), and module loading, launches,
// copies and device facts against fake_cuda_driver.cc (argv[1], a shared
// library standing in for libcuda.so.1), and cuBLASLt matmuls against
// fake_cublaslt.cc (argv[2], standing in for libcublasLt).  test_cuda_backend.py builds and
// runs it.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tests/cpp_layer/expect.h"
#include "tf_disc/runtime/cuda/cublaslt_gemm.h"
#include "tf_disc/runtime/cuda/cuda_backend.h"

using check::Expect;
using tf_disc::cuda::CudaBackend;
using tf_disc::cuda::LtGemmPlan;
using tf_disc::cuda::PlanLtGemm;

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

void NoDriver() {
  std::string error;
  auto backend = CudaBackend::Create(nullptr, "libcuda.so.1: cannot open shared object file",
                                     nullptr, "", &error);
  Expect(backend == nullptr, "no backend without a driver");
  Expect(error == "CUDA driver not found: libcuda.so.1: cannot open shared object file",
         "driver-not-found error: " + error);
  // A library that is no CUDA driver (this program): the first missing entry.
  void* self = dlopen(nullptr, RTLD_NOW);
  backend = CudaBackend::Create(self, "", nullptr, "", &error);
  Expect(backend == nullptr && error == "the CUDA driver lacks cuGetErrorString",
         "not a driver: " + error);
}

DiscGemmArgs RowMajor(int64_t m, int64_t n, int64_t k) {
  DiscGemmArgs g{};
  g.dtype = DISC_DTYPE_FLOAT;
  g.batch = 1;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = reinterpret_cast<const void*>(uintptr_t{0xA00});
  g.lda = k;
  g.b = reinterpret_cast<const void*>(uintptr_t{0xB00});
  g.ldb = n;
  g.c = reinterpret_cast<void*>(uintptr_t{0xC00});
  g.ldc = n;
  return g;
}

void GemmPlans() {
  std::string error;
  LtGemmPlan p;
  // C (2x3) = A (2x5) B (5x3): cuBLASLt computes C^T (3x2) = B^T A^T with
  // its A = our B (column-major 3x5, ld 3) and its B = our A (5x2, ld 5).
  DiscGemmArgs g = RowMajor(2, 3, 5);
  Expect(PlanLtGemm(g, /*allow_tf32=*/false, &p, &error), "plain plan: " + error);
  Expect(p.m == 3 && p.n == 2 && p.k == 5, "dims swapped");
  Expect(p.a.data == g.b && p.a.rows == 3 && p.a.cols == 5 && p.a.ld == 3, "A is our B");
  Expect(p.b.data == g.a && p.b.rows == 5 && p.b.cols == 2 && p.b.ld == 5, "B is our A");
  Expect(p.trans_a == CUBLAS_OP_N && p.trans_b == CUBLAS_OP_N, "no transposes");
  Expect(p.c == g.c && p.ldc == 3, "C^T has ld n");
  Expect(p.compute == CUBLAS_COMPUTE_32F && p.data_type == CUDA_R_32F, "fp32 compute");
  Expect(p.epilogue == CUBLASLT_EPILOGUE_DEFAULT && !p.empty && !p.zero_fill, "plain epilogue");
  Expect(PlanLtGemm(g, /*allow_tf32=*/true, &p, &error) &&
             p.compute == CUBLAS_COMPUTE_32F_FAST_TF32,
         "TF32 when allowed");
  g.dtype = DISC_DTYPE_FLOAT | DISC_GEMM_FAST_BF16;
  Expect(PlanLtGemm(g, true, &p, &error) && p.compute == CUBLAS_COMPUTE_32F_FAST_16BF,
         "fast_math bf16");

  // Transposed operands keep their transposes on the swapped side: A^T
  // stored 5x2 (lda 2) is cuBLASLt's B, op T, stored column-major 2x5.
  g = RowMajor(2, 3, 5);
  g.trans_a = 1;
  g.lda = 2;
  g.trans_b = 1;
  g.ldb = 5;
  Expect(PlanLtGemm(g, false, &p, &error), "transposed plan: " + error);
  Expect(p.trans_a == CUBLAS_OP_T && p.trans_b == CUBLAS_OP_T, "transposes kept");
  Expect(p.a.rows == 5 && p.a.cols == 3 && p.a.ld == 5, "B^T stored n x k");
  Expect(p.b.rows == 2 && p.b.cols == 5 && p.b.ld == 2, "A^T stored k x m");

  // Batches: strides follow their operands (0 broadcasts).
  g = RowMajor(2, 3, 5);
  g.batch = 4;
  g.stride_a = 10;
  g.stride_b = 0;
  g.stride_c = 6;
  Expect(PlanLtGemm(g, false, &p, &error) && p.batch == 4 && p.a.batch_stride == 0 &&
             p.b.batch_stride == 10 && p.stride_c == 6,
         "batch strides");

  // Epilogues: bias (an n-vector, per row of C^T) and activations.
  g = RowMajor(2, 3, 5);
  const float bias[3] = {1, 2, 3};
  g.bias = bias;
  struct {
    int32_t activation;
    bool bias;
    cublasLtEpilogue_t expected;
  } epilogues[] = {
      {DISC_ACT_NONE, true, CUBLASLT_EPILOGUE_BIAS},
      {DISC_ACT_RELU, true, CUBLASLT_EPILOGUE_RELU_BIAS},
      {DISC_ACT_GELU_TANH, true, CUBLASLT_EPILOGUE_GELU_BIAS},
      {DISC_ACT_RELU, false, CUBLASLT_EPILOGUE_RELU},
      {DISC_ACT_GELU_TANH, false, CUBLASLT_EPILOGUE_GELU},
  };
  for (const auto& e : epilogues) {
    g.bias = e.bias ? bias : nullptr;
    g.activation = e.activation;
    Expect(PlanLtGemm(g, false, &p, &error) && p.epilogue == e.expected &&
               p.bias == g.bias,
           "epilogue for activation " + std::to_string(e.activation));
  }
  g.activation = DISC_ACT_RELU6;
  Expect(!PlanLtGemm(g, false, &p, &error) &&
             error == "gemm on CUDA: no cuBLASLt epilogue for activation 2",
         "RELU6 refused: " + error);

  // Half and bf16 scale in fp32; double in fp64; other dtypes refused.
  g = RowMajor(2, 3, 5);
  g.dtype = DISC_DTYPE_HALF;
  Expect(PlanLtGemm(g, true, &p, &error) && p.data_type == CUDA_R_16F &&
             p.compute == CUBLAS_COMPUTE_32F && p.scale_type == CUDA_R_32F &&
             p.element_bytes == 2,
         "half");
  g.dtype = DISC_DTYPE_BFLOAT16;
  Expect(PlanLtGemm(g, true, &p, &error) && p.data_type == CUDA_R_16BF, "bf16");
  g.dtype = DISC_DTYPE_DOUBLE;
  Expect(PlanLtGemm(g, true, &p, &error) && p.compute == CUBLAS_COMPUTE_64F &&
             p.scale_type == CUDA_R_64F,
         "double");
  g.dtype = DISC_DTYPE_HALF | DISC_GEMM_FAST_BF16;
  Expect(!PlanLtGemm(g, true, &p, &error), "fast bf16 only on float32");
  g.dtype = 3;  // DT_INT32
  Expect(!PlanLtGemm(g, true, &p, &error) && error == "gemm on CUDA: unsupported dtype 3",
         "int32 refused: " + error);

  // Host epilogue callbacks cannot run on a GPU; bad leading dimensions.
  g = RowMajor(2, 3, 5);
  g.epilogue = [](void*, int64_t, int64_t) {};
  Expect(!PlanLtGemm(g, true, &p, &error), "host epilogue refused");
  g = RowMajor(2, 3, 5);
  g.ldb = 2;
  Expect(!PlanLtGemm(g, true, &p, &error), "ldb below n refused");

  // Empty products and k == 0 (zeros).
  g = RowMajor(0, 3, 5);
  Expect(PlanLtGemm(g, true, &p, &error) && p.empty, "m == 0 is empty");
  g = RowMajor(2, 3, 0);
  g.lda = 0;
  Expect(PlanLtGemm(g, true, &p, &error) && p.zero_fill, "k == 0 writes zeros");
  g.bias = bias;
  Expect(!PlanLtGemm(g, true, &p, &error), "k == 0 with a bias refused");
}

void FakeDriver(const char* path) {
  void* driver = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  Expect(driver != nullptr, std::string("fake driver loads: ") + (driver ? "" : dlerror()));
  if (driver == nullptr) return;
  auto log = reinterpret_cast<const char* (*)()>(dlsym(driver, "FakeCudaLog"));
  auto clear = reinterpret_cast<void (*)()>(dlsym(driver, "FakeCudaClearLog"));
  std::string error;
  auto backend = CudaBackend::Create(driver, "", nullptr, "not installed", &error);
  Expect(backend != nullptr, "backend on the fake driver: " + error);
  if (backend == nullptr) return;
  CUstream stream = reinterpret_cast<CUstream>(uintptr_t{0x50});

  // Device facts, read once per device.
  DiscDeviceInfo info;
  Expect(backend->DeviceInfo(3, &info, &error) && info.cc_major == 9 && info.cc_minor == 0 &&
             info.sm_count == 132 && info.l2_bytes == (50 << 20),
         "device info: " + error);
  Expect(backend->DeviceInfo(3, &info, &error) &&
             std::string(log()) == "attr;attr;attr;attr;attr;attr;",
         std::string("device info cached: ") + log());
  clear();

  // The module loads once per context, on its first launch; launches pass
  // the args struct by value; an empty grid launches nothing; above 48 KiB
  // of dynamic smem the function opts in once.
  tf_disc::cuda::ModuleTable* modules = new tf_disc::cuda::ModuleTable(
      tf_disc::cuda::DeviceImage{"fatbin", 7, {"k0", "kern1"}});
  DiscLaunchDims dims{{4, 1, 1}, {128, 1, 1}, 0};
  const char args[] = "ARGS";
  Expect(backend->Launch(modules, stream, 1, dims, args, 4, &error), "launch: " + error);
  Expect(backend->Launch(modules, stream, 0, dims, args, 4, &error), "second launch");
  DiscLaunchDims empty{{0, 1, 1}, {128, 1, 1}, 0};
  Expect(backend->Launch(modules, stream, 0, empty, args, 4, &error), "empty grid");
  DiscLaunchDims big{{1, 1, 1}, {32, 1, 1}, 100000};
  Expect(backend->Launch(modules, stream, 0, big, args, 4, &error) &&
             backend->Launch(modules, stream, 0, big, args, 4, &error),
         "big smem");
  Expect(std::string(log()) ==
             "load:fatbin;launch:f5:4,1,1/128,1,1:0:ARGS;launch:f2:4,1,1/128,1,1:0:ARGS;"
             "smem_optin:100000;launch:f2:1,1,1/32,1,1:100000:ARGS;"
             "launch:f2:1,1,1/32,1,1:100000:ARGS;",
         std::string("launch log: ") + log());
  Expect(!backend->Launch(modules, stream, 2, dims, args, 4, &error) &&
             error == "launch of kernel 2 outside the library's table of 2",
         "kernel index checked: " + error);
  DiscLaunchDims bad{{70000, 2, 1}, {1, 1, 1}, 0};
  Expect(!backend->Launch(modules, stream, 0, bad, args, 4, &error) &&
             error == "cuLaunchKernel: invalid argument (CUresult 1)",
         "driver errors named: " + error);
  clear();
  delete modules;  // waits for the context's work, then unloads
  Expect(std::string(log()) == "ctx_sync;unload;", std::string("unload: ") + log());

  // A kernel the image lacks fails the load, naming it, before any launch.
  CUcontext context = nullptr;
  CUdevice device = 0;
  Expect(backend->StreamContext(stream, &context, &device, &error) && device == 3,
         "stream context: " + error);
  tf_disc::cuda::ModuleTable missing(tf_disc::cuda::DeviceImage{"fatbin", 7, {"missing"}});
  Expect(!missing.Load(backend->driver(), context, &error) &&
             StartsWith(error, "cuModuleGetFunction missing: "),
         "missing kernel: " + error);
  Expect(!backend->Launch(&missing, stream, 0, dims, args, 4, &error) &&
             StartsWith(error, "cuModuleGetFunction missing: "),
         "missing kernel at launch: " + error);
  clear();
  // Load once per context; a launch then finds the module loaded.  A
  // library without kernels loads nothing.
  {
    tf_disc::cuda::ModuleTable table(tf_disc::cuda::DeviceImage{"fatbin", 7, {"k0"}});
    Expect(table.Load(backend->driver(), context, &error) &&
               table.Load(backend->driver(), context, &error) &&
               backend->Launch(&table, stream, 0, dims, args, 4, &error),
           "load: " + error);
    tf_disc::cuda::ModuleTable none(tf_disc::cuda::DeviceImage{nullptr, 0, {}});
    Expect(none.Load(backend->driver(), context, &error), "no kernels: " + error);
  }
  Expect(std::string(log()) == "load:fatbin;launch:f2:4,1,1/128,1,1:0:ARGS;ctx_sync;unload;",
         std::string("load once: ") + log());
  clear();

  // Copies by kind, fills, sync; zero bytes queue nothing.
  char host[8];
  void* device_ptr = reinterpret_cast<void*>(uintptr_t{0x7000});
  Expect(backend->Memcpy(stream, device_ptr, host, 8, DISC_COPY_HOST_TO_DEVICE, &error) &&
             backend->Memcpy(stream, host, device_ptr, 4, DISC_COPY_DEVICE_TO_HOST, &error) &&
             backend->Memcpy(stream, device_ptr, device_ptr, 2, DISC_COPY_DEVICE_TO_DEVICE,
                             &error) &&
             backend->Memcpy(stream, device_ptr, host, 0, DISC_COPY_HOST_TO_DEVICE, &error) &&
             backend->Memset(stream, device_ptr, 7, 16, &error) && backend->Sync(stream, &error),
         "copies: " + error);
  Expect(!backend->Memcpy(stream, device_ptr, host, 8, 9, &error), "unknown copy kind refused");
  Expect(std::string(log()) == "h2d:8;d2h:4;d2d:2;memset:28672:7:16;sync;",
         std::string("copy log: ") + log());

  // GEMMs without cuBLASLt fail with its reason; k == 0 writes zero rows.
  DiscGemmArgs g = RowMajor(2, 3, 5);
  auto no_alloc = [](size_t) -> void* { return nullptr; };
  Expect(!backend->Gemm(g, true, stream, no_alloc, &error) &&
             error == "gemm on CUDA: cuBLASLt not found: not installed",
         "no cuBLASLt: " + error);
  clear();
  g = RowMajor(2, 3, 0);
  g.lda = 0;
  g.ldc = 4;
  Expect(backend->Gemm(g, true, stream, no_alloc, &error), "k == 0: " + error);
  Expect(std::string(log()) == "memset:3072:0:12;memset:3088:0:12;",
         std::string("zero rows: ") + log());
  clear();
  // Dense rows: one fill per batch entry, or one for all of a dense C.
  g.ldc = 3;
  g.batch = 2;
  g.stride_c = 8;
  Expect(backend->Gemm(g, true, stream, no_alloc, &error) &&
             std::string(log()) == "memset:3072:0:24;memset:3104:0:24;",
         std::string("zero batch entries: ") + log());
  clear();
  g.stride_c = 6;
  Expect(backend->Gemm(g, true, stream, no_alloc, &error) &&
             std::string(log()) == "memset:3072:0:48;",
         std::string("zero C: ") + log());
}

// The log entries of one matmul descriptor: compute and scale types, then
// TRANSA, TRANSB, EPILOGUE and (with a bias) BIAS_POINTER.
std::string LtDesc(cublasComputeType_t compute, cublasLtEpilogue_t epilogue, const char* bias) {
  std::string s = "desc:" + std::to_string(compute) + "," + std::to_string(CUDA_R_32F) + ";";
  s += "desc." + std::to_string(CUBLASLT_MATMUL_DESC_TRANSA) + "=0;";
  s += "desc." + std::to_string(CUBLASLT_MATMUL_DESC_TRANSB) + "=0;";
  s += "desc." + std::to_string(CUBLASLT_MATMUL_DESC_EPILOGUE) + "=" + std::to_string(epilogue) +
       ";";
  if (bias != nullptr) {
    s += "desc." + std::to_string(CUBLASLT_MATMUL_DESC_BIAS_POINTER) + "=" + bias + ";";
  }
  return s;
}

// LtGemmRunner against fake_cublaslt.cc (lt_path): the descriptors it sets
// up for the swapped operands, the heuristic asked once per shape and
// alignment, the workspace from the caller's allocator, every descriptor
// destroyed, and its errors.
void FakeCublasLt(const char* driver_path, const char* lt_path) {
  void* driver = dlopen(driver_path, RTLD_NOW | RTLD_LOCAL);
  void* lt = dlopen(lt_path, RTLD_NOW | RTLD_LOCAL);
  Expect(driver != nullptr && lt != nullptr, "fake libraries load");
  if (driver == nullptr || lt == nullptr) return;
  auto log = reinterpret_cast<const char* (*)()>(dlsym(lt, "FakeLtLog"));
  auto clear = reinterpret_cast<void (*)()>(dlsym(lt, "FakeLtClearLog"));
  auto live = reinterpret_cast<int (*)()>(dlsym(lt, "FakeLtLive"));
  auto set_found = reinterpret_cast<void (*)(int)>(dlsym(lt, "FakeLtSetAlgosFound"));
  std::string error;
  auto backend = CudaBackend::Create(driver, "", lt, "", &error);
  Expect(backend != nullptr, "backend with cuBLASLt: " + error);
  if (backend == nullptr) return;
  CUstream stream = reinterpret_cast<CUstream>(uintptr_t{0x50});
  std::string allocations;
  auto allocate = [&allocations](size_t bytes) -> void* {
    allocations += std::to_string(bytes) + ";";
    return reinterpret_cast<void*>(uintptr_t{0x9000});
  };

  // C (2x3) = A (2x5) B (5x3) + bias, tanh-GELU, TF32: cuBLASLt's A is our
  // B (3x5, ld 3), its B our A (5x2, ld 5), C^T 3x2 (ld 3).
  DiscGemmArgs g = RowMajor(2, 3, 5);
  g.bias = reinterpret_cast<const void*>(uintptr_t{0xD00});
  g.activation = DISC_ACT_GELU_TANH;
  const std::string layouts = "layout:" + std::to_string(CUDA_R_32F) + ",3x5,ld3;layout:" +
                              std::to_string(CUDA_R_32F) + ",5x2,ld5;layout:" +
                              std::to_string(CUDA_R_32F) + ",3x2,ld3;";
  const std::string desc =
      LtDesc(CUBLAS_COMPUTE_32F_FAST_TF32, CUBLASLT_EPILOGUE_GELU_BIAS, "d00");
  const std::string matmul = "matmul:a=b00,b=a00,c=c00,d=c00,alpha=1,beta=0,algo=42,ws=9000:1024;";
  Expect(backend->Gemm(g, true, stream, allocate, &error), "gemm: " + error);
  Expect(std::string(log()) == "create;" + desc + layouts + "align=256;max_ws=33554432;heuristic;" +
                                   matmul,
         std::string("first gemm: ") + log());
  Expect(allocations == "1024;", "workspace of the algorithm's size: " + allocations);
  Expect(live() == 0, "descriptors destroyed");
  clear();
  // The same shape again: the handle and algorithm are reused.
  Expect(backend->Gemm(g, true, stream, allocate, &error), "second gemm: " + error);
  Expect(std::string(log()) == desc + layouts + matmul, std::string("cached: ") + log());
  clear();
  // Another alignment of C: a new heuristic query for it.
  g.c = reinterpret_cast<void*>(uintptr_t{0xC04});
  Expect(backend->Gemm(g, true, stream, allocate, &error) &&
             std::string(log()).find("align=4;max_ws=33554432;heuristic;") != std::string::npos,
         std::string("alignment in the key: ") + log());
  clear();

  // Batches: count and strides on every layout (cuBLASLt's A is our B).
  g = RowMajor(2, 3, 5);
  g.batch = 4;
  g.stride_a = 10;
  g.stride_b = 0;
  g.stride_c = 6;
  Expect(backend->Gemm(g, false, stream, allocate, &error), "batched gemm: " + error);
  const std::string f32 = std::to_string(CUDA_R_32F);
  Expect(std::string(log()) ==
             LtDesc(CUBLAS_COMPUTE_32F, CUBLASLT_EPILOGUE_DEFAULT, nullptr) + "layout:" + f32 +
                 ",3x5,ld3;batch=4;stride=0;layout:" + f32 + ",5x2,ld5;batch=4;stride=10;layout:" +
                 f32 + ",3x2,ld3;batch=4;stride=6;align=256;max_ws=33554432;heuristic;" + matmul,
         std::string("batched: ") + log());
  clear();

  // No algorithm; no workspace memory.  Both fail cleanly, nothing leaks.
  set_found(0);
  g = RowMajor(7, 3, 5);
  Expect(!backend->Gemm(g, true, stream, allocate, &error) &&
             error == "gemm on CUDA: cuBLASLt has no algorithm for this product",
         "no algorithm: " + error);
  set_found(1);
  auto no_memory = [](size_t) -> void* { return nullptr; };
  Expect(!backend->Gemm(g, true, stream, no_memory, &error) &&
             error == "gemm on CUDA: no memory for the cuBLASLt workspace",
         "no workspace: " + error);
  Expect(live() == 0, "descriptors destroyed on errors");
}

}  // namespace

int main(int argc, char** argv) {
  NoDriver();
  GemmPlans();
  if (argc > 1) FakeDriver(argv[1]);
  if (argc > 2) FakeCublasLt(argv[1], argv[2]);
  if (check::Failures() == 0) std::printf("ok\n");
  return check::Failures() == 0 ? 0 : 1;
}
