#include "tf_disc/runtime/cpu/gemm.h"

#define EIGEN_USE_THREADS
#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm_bf16.h"
#include "tf_disc/runtime/cpu/gemm_packed.h"
#include "tf_disc/runtime/cpu/gemm_skinny.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"

namespace tf_disc {
namespace {

template <typename T, int Order>
using ConstMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>,
                            Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          Eigen::Unaligned, Eigen::OuterStride<>>;

// C[r0:r1, c0:c1] of batch b.
template <typename T>
void Block(const GemmArgs& g, int64_t b, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const T* a = static_cast<const T*>(g.a) + b * g.stride_a;
  const T* bp = static_cast<const T*>(g.b) + b * g.stride_b;
  T* c = static_cast<T*>(g.c) + b * g.stride_c + r0 * g.ldc + c0;
  const int64_t rows = r1 - r0, cols = c1 - c0;
  OutMap<T> out(c, rows, cols, Eigen::OuterStride<>(g.ldc));
  // op(A) rows r0..r1: row-major m x k, or the transpose of a k x m matrix
  // (= column-major m x k with outer stride lda); B likewise.
  auto run = [&](const auto& lhs) {
    if (!g.trans_b) {
      ConstMap<T, Eigen::RowMajor> rhs(bp + c0, g.k, cols, Eigen::OuterStride<>(g.ldb));
      out.noalias() = lhs * rhs;
    } else {
      ConstMap<T, Eigen::ColMajor> rhs(bp + c0 * g.ldb, g.k, cols, Eigen::OuterStride<>(g.ldb));
      out.noalias() = lhs * rhs;
    }
  };
  if (!g.trans_a) {
    run(ConstMap<T, Eigen::RowMajor>(a + r0 * g.lda, rows, g.k, Eigen::OuterStride<>(g.lda)));
  } else {
    run(ConstMap<T, Eigen::ColMajor>(a + r0, rows, g.k, Eigen::OuterStride<>(g.lda)));
  }
}

// Block, then its epilogue while the block is in cache.
template <typename T>
void BlockWithEpilogue(const GemmArgs& g, int64_t b, int64_t r0, int64_t r1, int64_t c0,
                       int64_t c1) {
  Block<T>(g, b, r0, r1, c0, c1);
  GemmEpilogue(g, b, r0, r1, c0, c1);
}

template <typename T>
void Zero(const GemmArgs& g) {
  for (int64_t b = 0; b < g.batch; ++b) {
    T* c = static_cast<T*>(g.c) + b * g.stride_c;
    for (int64_t i = 0; i < g.m; ++i) std::fill(c + i * g.ldc, c + i * g.ldc + g.n, T(0));
    GemmEpilogue(g, b, 0, g.m, 0, g.n);
  }
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Dense (natural leading dims) operands: Eigen's threaded contraction works.
bool Dense(const GemmArgs& g) {
  return g.lda == (g.trans_a ? g.m : g.k) && g.ldb == (g.trans_b ? g.k : g.n) &&
         g.ldc == g.n;
}

// One batch entry with Eigen's tensor contraction on the thread pool.
template <typename T>
void Contract(const GemmArgs& g, Eigen::ThreadPoolInterface* pool, int threads, int64_t b) {
  using In = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Eigen::Index>>;
  using Out = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::Index>>;
  Eigen::ThreadPoolDevice dev(pool, threads);
  In a(static_cast<const T*>(g.a) + b * g.stride_a, g.trans_a ? g.k : g.m,
       g.trans_a ? g.m : g.k);
  In bm(static_cast<const T*>(g.b) + b * g.stride_b, g.trans_b ? g.n : g.k,
        g.trans_b ? g.k : g.n);
  Out c(static_cast<T*>(g.c) + b * g.stride_c, g.m, g.n);
  Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
      Eigen::IndexPair<Eigen::Index>(g.trans_a ? 0 : 1, g.trans_b ? 1 : 0)};
  c.device(dev) = a.contract(bm, dims);
}

// Skinny float products (few rows of C, row-major B): Eigen packs all of B
// (k x n) on every call, and with m this small the packing costs about half
// as much as the product itself; gemm_skinny.h streams B.
constexpr int64_t kSkinnyMaxRows = 128;

// Kernel policy skinny_gemm kOff sends skinny products to Eigen too.
bool Skinny(const GemmArgs& g) {
  if (CurrentKernelPolicy().skinny_gemm == SkinnyGemm::kOff) return false;
  return g.dtype == DISC_DTYPE_FLOAT && !g.trans_b && g.m <= kSkinnyMaxRows &&
         g.n >= SkinnyTileCols(g);
}

// Float products with a transposed B that are short (m <= 128: the tied LM
// head x E^T) or shallow (k <= 128: attention scores Q K^T, A read in
// place) run the packed AVX-512 kernel (gemm_packed.h): Eigen packs a
// transposed B on every call, which dominates such products.  So do batched
// products with a narrow row-major B (n <= 128) of moderate depth
// (k <= 256), e.g. attention context [12b, s, s] x [12b, s, 64]; deeper ones
// and projections and FFN stay with Eigen, faster there
// (benchmarks/gemm_vs_tf.py measures both).
// Kernel policy packed_gemm kOff keeps Eigen for all, kOn sends every
// non-skinny float product to the kernel.
bool Packed(const GemmArgs& g) {
  if (g.dtype != DISC_DTYPE_FLOAT || !PackedGemmAvailable()) return false;
  const PathChoice mode = CurrentKernelPolicy().packed_gemm;
  if (mode == PathChoice::kOn) return true;
  if (mode == PathChoice::kOff) return false;
  if (g.trans_b) return g.m <= kSkinnyMaxRows || g.k <= 128;
  return g.batch > 1 && g.n <= 128 && g.k <= 256;
}

// Cycles of one column tile (~8 flops per cycle).
int64_t SkinnyTaskCost(const GemmArgs& g) {
  return static_cast<int64_t>(2.0 * g.m * g.k * SkinnyTileCols(g) / 8) + 1;
}

// One task per (part, batch entry, column tile), all parts' tasks in one
// parallel region (parts: RunGemmMulti's, all of one m and k); the columns
// past the last full tile (n % SkinnyTileCols(g)) go to Eigen in one more
// task per batch entry.
void RunSkinny(const GemmArgs* parts, int num_parts, int num_threads,
               const GemmParallelFor& parallel_for) {
  // Inline storage: every skinny GEMM comes through here (no heap per call).
  absl::InlinedVector<int64_t, 5> first(num_parts + 1, 0);
  absl::InlinedVector<int64_t, 4> tiles(num_parts), per_batch(num_parts);
  for (int p = 0; p < num_parts; ++p) {
    const GemmArgs& g = parts[p];
    tiles[p] = g.n / SkinnyTileCols(g);
    per_batch[p] = tiles[p] + (g.n % SkinnyTileCols(g) ? 1 : 0);
    first[p + 1] = first[p] + g.batch * per_batch[p];
  }
  auto run = [&](int64_t begin, int64_t end) {
    int p = static_cast<int>(std::upper_bound(first.begin(), first.end(), begin) -
                             first.begin()) - 1;
    for (int64_t i = begin; i < end;) {  // runs of full tiles of one batch entry
      while (i >= first[p + 1]) ++p;
      const GemmArgs& g = parts[p];
      const int64_t local = i - first[p], limit = std::min(end, first[p + 1]) - first[p];
      const int64_t bi = local / per_batch[p], t = local % per_batch[p];
      if (t < tiles[p]) {
        const int64_t t1 = std::min(tiles[p], t + (limit - local));
        SkinnyColumns(g, bi, t, t1);
        i += t1 - t;
      } else {
        BlockWithEpilogue<float>(g, bi, 0, g.m, tiles[p] * SkinnyTileCols(g), g.n);
        ++i;
      }
    }
  };
  const int64_t tasks = first[num_parts];
  if (num_threads <= 1) return run(0, tasks);
  parallel_for(tasks, SkinnyTaskCost(parts[0]), run);
}

// Small problems: one thread hop costs more than the work.
constexpr double kOneThreadFlops = 4e5;

// Threads RunSkinny(&g, 1, num_threads, pool) runs g on: its own cutoff,
// then that of Eigen's parallelFor (TF's ParallelFor), which runs inline
// when its cost model gives one thread.
int SkinnyThreads(const GemmArgs& g, int num_threads) {
  if (num_threads <= 1 || 2.0 * g.batch * g.m * g.n * g.k < kOneThreadFlops) return 1;
  const int64_t tasks = g.batch * (g.n / SkinnyTileCols(g) + (g.n % SkinnyTileCols(g) ? 1 : 0));
  return Eigen::TensorCostModel<Eigen::ThreadPoolDevice>::numThreads(
      static_cast<double>(tasks), Eigen::TensorOpCost(0, 0, SkinnyTaskCost(g)), num_threads);
}

template <typename T>
void Run(const GemmArgs& g, int num_threads, void* eigen_pool,
         const GemmParallelFor& parallel_for);

// The epilogue over all of C as a second pass, rows (of every batch entry)
// on the pool: after the threaded contraction and the bf16 kernel, whose
// blocks run none, and everywhere under kernel policy gemm_epilogue_fusion
// false, as an unfused kernel would.  A piece's rows within
// one batch entry go to GemmEpilogue together (one call when C is dense).
void EpiloguePass(const GemmArgs& g, int num_threads, const GemmParallelFor& parallel_for) {
  if (g.epilogue == nullptr) return;
  const int64_t rows = g.batch * g.m;
  auto pass = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1;) {
      const int64_t b = r / g.m, end = std::min(r1, (b + 1) * g.m);
      GemmEpilogue(g, b, r - b * g.m, end - b * g.m, 0, g.n);
      r = end;
    }
  };
  if (num_threads <= 1 || rows * g.n < 16384) return pass(0, rows);
  parallel_for(rows, g.n * 4 + 1, pass);
}

