// The bf16 fast-math GEMM (gemm_bf16.h).
//
// Why its own kernel: vdpbf16ps multiplies pairs of bf16 and adds both
// products to an fp32 lane, twice the multiply-adds per instruction of an
// fp32 FMA, and bf16 operands halve the bytes the kernel streams.  Layout
// follows the instruction: a 32-bit lane of A holds (A[i][k], A[i][k+1]) --
// which is simply A's row converted to bf16 in order -- and B is packed per
// 64-column group as, for each k pair, 64 interleaved (B[k][j], B[k+1][j]).
// A register tile holds 6 x 64 floats of C; k runs in chunks of 768 (C is
// loaded and stored once per chunk; 768 beat 256 by 5-10% in CPU time per
// GEMM at BERT shapes, 128 lost 15%), a B group's chunk (96 KiB) and a
// block of A (192 x 768 bf16) staying in L2.  Tasks (batch entry, row block,
// column block) run on the caller's parallel-for, i.e. TF's intra-op pool.
// When one batch entry is split into several tasks, A and B are first
// packed once, in parallel, into a grow-only buffer of the calling thread
// (packing per task converted the same operand rows 3-12 times: 30% of
// the time in a BERT profile); otherwise each task packs its own entry.
// B may come packed already (GemmArgs::packed_b: a weight that cannot
// change, packed once by PackBf16B in the same whole-k group layout), and
// is then not packed again.
//
// Where the tier is avx512_amx, AMX tiles (gemm_amx.h) multiply the same
// packed operands in 16-row blocks, and VDPBF16PS only the rows left over.
//
// The kernel functions carry a target attribute adding AVX512_BF16 (and
// AMX, in gemm_amx.cc) to the avx512 library's -march, and the
// instructions run only where the op library chose them (cpu_isa.h
// Bf16GemmPays, SelectedCpuTier).
#include "tf_disc/runtime/cpu/gemm_bf16.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm_amx.h"
#include "tf_disc/runtime/cpu/kernel_entry.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"

#ifdef DISC_BF16_KERNEL
#include <immintrin.h>
#endif

namespace tf_disc {

#ifdef DISC_BF16_KERNEL
namespace {

#define DISC_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

constexpr int kRows = 6;                   // register tile: kRows x kGroup floats
constexpr int kGroup = 64;                 // columns per packed B group (4 vectors)
constexpr int64_t kChunk = 768;            // k per pass (a multiple of 32)
constexpr int64_t kPairs = kChunk / 2;
constexpr int64_t kBlockRows = 192;        // rows of A packed at once
constexpr int64_t kTaskCols = 256;         // columns of C per task (4 groups)
constexpr int64_t kMinRows = 16;           // fewer rows: packing B costs more than it saves
constexpr int64_t kMinRowsPerTask = 48;
#ifdef DISC_AMX_KERNEL
static_assert(kGroup == kAmxGroupCols && kPairs <= kMaxPairs, "AMX reads the same packing");
#endif

// The products run on AMX tiles (the op library selected the avx512_amx
// tier, so this process holds the tile-data permission).
bool UseAmx() { return HostCpuTier() >= CpuTier::kAvx512Amx; }

// Rows per task are a multiple of this: whole register tiles, or whole
// pairs of AMX tiles.
int64_t RowUnit() { return UseAmx() ? 32 : kRows; }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Round to nearest even, as vcvtne2ps2bf16 (NaN stays NaN, quieted).
uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

DISC_BF16_TARGET inline __mmask16 TailMask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0)
                                                      : __mmask16((1u << left) - 1);
}

// dst[0, round_up(n, 32)) = bf16(src[0, n)), zero-padded.
DISC_BF16_TARGET void ConvertRun(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 lo = _mm512_maskz_loadu_ps(TailMask(n - i), src + i);
    const __m512 hi = _mm512_maskz_loadu_ps(TailMask(n - i - 16), src + i + 16);
    _mm512_storeu_si512(dst + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  }
}

struct alignas(64) Scratch {
  uint16_t a[kBlockRows * kChunk];                  // row i at a + i * kChunk
  uint16_t b[(kTaskCols / kGroup) * kPairs * kGroup * 2];  // group, pair, column, half
};

Scratch* ThreadScratch() {
  thread_local std::unique_ptr<Scratch> scratch(new Scratch);
  return scratch.get();
}

