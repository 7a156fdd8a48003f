// A stand-in for libcublasLt with the entry points cublaslt_gemm.h resolves:
// each records its call and the attribute values it was given in a log the
// check reads back (FakeLtLog), and counts live descriptors (FakeLtLive), so
// cuda_backend_check.cc drives the real LtGemmRunner without a GPU.
// Attribute sizes are checked as cuBLASLt checks them.
#include <cublasLt.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

std::string& Log() {
  static std::string log;
  return log;
}

void Record(const std::string& call) { Log() += call + ";"; }

int& Live() {
  static int live = 0;
  return live;
}

int& AlgosFound() {
  static int found = 1;
  return found;
}

// The value of an attribute buffer as text, by its size (4 or 8 bytes;
// 8-byte ones are pointers or int64/uint64 values).
std::string Value(const void* buf, size_t size) {
  if (size == 4) {
    int32_t v;
    std::memcpy(&v, buf, 4);
    return std::to_string(v);
  }
  int64_t v;
  std::memcpy(&v, buf, 8);
  return std::to_string(v);
}

// The size cuBLASLt requires for a matmul descriptor attribute we set.
size_t DescAttrSize(cublasLtMatmulDescAttributes_t attr) {
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return 4;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return sizeof(void*);
    default:
      return 0;
  }
}

size_t LayoutAttrSize(cublasLtMatrixLayoutAttribute_t attr) {
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return 4;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return 8;
    default: return 0;
  }
}

size_t PrefAttrSize(cublasLtMatmulPreferenceAttributes_t attr) {
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return 4;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return 8;
    default:
      return 0;
  }
}

std::string Hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%lx",
                static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  return text;
}

}  // namespace

extern "C" {

const char* FakeLtLog() { return Log().c_str(); }
void FakeLtClearLog() { Log().clear(); }
int FakeLtLive() { return Live(); }
void FakeLtSetAlgosFound(int found) { AlgosFound() = found; }

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* handle) {
  Record("create");
  *handle = reinterpret_cast<cublasLtHandle_t>(uintptr_t{0x4000});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc,
                                                     cublasComputeType_t compute,
                                                     cudaDataType_t scale) {
  Record("desc:" + std::to_string(compute) + "," + std::to_string(scale));
  *desc = new cublasLtMatmulDescOpaque_t();
  ++Live();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t size) {
  if (buf == nullptr || size != DescAttrSize(attr)) return CUBLAS_STATUS_INVALID_VALUE;
  Record("desc." + std::to_string(attr) + "=" +
         (attr == CUBLASLT_MATMUL_DESC_BIAS_POINTER ? Hex(*static_cast<void* const*>(buf))
                                                    : Value(buf, size)));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  --Live();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  Record("layout:" + std::to_string(type) + "," + std::to_string(rows) + "x" +
         std::to_string(cols) + ",ld" + std::to_string(ld));
  *layout = new cublasLtMatrixLayoutOpaque_t();
  ++Live();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t,
                                                             cublasLtMatrixLayoutAttribute_t attr,
                                                             const void* buf, size_t size) {
  if (buf == nullptr || size != LayoutAttrSize(attr)) return CUBLAS_STATUS_INVALID_VALUE;
  Record((attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT ? "batch=" : "stride=") + Value(buf, size));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  --Live();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  *pref = new cublasLtMatmulPreferenceOpaque_t();
  ++Live();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t size) {
  if (buf == nullptr || size != PrefAttrSize(attr)) return CUBLAS_STATUS_INVALID_VALUE;
  // The four alignments are set alike; log A's and the workspace cap.
  if (attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES) Record("align=" + Value(buf, size));
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) Record("max_ws=" + Value(buf, size));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  --Live();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int requested,
    cublasLtMatmulHeuristicResult_t* results, int* found) {
  Record("heuristic");
  *found = AlgosFound() < requested ? AlgosFound() : requested;
  if (*found > 0) {
    results[0] = cublasLtMatmulHeuristicResult_t();
    results[0].algo.data[0] = 42;
    results[0].workspaceSize = 1024;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                           const void* alpha, const void* a,
                                           cublasLtMatrixLayout_t, const void* b,
                                           cublasLtMatrixLayout_t, const void* beta,
                                           const void* c, cublasLtMatrixLayout_t, void* d,
                                           cublasLtMatrixLayout_t,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspace_bytes, cudaStream_t) {
  float alpha_v, beta_v;
  std::memcpy(&alpha_v, alpha, 4);
  std::memcpy(&beta_v, beta, 4);
  Record("matmul:a=" + Hex(a) + ",b=" + Hex(b) + ",c=" + Hex(c) + ",d=" + Hex(d) +
         ",alpha=" + std::to_string(static_cast<int>(alpha_v)) +
         ",beta=" + std::to_string(static_cast<int>(beta_v)) +
         ",algo=" + std::to_string(algo->data[0]) + ",ws=" + Hex(workspace) + ":" +
         std::to_string(workspace_bytes));
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