template <typename T>
bool EpilogueAfter(const GemmArgs& g, int num_threads, void* eigen_pool,
                   const GemmParallelFor& parallel_for) {
  if (g.epilogue == nullptr || CurrentKernelPolicy().gemm_epilogue_fusion) {
    return false;
  }
  GemmArgs plain = g;
  plain.epilogue = nullptr;
  Run<T>(plain, num_threads, eigen_pool, parallel_for);
  EpiloguePass(g, num_threads, parallel_for);
  return true;
}

template <typename T>
void Run(const GemmArgs& g, int num_threads, void* eigen_pool,
         const GemmParallelFor& parallel_for) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  if (EpilogueAfter<T>(g, num_threads, eigen_pool, parallel_for)) return;
  if (g.k == 0) return Zero<T>(g);
  const double flops = 2.0 * g.batch * g.m * g.n * g.k;
  // Set (by PackedWeights::Attach) only where PrepackedFp32Applies(g).
  if (g.packed_b32 != nullptr) return RunPackedGemm(g, num_threads, parallel_for);
  if (Skinny(g)) {
    return RunSkinny(&g, 1, flops < kOneThreadFlops ? 1 : num_threads, parallel_for);
  }
  if (Packed(g)) return RunPackedGemm(g, num_threads, parallel_for);
  if (num_threads <= 1 || flops < kOneThreadFlops) {
    for (int64_t b = 0; b < g.batch; ++b) BlockWithEpilogue<T>(g, b, 0, g.m, 0, g.n);
    return;
  }
  // Few large dense products: the threaded contraction, one at a time.
  if (eigen_pool != nullptr && Dense(g) && g.batch < 2 * num_threads &&
      flops / g.batch >= 2e7) {
    auto* pool = static_cast<Eigen::ThreadPoolInterface*>(eigen_pool);
    for (int64_t b = 0; b < g.batch; ++b) Contract<T>(g, pool, num_threads, b);
    return EpiloguePass(g, num_threads, parallel_for);
  }
  // Enough blocks for load balance on a shared machine, each big enough to
  // amortize packing: row panels first (B is re-packed per panel, which is
  // O(k n) against O(rows k n) work), then column panels for short, wide C.
  const int64_t want = 4 * int64_t(num_threads);
  int64_t row_blocks = 1, col_blocks = 1;
  if (g.batch < want) {
    const int64_t per_batch = CeilDiv(want, g.batch);
    row_blocks = std::min(per_batch, std::max<int64_t>(1, g.m / 48));
    col_blocks = std::min(CeilDiv(per_batch, row_blocks), std::max<int64_t>(1, g.n / 64));
  }
  // Panel edges on multiples of 16 rows / 32 columns (the GEBP register tiles).
  const int64_t rstep = std::min(g.m, ((CeilDiv(g.m, row_blocks) + 15) / 16) * 16);
  const int64_t cstep = std::min(g.n, ((CeilDiv(g.n, col_blocks) + 31) / 32) * 32);
  row_blocks = CeilDiv(g.m, rstep);
  col_blocks = CeilDiv(g.n, cstep);
  const int64_t per_batch = row_blocks * col_blocks;
  const int64_t blocks = g.batch * per_batch;
  // Contiguous runs of blocks, a few per thread: each task costs a thread
  // hop, which matters for many small matrices (attention heads).
  const int64_t tasks = std::min<int64_t>(blocks, 2 * int64_t(num_threads));
  const int64_t cost = static_cast<int64_t>(flops / tasks / 8) + 1;  // ~8 flop/cycle
  parallel_for(tasks, cost, [&](int64_t tbegin, int64_t tend) {
    const int64_t begin = tbegin * blocks / tasks, end = tend * blocks / tasks;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = i / per_batch, rb = (i % per_batch) / col_blocks,
                    cb = i % col_blocks;
      BlockWithEpilogue<T>(g, b, rb * rstep, std::min(g.m, (rb + 1) * rstep), cb * cstep,
                           std::min(g.n, (cb + 1) * cstep));
    }
  });
}

}  // namespace