// Rows [r0, r0 + rows) x k [k0, k0 + kn) of op(A) into out, rows `stride`
// elements apart (stride >= kn rounded up to 32).
DISC_BF16_TARGET void PackA(const GemmArgs& g, const float* a, int64_t r0, int64_t rows,
                            int64_t k0, int64_t kn, uint16_t* out, int64_t stride) {
  for (int64_t i = 0; i < rows; ++i) {
    uint16_t* dst = out + i * stride;
    if (!g.trans_a) {
      ConvertRun(a + (r0 + i) * g.lda + k0, kn, dst);
      continue;
    }
    for (int64_t kk = 0; kk < kn; ++kk) dst[kk] = ToBf16(a[(k0 + kk) * g.lda + r0 + i]);
    for (int64_t kk = kn; kk < CeilDiv(kn, 32) * 32; ++kk) dst[kk] = 0;
  }
}

// dst[0, n) = bf16(src[0, n)), nothing written past n.
DISC_BF16_TARGET void ConvertExact(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 lo = _mm512_maskz_loadu_ps(TailMask(n - i), src + i);
    const __m512 hi = _mm512_maskz_loadu_ps(TailMask(n - i - 16), src + i + 16);
    const __mmask32 keep = n - i >= 32 ? ~__mmask32(0) : (__mmask32(1) << (n - i)) - 1;
    _mm512_mask_storeu_epi16(dst + i, keep,
                             reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  }
}

// In-register transpose of 16 x 16 32-bit elements: four stages, each
// swapping s-wide blocks between rows i and i + s (s = 8, 4, 2, 1).
struct Transpose16 {
  __m512i lo[4], hi[4];  // vpermt2d indices per stage
  DISC_BF16_TARGET Transpose16() {
    const __m512i c = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (int st = 0; st < 4; ++st) {
      const int s = 8 >> st;
      const __mmask16 upper = _mm512_test_epi32_mask(c, _mm512_set1_epi32(s));
      // Columns with bit s: row i takes row i + s's column c - s; columns
      // without it: row i + s takes row i's column c + s.
      lo[st] = _mm512_mask_blend_epi32(upper, c, _mm512_add_epi32(c, _mm512_set1_epi32(16 - s)));
      hi[st] = _mm512_mask_blend_epi32(upper, _mm512_add_epi32(c, _mm512_set1_epi32(s)),
                                       _mm512_add_epi32(c, _mm512_set1_epi32(16)));
    }
  }
  DISC_BF16_TARGET void operator()(__m512i r[16]) const {
    for (int st = 0; st < 4; ++st) {
      const int s = 8 >> st;
      for (int i = 0; i < 16; ++i) {
        if (i & s) continue;
        const __m512i x = r[i], y = r[i + s];
        r[i] = _mm512_permutex2var_epi32(x, lo[st], y);
        r[i + s] = _mm512_permutex2var_epi32(x, hi[st], y);
      }
    }
  }
};

// Columns [c0, c0 + cols) (cols <= kGroup) x k [k0, k0 + kn) of op(B) into
// the group at dst: for each k pair p, 64 x (B[2p][j], B[2p + 1][j]); k
// pairs past kn up to a multiple of 16 pairs are zero (the AMX tiles take
// 32 k at a time).
DISC_BF16_TARGET void PackB(const GemmArgs& g, const float* b, int64_t c0, int64_t cols,
                            int64_t k0, int64_t kn, uint16_t* dst) {
  const int64_t pairs = (kn + 1) / 2;
  if (!g.trans_b) {
    alignas(64) static const uint16_t kInterleave[32] = {
        0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
        8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_load_si512(kInterleave);
    for (int64_t p = 0; p < pairs; ++p) {
      const float* r0 = b + (k0 + 2 * p) * g.ldb + c0;
      const bool second = 2 * p + 1 < kn;
      for (int v = 0; v < kGroup / 16; ++v) {
        const __mmask16 m = TailMask(cols - 16 * v);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, r0 + 16 * v);
        const __m512 x1 = second ? _mm512_maskz_loadu_ps(m, r0 + g.ldb + 16 * v)
                                 : _mm512_setzero_ps();
        const __m512i both = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
        _mm512_store_si512(dst + p * 2 * kGroup + 32 * v,
                           _mm512_permutexvar_epi16(idx, both));
      }
    }
    const int64_t padded = CeilDiv(pairs, 16) * 16;
    std::memset(dst + pairs * 2 * kGroup, 0, (padded - pairs) * 2 * kGroup * sizeof(uint16_t));
    return;
  }
  // B stored n x k: column j of op(B) is a contiguous run, already in pairs;
  // 16 columns x 16 pairs are converted and transposed in registers (a
  // scalar scatter of the pairs cost 30% of the tile time at attention's
  // k = 64).  Pairs up to a multiple of 16 are written (zero past kn): the
  // layouts hold k rounded up to 32.
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  const Transpose16 transpose;
  for (int64_t p0 = 0; p0 < pairs; p0 += 16) {
    const int64_t left = kn - 2 * p0;
    for (int j0 = 0; j0 < kGroup; j0 += 16) {
      __m512i r[16];
      for (int j = 0; j < 16; ++j) {
        if (j0 + j >= cols) {
          r[j] = _mm512_setzero_si512();
          continue;
        }
        const float* src = b + (c0 + j0 + j) * g.ldb + k0 + 2 * p0;
        const __m512 lo = _mm512_maskz_loadu_ps(TailMask(left), src);
        const __m512 hi = _mm512_maskz_loadu_ps(TailMask(left - 16), src + 16);
        r[j] = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
      }
      transpose(r);
      for (int q = 0; q < 16; ++q) _mm512_store_si512(out + (p0 + q) * kGroup + j0, r[q]);
    }
  }
}

