#include "tf_disc/runtime/cpu/gemm_skinny.h"

#include <Eigen/Core>

#include <algorithm>
#include <type_traits>

#include "tf_disc/runtime/cpu/kernel_policy.h"

namespace tf_disc {
namespace {

using FloatPacket = Eigen::internal::packet_traits<float>::type;
constexpr int kPacket = Eigen::internal::unpacket_traits<FloatPacket>::size;

// A register tile of C: kRows x kCols floats held in kRows * kCols / kPacket
// accumulators, the tile shapes per vector width (this file is built once
// per ISA tier): with AVX-512's 32 registers 24 accumulators; with AVX2's 16
// twelve, leaving room for the row of B and the broadcast of A (a tile
// sized for AVX-512 spills its accumulators on every k step there).
template <int kRowsT, int kColsT>
struct TileShape {
  static constexpr int kRows = kRowsT, kCols = kColsT, kPackets = kColsT / kPacket;
};
constexpr bool kWideVectors = kPacket >= 16;
// m > 32: the wide tile, fewer broadcasts of A per FMA.
using Wide = std::conditional_t<kWideVectors, TileShape<6, 64>, TileShape<6, 16>>;
// m <= 32 (AVX-512): 8 rows cover m = 8 in one tile (6-row tiles read each piece of B
// twice from L1 and run a 2-row tail tile at a third of the FMA rate), and
// 16, 24, 32 with no tail: 1-thread medians (benchmarks/gemm_skinny.py,
// weights streamed from DRAM) took 0.65-0.8x the 6 x 64 tile's time at m = 8
// (16-20 GB/s of weight against 12-15), 0.83-0.91x at m = 16, 0.78-1.0x at
// m = 24 and 32; at m = 40..64 neither tile won on all shapes.
// With AVX2 the 6 x 16 tile for every m: narrower 4 x 24 tiles read each
// piece of B from L1 more often and measured slower at every m.
using Narrow = std::conditional_t<kWideVectors, TileShape<8, 32>, Wide>;
constexpr int64_t kChunk = 128;  // rows of B per pass: kChunk x 64 floats = 32 KiB

// C[r0:r0+R, c0:c0+kCols] (+)= A[r0:r0+R, k0:k1] B[k0:k1, c0:...]; the
// first k chunk starts from zero, later ones from C.  With kPrefetch, each
// row's piece of the next tile that will be read (pf_delta floats on) is
// prefetched into L2: the tiles' rows are too many streams for the
// hardware prefetcher.
template <typename S, int R, bool kPrefetch = false>
void SkinnyTile(const GemmArgs& g, const float* a, const float* b, float* c, int64_t r0,
                int64_t c0, int64_t k0, int64_t k1, int64_t pf_delta = 0) {
  namespace ei = Eigen::internal;
  constexpr int P = S::kPackets;
  const int64_t row_step = g.trans_a ? 1 : g.lda, k_step = g.trans_a ? g.lda : 1;
  FloatPacket acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < P; ++j)
      acc[r][j] = k0 == 0 ? ei::pset1<FloatPacket>(0.f)
                          : ei::ploadu<FloatPacket>(c + (r0 + r) * g.ldc + c0 + j * kPacket);
  const float* arow = a + r0 * row_step;
  for (int64_t kk = k0; kk < k1; ++kk) {
    const float* brow = b + kk * g.ldb + c0;
    if (kPrefetch) {
      for (int j = 0; j < S::kCols; j += 64 / sizeof(float))
        __builtin_prefetch(brow + pf_delta + j, 0, 2);
    }
    FloatPacket bv[P];
    for (int j = 0; j < P; ++j) bv[j] = ei::ploadu<FloatPacket>(brow + j * kPacket);
    for (int r = 0; r < R; ++r) {
      const FloatPacket av = ei::pset1<FloatPacket>(arow[r * row_step + kk * k_step]);
      for (int j = 0; j < P; ++j) acc[r][j] = ei::pmadd(av, bv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < P; ++j) ei::pstoreu(c + (r0 + r) * g.ldc + c0 + j * kPacket, acc[r][j]);
}

// The last `rows` (< S::kRows) rows from r0: one tile of that height
// (R counts down to it).
template <typename S, bool kPrefetch, int R = S::kRows - 1>
void SkinnyRows(const GemmArgs& g, const float* a, const float* b, float* c, int64_t r0,
                int64_t rows, int64_t c0, int64_t k0, int64_t k1, int64_t pf_delta) {
  if (rows == R) return SkinnyTile<S, R, kPrefetch>(g, a, b, c, r0, c0, k0, k1, pf_delta);
  if constexpr (R > 1) {
    SkinnyRows<S, kPrefetch, R - 1>(g, a, b, c, r0, rows, c0, k0, k1, pf_delta);
  }
}

// Column tiles [t0, t1) of C for batch entry bi, all rows.  The k chunk is
// the outer loop: B's rows are read along their length, tile after tile,
// instead of one piece per row down a strip (a new 4 KiB page per row for
// n >= 1024, where the hardware prefetcher stops); each chunk x tile of B
// stays in L1 across the row tiles.
template <typename S>
void Columns(const GemmArgs& g, int64_t bi, int64_t t0, int64_t t1) {
  constexpr int kRows = S::kRows, kCols = S::kCols;
  const float* a = static_cast<const float*>(g.a) + bi * g.stride_a;
  const float* b = static_cast<const float*>(g.b) + bi * g.stride_b;
  float* c = static_cast<float*>(g.c) + bi * g.stride_c;
  for (int64_t k0 = 0; k0 < g.k; k0 += kChunk) {
    const int64_t k1 = std::min(g.k, k0 + kChunk);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t c0 = t * kCols;
      // the next tile read: this chunk's next one, or the next chunk's first
      const int64_t pf = t + 1 < t1 ? kCols : kChunk * g.ldb - (t1 - 1 - t0) * kCols;
      int64_t r = 0;
      if (g.m >= kRows) {
        SkinnyTile<S, kRows, true>(g, a, b, c, 0, c0, k0, k1, pf);
        r = kRows;
      }
      for (; r + kRows <= g.m; r += kRows) SkinnyTile<S, kRows>(g, a, b, c, r, c0, k0, k1);
      if (r == 0) {
        SkinnyRows<S, true>(g, a, b, c, 0, g.m, c0, k0, k1, pf);
      } else {
        SkinnyRows<S, false>(g, a, b, c, r, g.m - r, c0, k0, k1, pf);
      }
      if (k1 == g.k) GemmEpilogue(g, bi, 0, g.m, c0, c0 + kCols);
    }
  }
}

// Kernel policy skinny_gemm kWideTile: the wide tile for all m.
bool UseNarrow(const GemmArgs& g) {
  return g.m <= 32 && CurrentKernelPolicy().skinny_gemm != SkinnyGemm::kWideTile;
}

}  // namespace

int64_t SkinnyTileCols(const GemmArgs& g) { return UseNarrow(g) ? Narrow::kCols : Wide::kCols; }

void SkinnyColumns(const GemmArgs& g, int64_t bi, int64_t t0, int64_t t1) {
  if (UseNarrow(g)) return Columns<Narrow>(g, bi, t0, t1);
  Columns<Wide>(g, bi, t0, t1);
}

}  // namespace tf_disc