// One call per row piece, or one for all rows when they are contiguous.
void GemmEpilogue(const GemmArgs& g, int64_t b, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (g.epilogue == nullptr || r0 >= r1 || c0 >= c1) return;
  const int64_t base = g.epilogue_offset + b * g.stride_c;
  if (c0 == 0 && c1 == g.n && g.ldc == g.n) {
    return g.epilogue(g.epilogue_closure, base + r0 * g.n, base + r1 * g.n);
  }
  for (int64_t r = r0; r < r1; ++r) {
    g.epilogue(g.epilogue_closure, base + r * g.ldc + c0, base + r * g.ldc + c1);
  }
}

// A float GEMM whose B is a weight in transposed layout (the tied LM head
// x E^T), packed once (GemmArgs::packed_b32), runs the packed kernel with no
// B packing per call (benchmarks/gemm_vs_tf.py --shapes bert-b).  Row-major
// weights are not packed: short products stream them through the skinny
// kernel and longer ones amortize Eigen's packing, so a second copy of
// every weight would buy nothing.
// Kernel policy prepack_weights false keeps the per-call routes;
// packed_gemm kOff too.
bool PrepackedFp32Applies(const GemmArgs& g) {
  if (g.dtype != DISC_DTYPE_FLOAT || !g.trans_b || g.batch <= 0 || g.m <= 0 || g.n <= 0 ||
      g.k <= 0 || !PackedGemmAvailable()) {
    return false;
  }
  const KernelPolicy policy = CurrentKernelPolicy();
  return policy.prepack_weights && policy.packed_gemm != PathChoice::kOff;
}