// C[0:R, 0:cols] (+)= A tile (R packed rows, a_pairs k pairs apart) x B
// group, NV vectors wide.  The loops over r and v are unrolled before the
// accumulators are placed: otherwise GCC keeps acc on the stack outside the
// k loop (a store and reload of every accumulator per tile, 10-20% of a
// tile at attention's k = 64); full-width tiles store without masks.
template <int R, int NV>
DISC_BF16_TARGET void Tile(const uint16_t* pa, int64_t a_pairs, const uint16_t* pb,
                           int64_t pairs, float* c, int64_t ldc, int64_t cols, bool first) {
  const uint32_t* a = reinterpret_cast<const uint32_t*>(pa);
  __mmask16 mask[NV];
  __m512 acc[R][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) mask[v] = TailMask(cols - 16 * v);
  if (first) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_maskz_loadu_ps(mask[v], c + r * ldc + 16 * v);
  }
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      bv[v] = reinterpret_cast<__m512bh>(_mm512_load_si512(pb + p * 2 * kGroup + 32 * v));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m512bh av =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r * a_pairs + p])));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  if (cols >= 16 * NV) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
    return;
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask[v], acc[r][v]);
}

using TileFn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, float*, int64_t,
                        int64_t, bool);

template <int R>
constexpr TileFn kRowTiles[4] = {Tile<R, 1>, Tile<R, 2>, Tile<R, 3>, Tile<R, 4>};

const TileFn* const kTiles[kRows] = {kRowTiles<1>, kRowTiles<2>, kRowTiles<3>,
                                     kRowTiles<4>, kRowTiles<5>, kRowTiles<6>};

// One k chunk into C rows [0, rows) x columns [c0, c1): packed A rows are
// a_pairs k pairs apart, B groups (the first at column c0) b_group apart.
// Where the tier has AMX, its tiles (gemm_amx.h) do it all.
DISC_BF16_TARGET void Tiles(const uint16_t* pa, int64_t a_pairs, int64_t rows,
                            const uint16_t* pb, int64_t b_group, int64_t pairs, float* c,
                            int64_t ldc, int64_t c0, int64_t c1, bool first) {
#ifdef DISC_AMX_KERNEL
  if (UseAmx()) {
    AmxBf16Tiles(pa, 2 * a_pairs, rows, pb, b_group, pairs, c + c0, ldc, c1 - c0, first);
    return;
  }
#endif
  for (int64_t gi = 0; gi * kGroup < c1 - c0; ++gi) {
    const int64_t gc = c0 + gi * kGroup, cols = std::min<int64_t>(kGroup, c1 - gc);
    const int nv = static_cast<int>((cols + 15) / 16);
    for (int64_t i = 0; i < rows; i += kRows) {
      const int r = static_cast<int>(std::min<int64_t>(kRows, rows - i));
      kTiles[r - 1][nv - 1](pa + i * 2 * a_pairs, a_pairs, pb + gi * b_group, pairs,
                            c + i * ldc + gc, ldc, cols, first);
    }
  }
}

