// Batched strided GEMM behind DiscRuntime::gemm (disc_abi.h).
//
// gemm.cc holds only Eigen (no TF headers) and is compiled once per ISA
// tier into the kernel libraries (kernel_table.h; sources.json
// "kernel_tiers": -O3 -march=x86-64-vN, hidden visibility): the wheel's own
// Eigen kernels are built without AVX-512 and run at about half the peak of
// an AVX-512 CPU.  Threading stays with the caller: the
// work is cut into independent blocks (batches, row and column panels) that
// the caller's parallel-for runs on TF's intra-op pool, each block being a
// single-threaded Eigen GEMM; large dense products instead run Eigen's
// tensor contraction on the same pool.  Float products with a transposed B
// that are short (m <= 128) or shallow (k <= 128), batched ones with a narrow
// row-major B (attention context), and products whose B is a weight in
// transposed layout, packed once (GemmArgs::packed_b32), run the packed
// AVX-512 kernel of gemm_packed.h instead (gemm.cc Packed()).
// Skinny float products (m <= 128, row-major B) skip Eigen's per-call
// packing of B: a register-tiled kernel (gemm_skinny.h) streams B, one task
// per 32- or 64-column tile.  An epilogue (bias, activation, residual: a generated elementwise
// kernel) runs on each tile or block of C right after it is computed,
// instead of in a second pass over C.
#ifndef TF_DISC_RUNTIME_CPU_GEMM_H_
#define TF_DISC_RUNTIME_CPU_GEMM_H_

#include <cstdint>
#include <functional>
#include <string>

#include "tf_disc/runtime/disc_abi.h"

namespace tf_disc {

struct Bf16PackedB;  // gemm_bf16.h
struct Fp32PackedB;  // gemm_packed.h

struct GemmArgs {
  int32_t dtype;  // DISC_DTYPE_*
  bool trans_a, trans_b;
  int64_t batch, m, n, k;
  const void* a;
  int64_t lda, stride_a;
  const void* b;
  int64_t ldb, stride_b;
  void* c;
  int64_t ldc, stride_c;
  // Optional (DiscGemmArgs::epilogue): run on every final piece of C,
  // flat offsets epilogue_offset + b * stride_c + i * ldc + j.
  DiscParallelFn epilogue = nullptr;
  void* epilogue_closure = nullptr;
  int64_t epilogue_offset = 0;
  // Optional, fast math only: B already packed for the bf16 kernel (a
  // weight that cannot change, packed once; gemm_bf16.h PackBf16B).
  const Bf16PackedB* packed_b = nullptr;
  // Optional, fp32: B already packed for the packed kernel (a weight that
  // cannot change, packed once; gemm_packed.h PackFp32B).
  const Fp32PackedB* packed_b32 = nullptr;
};

// parallel_for(num_blocks, cost_per_block_in_cycles, fn(begin, end)).
using GemmParallelFor =
    std::function<void(int64_t, int64_t, const std::function<void(int64_t, int64_t)>&)>;

// The epilogue (if any) on C[r0:r1, c0:c1] of batch entry b, just computed.
void GemmEpilogue(const GemmArgs& g, int64_t b, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

// Whether RunGemm would run an fp32 GEMM like g (dtype float, no bf16
// flag) on the packed kernel given a pre-packed B (so that packing B once is
// worth its memory).
bool PrepackedFp32Applies(const GemmArgs& g);

// Runs the GEMM (and its epilogue); false with *error set for an unsupported dtype or bad
// arguments (nothing written then).  eigen_pool (an Eigen::ThreadPoolInterface*,
// TF's intra-op pool; may be null) serves Eigen's tensor contraction, used for
// large dense products: it shares packed panels between threads.
bool RunGemm(const GemmArgs& args, int num_threads, void* eigen_pool,
             const GemmParallelFor& parallel_for, std::string* error);

// Runs parts[0..num_parts) (unbatched products that share A, DiscRuntime::
// gemm_multi) as RunGemm would one by one; skinny ones (gemm.cc Skinny(),
// e.g. QKV projections of short sequences) in one parallel region over all
// parts' column tiles.
bool RunGemmMulti(const GemmArgs* parts, int num_parts, int num_threads, void* eigen_pool,
                  const GemmParallelFor& parallel_for, std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_GEMM_H_