namespace {

// Sizes and buffers RunGemm can run; else false with *error set.
bool ValidArgs(const GemmArgs& g, std::string* error) {
  if (g.batch < 0 || g.m < 0 || g.n < 0 || g.k < 0) {
    *error = "gemm: negative size";
    return false;
  }
  if (g.batch > 0 && g.m > 0 && g.n > 0 &&
      (g.c == nullptr || (g.k > 0 && (g.a == nullptr || g.b == nullptr)))) {
    *error = "gemm: null buffer for a non-empty product";
    return false;
  }
  return true;
}

// Whether RunGemmMulti runs all parts in one skinny region: each one
// RunGemm would send to the skinny kernel (no pre-packed B, epilogue fused),
// of one m and k (RunSkinny's task cost).  Kernel policy multi_gemm false
// (or gemm_epilogue_fusion false) runs the parts one by one instead.
bool SkinnyTogether(const GemmArgs* parts, int num_parts) {
  const KernelPolicy policy = CurrentKernelPolicy();
  if (!policy.multi_gemm || !policy.gemm_epilogue_fusion) return false;
  for (int p = 0; p < num_parts; ++p) {
    const GemmArgs& g = parts[p];
    if (!Skinny(g) || g.packed_b32 != nullptr || g.batch != 1 || g.m == 0 || g.k == 0 ||
        g.m != parts[0].m || g.k != parts[0].k) {
      return false;
    }
  }
  return num_parts > 0;
}

}  // namespace

