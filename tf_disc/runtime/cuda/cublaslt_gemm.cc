#include "tf_disc/runtime/cuda/cublaslt_gemm.h"

#include <algorithm>
#include <climits>

#include "tf_disc/runtime/cuda/cuda_driver.h"

namespace tf_disc {
namespace cuda {

namespace {

bool Fail(std::string* error, const std::string& text) {
  *error = "gemm on CUDA: " + text;
  return false;
}

// cuBLASLt's activation epilogue for an activation, with or without a bias.
bool Epilogue(int32_t activation, bool bias, cublasLtEpilogue_t* out) {
  switch (activation) {
    case DISC_ACT_NONE:
      *out = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
      return true;
    case DISC_ACT_RELU:
      *out = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
      return true;
    case DISC_ACT_GELU_TANH:
      *out = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
      return true;
    default:
      return false;  // RELU6 and others: no cuBLASLt epilogue
  }
}

// The largest power of two (at most 256) dividing the address; null reads
// as fully aligned.
int Alignment(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int align = 256;
  while (align > 1 && address % align != 0) align /= 2;
  return align;
}

int PlanAlignment(const LtGemmPlan& plan) {
  int align = Alignment(plan.a.data);
  for (const void* p : {plan.b.data, static_cast<const void*>(plan.c), plan.bias}) {
    align = std::min(align, Alignment(p));
  }
  return align;
}

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* out, std::string* error) {
  return ResolveSymbol(handle, "cuBLASLt", symbol, out, error);
}

// Destroys a cuBLASLt descriptor at scope exit.
template <typename T, typename Destroy>
struct Owned {
  T value = nullptr;
  Destroy destroy;
  explicit Owned(Destroy d) : destroy(d) {}
  ~Owned() {
    if (value != nullptr) destroy(value);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
};

}  // namespace

bool PlanLtGemm(const DiscGemmArgs& g, bool allow_tf32, LtGemmPlan* plan, std::string* error) {
  *plan = LtGemmPlan();
  if (g.epilogue != nullptr) return Fail(error, "a host epilogue callback cannot run on a GPU");
  if (g.batch < 0 || g.m < 0 || g.n < 0 || g.k < 0) return Fail(error, "negative size");
  if (g.batch > INT32_MAX) return Fail(error, "batch above 2^31");
  const bool fast_bf16 = (g.dtype & DISC_GEMM_FAST_BF16) != 0;
  const int32_t dtype = g.dtype & ~DISC_GEMM_FAST_BF16;
  switch (dtype) {
    case DISC_DTYPE_FLOAT:
      plan->data_type = CUDA_R_32F;
      plan->compute = fast_bf16    ? CUBLAS_COMPUTE_32F_FAST_16BF
                      : allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                   : CUBLAS_COMPUTE_32F;
      break;
    case DISC_DTYPE_HALF:
      plan->data_type = CUDA_R_16F;
      plan->element_bytes = 2;
      break;
    case DISC_DTYPE_BFLOAT16:
      plan->data_type = CUDA_R_16BF;
      plan->element_bytes = 2;
      break;
    case DISC_DTYPE_DOUBLE:
      plan->data_type = CUDA_R_64F;
      plan->scale_type = CUDA_R_64F;
      plan->compute = CUBLAS_COMPUTE_64F;
      plan->element_bytes = 8;
      break;
    default:
      return Fail(error, "unsupported dtype " + std::to_string(g.dtype));
  }
  if (fast_bf16 && dtype != DISC_DTYPE_FLOAT) {
    return Fail(error, "fast_math bf16 on a non-float32 product");
  }
  if (!Epilogue(g.activation, g.bias != nullptr, &plan->epilogue)) {
    return Fail(error, "no cuBLASLt epilogue for activation " + std::to_string(g.activation));
  }
  const bool ta = g.trans_a != 0, tb = g.trans_b != 0;
  // Row-major leading dimensions hold at least a stored row.
  if (g.lda < (ta ? g.m : g.k) || g.ldb < (tb ? g.k : g.n) || g.ldc < g.n) {
    return Fail(error, "leading dimension below the row length");
  }
  plan->m = static_cast<uint64_t>(g.n);
  plan->n = static_cast<uint64_t>(g.m);
  plan->k = static_cast<uint64_t>(g.k);
  plan->batch = static_cast<int32_t>(g.batch);
  plan->trans_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  plan->trans_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLASLt's A: our B, stored k x n (column-major n x k) or n x k (k x n).
  plan->a = LtLayout{g.b, static_cast<uint64_t>(tb ? g.k : g.n),
                     static_cast<uint64_t>(tb ? g.n : g.k), g.ldb, g.stride_b};
  // cuBLASLt's B: our A, stored m x k (column-major k x m) or k x m (m x k).
  plan->b = LtLayout{g.a, static_cast<uint64_t>(ta ? g.m : g.k),
                     static_cast<uint64_t>(ta ? g.k : g.m), g.lda, g.stride_a};
  plan->c = g.c;
  plan->ldc = g.ldc;
  plan->stride_c = g.stride_c;
  plan->bias = g.bias;
  if (g.batch == 0 || g.m == 0 || g.n == 0) {
    plan->empty = true;
  } else if (g.k == 0) {
    if (g.bias != nullptr || g.activation != DISC_ACT_NONE) {
      return Fail(error, "k == 0 with a bias or activation");
    }
    plan->zero_fill = true;
  }
  return true;
}

bool LoadCublasLt(void* handle, const char* why, CublasLtApi* api, std::string* error) {
  if (handle == nullptr) {
    *error = "cuBLASLt not found";
    if (why != nullptr && *why != '\0') *error += std::string(": ") + why;
    return false;
  }
  return Resolve(handle, "cublasLtCreate", &api->Create, error) &&
         Resolve(handle, "cublasLtMatmulDescCreate", &api->MatmulDescCreate, error) &&
         Resolve(handle, "cublasLtMatmulDescSetAttribute", &api->MatmulDescSetAttribute, error) &&
         Resolve(handle, "cublasLtMatmulDescDestroy", &api->MatmulDescDestroy, error) &&
         Resolve(handle, "cublasLtMatrixLayoutCreate", &api->MatrixLayoutCreate, error) &&
         Resolve(handle, "cublasLtMatrixLayoutSetAttribute", &api->MatrixLayoutSetAttribute,
                 error) &&
         Resolve(handle, "cublasLtMatrixLayoutDestroy", &api->MatrixLayoutDestroy, error) &&
         Resolve(handle, "cublasLtMatmulPreferenceCreate", &api->MatmulPreferenceCreate, error) &&
         Resolve(handle, "cublasLtMatmulPreferenceSetAttribute",
                 &api->MatmulPreferenceSetAttribute, error) &&
         Resolve(handle, "cublasLtMatmulPreferenceDestroy", &api->MatmulPreferenceDestroy,
                 error) &&
         Resolve(handle, "cublasLtMatmulAlgoGetHeuristic", &api->MatmulAlgoGetHeuristic, error) &&
         Resolve(handle, "cublasLtMatmul", &api->Matmul, error);
}

LtGemmRunner::Key LtGemmRunner::MakeKey(const LtGemmPlan& p, int device) {
  return Key(device, p.data_type, p.compute, p.trans_a, p.trans_b, p.epilogue, PlanAlignment(p),
             p.m, p.n, p.k, p.batch, p.a.ld, p.b.ld, p.ldc, p.a.batch_stride, p.b.batch_stride,
             p.stride_c, p.scale_type);
}

bool LtGemmRunner::Handle(int device, cublasLtHandle_t* handle, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(device);
  if (it != handles_.end()) {
    *handle = it->second;
    return true;
  }
  cublasStatus_t s = api_.Create(handle);
  if (s != CUBLAS_STATUS_SUCCESS) {
    return Fail(error, "cublasLtCreate failed (status " + std::to_string(s) + ")");
  }
  handles_[device] = *handle;
  return true;
}

bool LtGemmRunner::Cached(const Key& key, Algo* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  lru_.splice(lru_.begin(), lru_, it->second);
  *out = it->second->second;
  return true;
}

void LtGemmRunner::Insert(const Key& key, const Algo& algo) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(key) != 0) return;
  lru_.emplace_front(key, algo);
  index_[key] = lru_.begin();
  if (lru_.size() > kCacheEntries) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

bool LtGemmRunner::Run(const LtGemmPlan& p, int device, CUstream stream,
                       const WorkspaceAllocator& workspace, std::string* error) {
  if (p.empty || p.zero_fill) return true;
  cublasLtHandle_t handle;
  if (!Handle(device, &handle, error)) return false;
  auto check = [error](cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    return Fail(error, std::string(what) + " failed (status " + std::to_string(s) + ")");
  };
  Owned<cublasLtMatmulDesc_t, decltype(api_.MatmulDescDestroy)> desc(api_.MatmulDescDestroy);
  if (!check(api_.MatmulDescCreate(&desc.value, p.compute, p.scale_type), "MatmulDescCreate")) {
    return false;
  }
  auto set_desc = [&](cublasLtMatmulDescAttributes_t attr, const void* v, size_t size) {
    return check(api_.MatmulDescSetAttribute(desc.value, attr, v, size), "MatmulDescSetAttribute");
  };
  if (!set_desc(CUBLASLT_MATMUL_DESC_TRANSA, &p.trans_a, sizeof(p.trans_a)) ||
      !set_desc(CUBLASLT_MATMUL_DESC_TRANSB, &p.trans_b, sizeof(p.trans_b)) ||
      !set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, &p.epilogue, sizeof(p.epilogue)) ||
      (p.bias != nullptr &&
       !set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof(p.bias)))) {
    return false;
  }
  using Layout = Owned<cublasLtMatrixLayout_t, decltype(api_.MatrixLayoutDestroy)>;
  Layout la(api_.MatrixLayoutDestroy), lb(api_.MatrixLayoutDestroy), lc(api_.MatrixLayoutDestroy);
  auto make_layout = [&](Layout* l, uint64_t rows, uint64_t cols, int64_t ld, int64_t stride) {
    if (!check(api_.MatrixLayoutCreate(&l->value, p.data_type, rows, cols, ld),
               "MatrixLayoutCreate")) {
      return false;
    }
    if (p.batch == 1) return true;
    return check(api_.MatrixLayoutSetAttribute(l->value, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                               &p.batch, sizeof(p.batch)),
                 "MatrixLayoutSetAttribute") &&
           check(api_.MatrixLayoutSetAttribute(
                     l->value, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                     sizeof(stride)),
                 "MatrixLayoutSetAttribute");
  };
  if (!make_layout(&la, p.a.rows, p.a.cols, p.a.ld, p.a.batch_stride) ||
      !make_layout(&lb, p.b.rows, p.b.cols, p.b.ld, p.b.batch_stride) ||
      !make_layout(&lc, p.m, p.n, p.ldc, p.stride_c)) {
    return false;
  }
  const Key key = MakeKey(p, device);
  Algo algo;
  if (!Cached(key, &algo)) {
    Owned<cublasLtMatmulPreference_t, decltype(api_.MatmulPreferenceDestroy)> pref(
        api_.MatmulPreferenceDestroy);
    if (!check(api_.MatmulPreferenceCreate(&pref.value), "MatmulPreferenceCreate")) return false;
    const uint64_t max_workspace = kMaxWorkspaceBytes;
    const uint32_t align = static_cast<uint32_t>(std::get<6>(key));
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      if (!check(api_.MatmulPreferenceSetAttribute(pref.value, attr, &align, sizeof(align)),
                 "MatmulPreferenceSetAttribute")) {
        return false;
      }
    }
    if (!check(api_.MatmulPreferenceSetAttribute(pref.value,
                                                 CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &max_workspace, sizeof(max_workspace)),
               "MatmulPreferenceSetAttribute")) {
      return false;
    }
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    if (!check(api_.MatmulAlgoGetHeuristic(handle, desc.value, la.value, lb.value, lc.value,
                                           lc.value, pref.value, 1, &result, &found),
               "MatmulAlgoGetHeuristic")) {
      return false;
    }
    if (found < 1) return Fail(error, "cuBLASLt has no algorithm for this product");
    algo = Algo{result.algo, result.workspaceSize};
    Insert(key, algo);
  }
  void* ws = nullptr;
  if (algo.workspace_bytes > 0) {
    ws = workspace(algo.workspace_bytes);
    if (ws == nullptr) return Fail(error, "no memory for the cuBLASLt workspace");
  }
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const bool f64 = p.scale_type == CUDA_R_64F;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  return check(api_.Matmul(handle, desc.value, alpha, p.a.data, la.value, p.b.data, lb.value,
                           beta, p.c, lc.value, p.c, lc.value, &algo.algo, ws,
                           algo.workspace_bytes, stream),
               "cublasLtMatmul");
}

}  // namespace cuda
}  // namespace tf_disc