// C rows [r0, r1) x columns [c0, c1) (c1 - c0 <= kTaskCols) of batch entry
// bi, packing its own operands (the plan gives each entry one task); B only
// when it does not come packed.
DISC_BF16_TARGET void RunTask(const GemmArgs& g, int64_t bi, int64_t r0, int64_t r1,
                              int64_t c0, int64_t c1) {
  Scratch* s = ThreadScratch();
  const float* a = static_cast<const float*>(g.a) + bi * g.stride_a;
  const float* b = static_cast<const float*>(g.b) + bi * g.stride_b;
  float* c = static_cast<float*>(g.c) + bi * g.stride_c;
  const Bf16PackedB* packed = g.packed_b;
  const uint16_t* pb =
      packed == nullptr ? s->b
                        : packed->data + (g.stride_b == 0 ? 0 : bi) * packed->entry +
                              (c0 / kGroup) * packed->group;
  const int64_t b_group = packed == nullptr ? kPairs * 2 * kGroup : packed->group;
  for (int64_t k0 = 0; k0 < g.k; k0 += kChunk) {
    const int64_t kn = std::min(kChunk, g.k - k0), pairs = (kn + 1) / 2;
    for (int64_t gi = 0; packed == nullptr && gi * kGroup < c1 - c0; ++gi) {
      const int64_t gc = c0 + gi * kGroup;
      PackB(g, b, gc, std::min<int64_t>(kGroup, c1 - gc), k0, kn,
            s->b + gi * kPairs * 2 * kGroup);
    }
    const uint16_t* chunk = packed == nullptr ? pb : pb + k0 * kGroup;
    for (int64_t rb = r0; rb < r1; rb += kBlockRows) {
      const int64_t rows = std::min(kBlockRows, r1 - rb);
      PackA(g, a, rb, rows, k0, kn, s->a, kChunk);
      Tiles(s->a, kPairs, rows, chunk, b_group, pairs, c + rb * g.ldc, g.ldc, c0, c1,
            k0 == 0);
    }
  }
}

// Operands packed once for the whole product (when tasks would otherwise
// pack the same rows of A or columns of B again): A as bf16 rows of
// `a_row` elements, B as groups of all k pairs; one copy of an operand
// broadcast over the batch (stride 0).
struct Packed {
  uint16_t* a;
  uint16_t* b;
  int64_t a_row, a_entry, b_group, b_entry;
};