bool RunGemmMulti(const GemmArgs* parts, int num_parts, int num_threads, void* eigen_pool,
                  const GemmParallelFor& parallel_for, std::string* error) {
  for (int p = 0; p < num_parts; ++p) {
    if (!ValidArgs(parts[p], error)) return false;
  }
  if (!SkinnyTogether(parts, num_parts)) {
    for (int p = 0; p < num_parts; ++p) {
      if (!RunGemm(parts[p], num_threads, eigen_pool, parallel_for, error)) return false;
    }
    return true;
  }
  // Threads as one part alone would get: where each part would run inline
  // (Eigen's cost model behind TF's ParallelFor picks one thread: m = 1 at
  // hidden 768), the merged region does too: its 3x cost would buy a second
  // thread whose hop waits for a busy core (benchmarks/qkv_merge.py).
  bool threaded = false;
  for (int p = 0; p < num_parts; ++p) threaded |= SkinnyThreads(parts[p], num_threads) > 1;
  RunSkinny(parts, num_parts, threaded ? num_threads : 1, parallel_for);
  return true;
}

bool RunGemm(const GemmArgs& g, int num_threads, void* eigen_pool,
             const GemmParallelFor& parallel_for, std::string* error) {
  if (!ValidArgs(g, error)) return false;
  if (g.dtype & DISC_GEMM_FAST_BF16) {  // fast math: bf16 where it runs, else fp32
    GemmArgs f = g;
    f.dtype &= ~DISC_GEMM_FAST_BF16;
    if (RunGemmBf16(f, num_threads, parallel_for)) {  // its kernel runs no epilogue
      if (f.batch > 0 && f.m > 0 && f.n > 0) EpiloguePass(f, num_threads, parallel_for);
      return true;
    }
    return RunGemm(f, num_threads, eigen_pool, parallel_for, error);
  }
  switch (g.dtype) {
    case DISC_DTYPE_FLOAT:
      Run<float>(g, num_threads, eigen_pool, parallel_for);
      return true;
    case DISC_DTYPE_DOUBLE:
      Run<double>(g, num_threads, eigen_pool, parallel_for);
      return true;
    default:
      *error = "gemm: unsupported dtype " + std::to_string(g.dtype);
      return false;
  }
}

}  // namespace tf_disc
