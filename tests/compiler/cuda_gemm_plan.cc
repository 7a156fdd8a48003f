// The CUDA runtime's own translation of rt->gemm (runtime/cuda/
// cublaslt_gemm.h PlanLtGemm), callable through ctypes: test_cuda_host.py
// plans every DiscGemmArgs a generated library's host code issued on the
// mock runtime, so the arguments the compiler emits are ones the runtime
// can run (transposes, leading dimensions, dtypes, bias and activation).
#include <cstdio>
#include <string>

#include "tf_disc/runtime/cuda/cublaslt_gemm.h"

extern "C" int disc_test_plan_gemm(const DiscGemmArgs* args, char* error, int error_size) {
  tf_disc::cuda::LtGemmPlan plan;
  std::string why;
  if (tf_disc::cuda::PlanLtGemm(*args, /*allow_tf32=*/false, &plan, &why)) return 1;
  std::snprintf(error, error_size, "%s", why.c_str());
  return 0;
}
