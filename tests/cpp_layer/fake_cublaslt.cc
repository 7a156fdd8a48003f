// A stand-in for libcublasLt.so with the entry points cublaslt_gemm.h
// resolves, for runs without a GPU (tests/models/test_gpu_harness_smoke.py):
// descriptors are tagged fake pointers, the heuristic finds one algorithm
// that asks for a 1 MiB workspace (so the caller's scratch allocation is
// exercised), and cublasLtMatmul computes nothing.  FakeCublasLtMatmuls()
// counts the products queued.
#include <cublasLt.h>

#include <cstdint>
#include <cstring>

namespace {

int64_t matmuls = 0;

template <typename T>
T Tagged(uintptr_t tag) {
  return reinterpret_cast<T>(tag);
}

}  // namespace

extern "C" {

int64_t FakeCublasLtMatmuls() { return matmuls; }

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  *handle = Tagged<cublasLtHandle_t>(0x5000);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t,
                                        cudaDataType_t) {
  *desc = Tagged<cublasLtMatmulDesc_t>(0x5100);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                              const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t) { return CUBLAS_STATUS_SUCCESS; }

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType, uint64_t,
                                          uint64_t, int64_t) {
  *layout = Tagged<cublasLtMatrixLayout_t>(0x5200);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t,
                                                cublasLtMatrixLayoutAttribute_t, const void*,
                                                size_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  *pref = Tagged<cublasLtMatmulPreference_t>(0x5300);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t,
                                                    cublasLtMatmulPreferenceAttributes_t,
                                                    const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t* results,
                                              int* found) {
  *found = 0;
  if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  std::memset(&results[0], 0, sizeof(results[0]));
  results[0].workspaceSize = 1 << 20;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                              cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t,
                              const void*, const void*, cublasLtMatrixLayout_t, void*,
                              cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*,
                              void* workspace, size_t workspace_bytes, cudaStream_t) {
  ++matmuls;
  // The workspace must be what the heuristic asked for, from the caller.
  return workspace != nullptr && workspace_bytes == (1 << 20) ? CUBLAS_STATUS_SUCCESS
                                                              : CUBLAS_STATUS_INVALID_VALUE;
}

}  // extern "C"
