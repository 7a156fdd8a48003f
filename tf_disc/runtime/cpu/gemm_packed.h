// fp32 GEMM with BLIS-style packing and an AVX-512 register-tiled
// microkernel (gemm_packed.cc), behind RunGemm (gemm.cc) for float products
// with a transposed B, short (m <= 128) or shallow (k <= 128), whose packing
// Eigen does slowly (the LM head x E^T took Eigen 3-4x TF's time), and for
// batched ones with a narrow B (attention context).  A 14 x 32 tile of C
// lives in 28 zmm accumulators; B is packed in 384 x 192 blocks (L2), A in
// 14-row micro-panels (L1) or, for k <= 256 (attention scores, context), broadcast
// from its rows in place; transposed operands go through in-register
// 16 x 16 transposes.  While a row of tiles computes, the kernel prefetches
// what the next one (or the task's next batch entry) reads first.  A
// weight's B (gemm.h GemmArgs::packed_b32) can instead be packed once, all
// of k (PackFp32B), and read by every task and call.
#ifndef TF_DISC_RUNTIME_CPU_GEMM_PACKED_H_
#define TF_DISC_RUNTIME_CPU_GEMM_PACKED_H_

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <memory>

#include "tf_disc/runtime/cpu/gemm.h"

namespace tf_disc {

// Whether this build has the kernel (compiled with AVX-512F).
bool PackedGemmAvailable();

// C = op(A) op(B) for every batch entry of a float GEMM (g.k > 0, non-empty
// C), the epilogue on each row panel of C as it is finished; blocks of C
// (batch entry x rows x 192 columns) run as tasks on parallel_for.
// With g.packed_b32 set, B is read from it and not packed.
void RunPackedGemm(const GemmArgs& g, int num_threads, const GemmParallelFor& parallel_for);

// B of a float GEMM in the kernel's layout: per column block (a task's
// columns), its k blocks in order, each as the kernel packs it per call
// (32-column panels, zero columns past n), so that a task streams one
// contiguous run; batch entries `entry` floats apart (one entry when
// stride_b == 0).  The bytes of the fp32 operand, n padded to 32.
struct Fp32PackedB {
  Fp32PackedB(float* data, size_t bytes, int64_t entry);
  // Inline: the op library frees what a kernel library packed.
  ~Fp32PackedB() { std::free(data); }
  Fp32PackedB(const Fp32PackedB&) = delete;
  Fp32PackedB& operator=(const Fp32PackedB&) = delete;
  float* const data;
  const size_t bytes;
  const int64_t entry;
};

// Packs g's B (read through b, ldb, stride_b, trans_b, n, k, batch) on the
// caller's parallel-for, for GEMMs whose B cannot change between calls.
// Null when the kernel is unavailable, g is empty or memory is short.
std::unique_ptr<Fp32PackedB> PackFp32B(const GemmArgs& g, int num_threads,
                                       const GemmParallelFor& parallel_for);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_GEMM_PACKED_H_