// The calling thread's grow-only, 64-byte aligned buffer for Packed (the
// pool's workers read it while the call blocks in parallel_for).
uint16_t* PackBuffer(size_t elements) {
  struct Buffer {
    uint16_t* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buf;
  if (elements > buf.size) {
    std::free(buf.data);
    buf.data = static_cast<uint16_t*>(std::aligned_alloc(64, CeilDiv(elements * 2, 64) * 64));
    buf.size = buf.data != nullptr ? elements : 0;
  }
  return buf.data;
}

constexpr int64_t kPackRows = 32;  // rows of A per packing task

// Group gi (64 columns, all of k) of B's batch entry e into dst.
DISC_BF16_TARGET void PackBGroup(const GemmArgs& g, int64_t e, int64_t gi, uint16_t* dst) {
  const float* b = static_cast<const float*>(g.b) + e * g.stride_b;
  for (int64_t k0 = 0; k0 < g.k; k0 += kChunk) {
    PackB(g, b, gi * kGroup, std::min<int64_t>(kGroup, g.n - gi * kGroup), k0,
          std::min(kChunk, g.k - k0), dst + k0 * kGroup);
  }
}

// Packing tasks [begin, end): first kPackRows-row pieces of each A entry,
// then (unless B came packed) one 64-column group of each B entry.
DISC_BF16_TARGET void PackPieces(const GemmArgs& g, const Packed& p, int64_t a_pieces,
                                 int64_t begin, int64_t end) {
  const int64_t na = g.stride_a == 0 ? 1 : g.batch, groups = CeilDiv(g.n, kGroup);
  for (int64_t t = begin; t < end; ++t) {
    if (t < na * a_pieces) {
      const int64_t e = t / a_pieces, r0 = (t % a_pieces) * kPackRows;
      PackA(g, static_cast<const float*>(g.a) + e * g.stride_a, r0,
            std::min(kPackRows, g.m - r0), 0, g.k, p.a + e * p.a_entry + r0 * p.a_row,
            p.a_row);
      continue;
    }
    const int64_t e = (t - na * a_pieces) / groups, gi = (t - na * a_pieces) % groups;
    PackBGroup(g, e, gi, p.b + e * p.b_entry + gi * p.b_group);
  }
}

// Packs A and B (unless it came packed) in parallel; false (nothing done)
// when memory is short.
bool Prepack(const GemmArgs& g, int num_threads, const GemmParallelFor& parallel_for,
             Packed* p) {
  const Bf16PackedB* given = g.packed_b;
  const int64_t na = g.stride_a == 0 ? 1 : g.batch;
  const int64_t nb = given != nullptr ? 0 : g.stride_b == 0 ? 1 : g.batch;
  const int64_t kp2 = CeilDiv(g.k, 32) * 32, groups = CeilDiv(g.n, kGroup);
  p->a_row = kp2;
  p->a_entry = g.m * kp2;
  p->b_group = given != nullptr ? given->group : kp2 * kGroup;
  p->b_entry = given != nullptr ? given->entry : groups * p->b_group;
  uint16_t* buf = PackBuffer(size_t(na * p->a_entry + nb * p->b_entry));
  if (buf == nullptr) return false;
  p->a = buf;
  p->b = given != nullptr ? given->data : buf + na * p->a_entry;
  const int64_t a_pieces = CeilDiv(g.m, kPackRows), pieces = na * a_pieces + nb * groups;
  auto body = [&](int64_t begin, int64_t end) { PackPieces(g, *p, a_pieces, begin, end); };
  if (num_threads <= 1) {
    body(0, pieces);
  } else {
    parallel_for(pieces, kPackRows * g.k / 4 + 1, body);
  }
  return true;
}

// C rows [0, rows) x columns [c0, c1) from packed A rows (a_row apart)
// and packed B groups (b_group apart, the first at column c0).
DISC_BF16_TARGET void PackedRows(const uint16_t* pa, int64_t a_row, int64_t rows, int64_t k,
                                 const uint16_t* pb, int64_t b_group, float* c, int64_t ldc,
                                 int64_t c0, int64_t c1) {
  for (int64_t rb = 0; rb < rows; rb += kBlockRows) {
    const int64_t n = std::min(kBlockRows, rows - rb);
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int64_t pairs = (std::min(kChunk, k - k0) + 1) / 2;
      Tiles(pa + rb * a_row + k0, a_row / 2, n, pb + k0 * kGroup, b_group, pairs,
            c + rb * ldc, ldc, c0, c1, k0 == 0);
    }
  }
}

// C rows [r0, r1) x columns [c0, c1) of batch entry bi from Packed operands.
DISC_BF16_TARGET void RunPackedTask(const GemmArgs& g, const Packed& p, int64_t bi, int64_t r0,
                                    int64_t r1, int64_t c0, int64_t c1) {
  const uint16_t* pa = p.a + (g.stride_a == 0 ? 0 : bi) * p.a_entry;
  const uint16_t* pb = p.b + (g.stride_b == 0 ? 0 : bi) * p.b_entry + (c0 / kGroup) * p.b_group;
  float* c = static_cast<float*>(g.c) + bi * g.stride_c;
  PackedRows(pa + r0 * p.a_row, p.a_row, r1 - r0, g.k, pb, p.b_group, c + r0 * g.ldc, g.ldc,
             c0, c1);
}

bool Run(const GemmArgs& g, int num_threads, const GemmParallelFor& parallel_for) {
  const int64_t col_step = std::min(g.n, kTaskCols);
  const int64_t col_blocks = CeilDiv(g.n, col_step);
  int64_t row_blocks = 1;
  const int64_t want = 8 * int64_t(num_threads);
  if (num_threads > 1 && g.batch * col_blocks < want) {
    row_blocks = std::max<int64_t>(
        1, std::min(CeilDiv(want, g.batch * col_blocks), g.m / kMinRowsPerTask));
  }
  const int64_t row_step =
      std::min(g.m, CeilDiv(CeilDiv(g.m, row_blocks), RowUnit()) * RowUnit());
  row_blocks = CeilDiv(g.m, row_step);
  const int64_t per_batch = row_blocks * col_blocks, tasks = g.batch * per_batch;
  // Several tasks per batch entry would pack the same operand rows again.
  Packed packed{};
  const bool prepacked = per_batch > 1;
  if (prepacked && !Prepack(g, num_threads, parallel_for, &packed)) return false;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / per_batch, rb = (t % per_batch) / col_blocks,
                    cb = t % col_blocks;
      const int64_t r0 = rb * row_step, r1 = std::min(g.m, r0 + row_step);
      const int64_t c0 = cb * col_step, c1 = std::min(g.n, c0 + col_step);
      if (prepacked) {
        RunPackedTask(g, packed, bi, r0, r1, c0, c1);
      } else {
        RunTask(g, bi, r0, r1, c0, c1);
      }
    }
  };
  const double flops = 2.0 * g.batch * g.m * g.n * g.k;
  if (num_threads <= 1 || tasks == 1 || flops < 4e5) {
    body(0, tasks);
  } else {
    parallel_for(tasks, static_cast<int64_t>(flops / tasks / 32) + 1, body);
  }
  return true;
}

}  // namespace

