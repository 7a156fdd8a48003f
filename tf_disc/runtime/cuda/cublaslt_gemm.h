// rt->gemm on CUDA through cuBLASLt, loaded at run time (dlsym from a handle
// to libcublasLt, as TF itself uses it): DiscGemmArgs (row-major) translated
// to a column-major cuBLASLt matmul, the heuristic's algorithm cached per
// shape, workspace from the caller's allocator.  TF-free.
#ifndef TF_DISC_RUNTIME_CUDA_CUBLASLT_GEMM_H_
#define TF_DISC_RUNTIME_CUDA_CUBLASLT_GEMM_H_

#include <cublasLt.h>
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "tf_disc/runtime/disc_abi.h"

namespace tf_disc {
namespace cuda {

// One operand of a column-major cuBLASLt matmul as stored: rows x cols with
// leading dimension ld, batch_stride elements between batch entries.
struct LtLayout {
  const void* data = nullptr;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

// A DiscGemmArgs as cuBLASLt sees it.  Row-major C = op(A) op(B) is the
// column-major C^T = op(B)^T op(A)^T, so cuBLASLt's A is our B and its B our
// A, with the same transposes; C^T is n x m.  The bias (an n-vector added to
// every row of C) is then a per-row vector of C^T, which is what cuBLASLt's
// BIAS epilogues add.
struct LtGemmPlan {
  cudaDataType_t data_type = CUDA_R_32F;
  cudaDataType_t scale_type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  uint64_t m = 0, n = 0, k = 0;  // cuBLASLt's: m = our n, n = our m
  int32_t batch = 1;
  int32_t element_bytes = 4;
  LtLayout a, b;  // cuBLASLt's operands (our B and A)
  void* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  const void* bias = nullptr;
  // Nothing to compute (an empty C), or only zeros to write (k == 0).
  bool empty = false;
  bool zero_fill = false;
};

// Translates a DiscGemmArgs into *plan.  allow_tf32: float32 products may
// round operands to TF32 (TF's tensor_float_32_execution_enabled).  Returns
// false with *error for what cuBLASLt cannot do here (unsupported dtype or
// activation, a CPU epilogue callback, bad sizes).
bool PlanLtGemm(const DiscGemmArgs& args, bool allow_tf32, LtGemmPlan* plan, std::string* error);

// The cuBLASLt entry points, resolved from a dlopen handle.
struct CublasLtApi {
  decltype(&::cublasLtCreate) Create = nullptr;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmul) Matmul = nullptr;
};

// Null handle: "cuBLASLt not found" (plus why).  False with *error on failure.
bool LoadCublasLt(void* handle, const char* why, CublasLtApi* api, std::string* error);

// Device scratch for one matmul's workspace; null after recording an error.
using WorkspaceAllocator = std::function<void*(size_t bytes)>;

// Runs plans on streams: one cublasLtHandle per device, and an LRU cache of
// the heuristic's algorithm per (device, plan shape, pointer alignment).
class LtGemmRunner {
 public:
  static constexpr size_t kCacheEntries = 512;
  static constexpr uint64_t kMaxWorkspaceBytes = 32ull << 20;

  explicit LtGemmRunner(const CublasLtApi& api) : api_(api) {}
  LtGemmRunner(const LtGemmRunner&) = delete;
  LtGemmRunner& operator=(const LtGemmRunner&) = delete;

  // Queues the product on `stream` (of device `device`).  A zero_fill plan
  // is the caller's (a memset); an empty one does nothing.
  bool Run(const LtGemmPlan& plan, int device, CUstream stream,
           const WorkspaceAllocator& workspace, std::string* error);

 private:
  struct Algo {
    cublasLtMatmulAlgo_t algo;
    size_t workspace_bytes;
  };
  using Key = std::tuple<int, int, int, int, int, int, int, uint64_t, uint64_t, uint64_t, int32_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int>;
  static Key MakeKey(const LtGemmPlan& plan, int device);

  bool Handle(int device, cublasLtHandle_t* handle, std::string* error);
  bool Cached(const Key& key, Algo* out);
  void Insert(const Key& key, const Algo& algo);

  const CublasLtApi& api_;
  std::mutex mu_;
  std::map<int, cublasLtHandle_t> handles_;
  std::list<std::pair<Key, Algo>> lru_;  // most recent first
  std::map<Key, std::list<std::pair<Key, Algo>>::iterator> index_;
};

}  // namespace cuda
}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CUDA_CUBLASLT_GEMM_H_
