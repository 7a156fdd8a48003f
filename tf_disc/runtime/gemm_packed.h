// fp32 GEMM with BLIS-style packing and an AVX-512 register-tiled
// microkernel (gemm_packed.cc), behind RunGemm (gemm.cc) for short float
// products (m <= 128) with a transposed B, whose packing Eigen does slowly
// (the LM head x E^T took Eigen 3-4x TF's time).  A 14 x 32 tile of C lives
// in 28 zmm accumulators; B is packed in 384 x 192 blocks (L2), A in 14-row
// micro-panels (L1), transposed operands through in-register 16 x 16
// transposes.
#ifndef TF_DISC_RUNTIME_GEMM_PACKED_H_
#define TF_DISC_RUNTIME_GEMM_PACKED_H_

#include "tf_disc/runtime/gemm.h"

namespace tf_disc {

// Whether this build has the kernel (compiled with AVX-512F).
bool PackedGemmAvailable();

// C = op(A) op(B) for every batch entry of a float GEMM (g.k > 0, non-empty
// C), the epilogue on each row panel of C as it is finished; blocks of C
// (batch entry x rows x 192 columns) run as tasks on parallel_for.
void RunPackedGemm(const GemmArgs& g, int num_threads, const GemmParallelFor& parallel_for);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_GEMM_PACKED_H_