bool Bf16GemmAvailable() {
  // The op library's choice (Bf16GemmPays: the tier includes AVX512_BF16
  // and the CPU runs it faster than FP32); kernel policy bf16_gemm kOn runs
  // the kernel wherever the tier allows, kOff nowhere.
  switch (CurrentKernelPolicy().bf16_gemm) {
    case PathChoice::kOn:
      return HostCpuTier() >= CpuTier::kAvx512Bf16;
    case PathChoice::kOff:
      return false;
    case PathChoice::kAuto:
      break;
  }
  return HostBf16Gemm();
}

bool Bf16GemmApplies(const GemmArgs& g) {
  if ((g.dtype & ~DISC_GEMM_FAST_BF16) != DISC_DTYPE_FLOAT || !Bf16GemmAvailable()) return false;
  // AMX multiplies a packed weight by any number of rows faster than fp32
  // (half the bytes of B to stream); VDPBF16PS needs kMinRows.
  return (g.m >= kMinRows || UseAmx()) && g.m > 0 && g.batch > 0 && g.n > 0 && g.k > 0;
}

bool RunGemmBf16(const GemmArgs& g, int num_threads, const GemmParallelFor& parallel_for) {
  if (g.dtype != DISC_DTYPE_FLOAT || !Bf16GemmApplies(g)) return false;
  // Packing B for fewer rows costs more than the kernel saves.
  if (g.packed_b == nullptr && g.m < kMinRows) return false;
  return Run(g, num_threads, parallel_for);
}

void ConvertToBf16(const float* src, int64_t n, uint16_t* dst) { ConvertExact(src, n, dst); }

void Bf16RowsTimesPackedB(const uint16_t* a, int64_t a_row, int64_t rows, int64_t k,
                          const Bf16PackedB& b, int64_t c0, int64_t c1, float* c, int64_t ldc) {
  for (int64_t cb = c0; cb < c1; cb += kTaskCols) {
    PackedRows(a, a_row, rows, k, b.data + (cb / kGroup) * b.group, b.group, c, ldc, cb,
               std::min(c1, cb + kTaskCols));
  }
}

std::unique_ptr<Bf16PackedB> PackBf16B(const GemmArgs& g, int num_threads,
                                       const GemmParallelFor& parallel_for) {
  if (!Bf16GemmApplies(g)) return nullptr;
  const int64_t nb = g.stride_b == 0 ? 1 : g.batch, groups = CeilDiv(g.n, kGroup);
  const int64_t group = CeilDiv(g.k, 32) * 32 * kGroup, entry = groups * group;
  const size_t bytes = size_t(nb * entry) * sizeof(uint16_t);
  auto* data = static_cast<uint16_t*>(std::aligned_alloc(64, CeilDiv(bytes, 64) * 64));
  if (data == nullptr) return nullptr;
  auto packed = std::make_unique<Bf16PackedB>(data, bytes, group, entry);
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      PackBGroup(g, t / groups, t % groups, data + (t / groups) * entry + (t % groups) * group);
    }
  };
  if (num_threads <= 1 || nb * groups == 1) {
    body(0, nb * groups);
  } else {
    parallel_for(nb * groups, kGroup * g.k / 4 + 1, body);
  }
  return packed;
}

#else  // no compiler support: the fp32 path runs

bool Bf16GemmAvailable() { return false; }

bool Bf16GemmApplies(const GemmArgs&) { return false; }

bool RunGemmBf16(const GemmArgs&, int, const GemmParallelFor&) { return false; }

std::unique_ptr<Bf16PackedB> PackBf16B(const GemmArgs&, int, const GemmParallelFor&) {
  return nullptr;
}

#endif  // DISC_BF16_KERNEL

Bf16PackedB::Bf16PackedB(uint16_t* data, size_t bytes, int64_t group, int64_t entry)
    : data(data), bytes(bytes), group(group), entry(entry) {}


}  // namespace tf_disc
