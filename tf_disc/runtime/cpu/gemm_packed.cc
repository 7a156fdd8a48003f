#include "tf_disc/runtime/cpu/gemm_packed.h"

#include <algorithm>
#include <cstdlib>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace tf_disc {

#ifdef __AVX512F__
namespace {

constexpr int64_t kMr = 14;     // rows of the register tile: 14 x 2 zmm accumulators
constexpr int kNr = 32;         // columns of the register tile (2 zmm)
constexpr int kAp = 16;         // floats per k in a packed A micro-panel (kMr used)
constexpr int64_t kKc = 384;    // k per packed block: a packed A micro-panel is 24 KiB (L1)
constexpr int64_t kNc = 192;    // columns per task: a packed B block is <= 288 KiB (L2);
                                // 768 = 4 blocks, an even split on 2 threads
constexpr int64_t kMinRows = 28;  // rows per task at least (two register tiles)
constexpr int kPrefetch = 16 * kNr;  // floats of B ahead, into L1: 16 steps of k
static_assert(kNc % (3 * kNr) == 0, "RunPackedGemm's narrow tasks are thirds of a block");

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A 64-byte aligned per-thread buffer (0: packed B, 1: packed A, 2: all of
// A packed by the calling thread for its tasks), grown on demand.
float* Scratch(int which, int64_t floats) {
  struct Buf {
    float* p = nullptr;
    int64_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[3];
  Buf& b = bufs[which];
  if (b.n < floats) {
    std::free(b.p);
    b.n = CeilDiv(floats, 16) * 16;
    b.p = static_cast<float*>(std::aligned_alloc(64, b.n * sizeof(float)));
  }
  return b.p;
}

__mmask16 TailMask(int64_t cols) {  // the first min(cols, 16) lanes (cols may be <= 0)
  return cols >= 16 ? __mmask16(0xFFFF) : cols <= 0 ? __mmask16(0) : __mmask16((1u << cols) - 1);
}

// In-register transpose: r[t] becomes column t of the 16 x 16 block r.
void Transpose16(__m512 r[16]) {
  __m512 a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // b[4i + e], lane l: rows 4i..4i+3, element 4l + e
    b[4 * i] = _mm512_shuffle_ps(a[4 * i], a[4 * i + 2], 0x44);
    b[4 * i + 1] = _mm512_shuffle_ps(a[4 * i], a[4 * i + 2], 0xEE);
    b[4 * i + 2] = _mm512_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0x44);
    b[4 * i + 3] = _mm512_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0xEE);
  }
  for (int e = 0; e < 4; ++e) {
    const __m512 u0 = _mm512_shuffle_f32x4(b[e], b[4 + e], 0x88);
    const __m512 u1 = _mm512_shuffle_f32x4(b[e], b[4 + e], 0xDD);
    const __m512 u2 = _mm512_shuffle_f32x4(b[8 + e], b[12 + e], 0x88);
    const __m512 u3 = _mm512_shuffle_f32x4(b[8 + e], b[12 + e], 0xDD);
    r[e] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    r[4 + e] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    r[8 + e] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
    r[12 + e] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
  }
}

// A kc x (16 * halves) panel (row-major) from w (<= 16 * halves) rows of
// src (src[j * ld + kk]), zero columns from w on.
void PackTransposed(const float* src, int64_t ld, int64_t kc, int64_t w, int halves, float* dst) {
  __m512 r[16];
  const int64_t width = 16 * halves;
  for (int half = 0; half < halves; ++half) {
    for (int64_t kk = 0; kk < kc; kk += 16) {
      const int64_t nk = std::min<int64_t>(16, kc - kk);
      const __mmask16 km = TailMask(nk);
      for (int j = 0; j < 16; ++j) {
        const int64_t col = half * 16 + j;
        r[j] = col < w ? _mm512_maskz_loadu_ps(km, src + col * ld + kk) : _mm512_setzero_ps();
      }
      Transpose16(r);
      for (int t = 0; t < nk; ++t) _mm512_store_ps(dst + (kk + t) * width + half * 16, r[t]);
    }
  }
}

// Packs op(B)[k0:k0+kc, c0:c0+cols] into ceil(cols/kNr) panels of kc x kNr
// (row-major, zero columns past `cols`).
void PackB(const GemmArgs& g, const float* b, int64_t k0, int64_t kc, int64_t c0, int64_t cols,
           float* out) {
  for (int64_t p = 0; p * kNr < cols; ++p) {
    const int64_t j0 = c0 + p * kNr, w = std::min<int64_t>(kNr, cols - p * kNr);
    float* dst = out + p * kc * kNr;
    if (!g.trans_b) {
      const __mmask16 m0 = TailMask(w), m1 = TailMask(w - 16);
      for (int64_t kk = 0; kk < kc; ++kk) {
        const float* src = b + (k0 + kk) * g.ldb + j0;
        _mm512_store_ps(dst + kk * kNr, _mm512_maskz_loadu_ps(m0, src));
        _mm512_store_ps(dst + kk * kNr + 16, _mm512_maskz_loadu_ps(m1, src + 16));
      }
    } else {  // element (kk, j) at b[j * ldb + kk]: B^T's rows, 16 x 16 transposes
      PackTransposed(b + j0 * g.ldb + k0, g.ldb, kc, w, 2, dst);
    }
  }
}

// Packs op(A)[r0:r0+rows, k0:k0+kc] (rows <= kMr) as kc rows of kAp floats.
// A is packed although the kernel could broadcast from it in place: with
// lda a multiple of 1024 floats (FFN down, k = 3072) the tile's rows all map
// to one L1 set and evict each other.
void PackA(const GemmArgs& g, const float* a, int64_t r0, int rows, int64_t k0, int64_t kc,
           float* out) {
  if (!g.trans_a) return PackTransposed(a + r0 * g.lda + k0, g.lda, kc, rows, 1, out);
  const __mmask16 m = TailMask(rows);  // element (i, kk) at a[kk * lda + i]
  for (int64_t kk = 0; kk < kc; ++kk) {
    _mm512_store_ps(out + kk * kAp, _mm512_maskz_loadu_ps(m, a + (k0 + kk) * g.lda + r0));
  }
}

// C[0:R, 0:32] (+)= Ap Bp over kc: R x 2 accumulators, A broadcast from its
// packed micro-panel (in L1 across B's panels), B's packed panel row loaded
// as two zmm, kPrefetch ahead prefetched (B packed once streams from memory
// when m is small).  Columns outside the masks are neither read nor written.
template <int R>
void Micro(int64_t kc, const float* ap, int64_t a_row, int64_t a_k, const float* bp, float* c,
           int64_t ldc, bool accumulate, __mmask16 m0, __mmask16 m1, const char* pf,
           int64_t npf) {
  __m512 c0[R], c1[R];
#pragma GCC unroll 14
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t kk = 0; kk < kc; ++kk) {
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetch), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetch + 16), _MM_HINT_T0);
    if (kk < npf) _mm_prefetch(pf + 64 * kk, _MM_HINT_T0);
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
#pragma GCC unroll 14
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(ap[r * a_row]);
      c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
    }
    ap += a_k;
    bp += kNr;
  }
#pragma GCC unroll 14
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    if (accumulate) {
      c0[r] = _mm512_add_ps(c0[r], _mm512_maskz_loadu_ps(m0, cr));
      c1[r] = _mm512_add_ps(c1[r], _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    _mm512_mask_storeu_ps(cr, m0, c0[r]);
    _mm512_mask_storeu_ps(cr + 16, m1, c1[r]);
  }
}

using MicroFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, float*, int64_t,
                         bool, __mmask16, __mmask16, const char*, int64_t);
constexpr MicroFn kMicro[kMr + 1] = {nullptr,   Micro<1>,  Micro<2>,  Micro<3>, Micro<4>,
                                     Micro<5>,  Micro<6>,  Micro<7>,  Micro<8>, Micro<9>,
                                     Micro<10>, Micro<11>, Micro<12>, Micro<13>, Micro<14>};

// Whether the kernel broadcasts op(A) from its rows in place instead of a
// packed copy: short rows (k <= kDirectMaxK) of a row-major A, whose
// leading dimension does not map the tile's rows to few L1 sets (PackA).
constexpr int64_t kDirectMaxK = 256;
bool DirectA(const GemmArgs& g) { return !g.trans_a && g.k <= kDirectMaxK && g.lda % 256 != 0; }

// k per block for a GEMM of depth k: blocks of at most kKc, evened out.
int64_t KBlock(int64_t k) { return CeilDiv(k, CeilDiv(k, kKc)); }

// Where the panel of column c0 (a multiple of kNr) for the k block from k0
// (kc long) of batch entry bi lies in a pre-packed B: column block by column
// block (kNc), its k blocks in order, each as Block packs it per call (kc x
// kNr panels), so that a task reads one contiguous run.
const float* PackedPanel(const Fp32PackedB& pre, const GemmArgs& g, int64_t bi, int64_t c0,
                         int64_t k0, int64_t kc) {
  const int64_t block = c0 / kNc * kNc, panels = CeilDiv(std::min(kNc, g.n - block), kNr);
  return pre.data + (g.stride_b == 0 ? 0 : bi) * pre.entry + block * g.k +
         k0 * panels * kNr + (c0 - block) / kNr * kc * kNr;
}

// A task's piece of C: rows r0:r1, columns c0:c1 (c1 - c0 <= kNc) of batch
// entry bi.
struct Piece {
  int64_t bi, r0, r1, c0, c1;
};

// Cache lines to prefetch while a register tile row is computed: what the
// next one (or the next task) reads first.  A, B and C of a batch entry
// come from memory when the batch is large (96 attention heads: 12 MiB),
// and the hardware prefetcher stops at every 4 KiB page, so each row of a
// packing or of C's tile started with a miss (perf: the packing took 29% at
// k = 64).  The kernel prefetches one line per step of k.
class Lines {
 public:
  // The lines of a rows x cols block of floats (row stride ld): one run per
  // row, or one for all when the rows are contiguous.
  void Add(const float* base, int64_t rows, int64_t ld, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    if (ld == cols) {
      cols *= rows;
      rows = 1;
    }
    for (int64_t r = 0; r < rows && n_ < kCap; ++r) {
      const uintptr_t from = reinterpret_cast<uintptr_t>(base + r * ld) & ~uintptr_t(63);
      const uintptr_t to = reinterpret_cast<uintptr_t>(base + r * ld + cols);
      run_[n_++] = Run{reinterpret_cast<const char*>(from), int64_t((to - from + 63) / 64)};
      total_ += run_[n_ - 1].lines;
    }
  }
  void Clear() { n_ = next_ = total_ = 0; }
  int64_t total() const { return total_; }
  // Up to `want` lines: the first run of them for the kernel (*start,
  // returned count), the others prefetched here (all of them when start is
  // null).
  int64_t Take(int64_t want, const char** start) {
    int64_t first = 0;
    const char* none = nullptr;
    const char** head = start != nullptr ? start : &none;
    *head = nullptr;
    while (want > 0 && next_ < n_) {
      Run& r = run_[next_];
      const int64_t take = std::min(want, r.lines);
      if (start != nullptr && *start == nullptr) {
        *start = r.p;
        first = take;
      } else {
        for (int64_t l = 0; l < take; ++l) _mm_prefetch(r.p + 64 * l, _MM_HINT_T0);
      }
      r.p += 64 * take;
      r.lines -= take;
      want -= take;
      if (r.lines == 0) ++next_;
    }
    return first;
  }

 private:
  struct Run {
    const char* p;
    int64_t lines;
  };
  static constexpr int64_t kCap = 64;
  Run run_[kCap];
  int64_t n_ = 0, next_ = 0, total_ = 0;
};

// op(A)[r:r+rows, k0:k0+kc] of batch entry bi, into lines.
void AddA(const GemmArgs& g, int64_t bi, int64_t r, int64_t rows, int64_t k0, int64_t kc,
          Lines* lines) {
  const float* a = static_cast<const float*>(g.a) + bi * g.stride_a;
  if (g.trans_a) return lines->Add(a + k0 * g.lda + r, kc, g.lda, rows);
  lines->Add(a + r * g.lda + k0, rows, g.lda, kc);
}

// op(B)[k0:k0+kc, c0:c1] of batch entry bi, rows [from, to) of its `of`
// equal shares (B's rows: columns of op(B) when transposed, else k).
void AddB(const GemmArgs& g, const Piece& t, int64_t k0, int64_t kc, int64_t share, int64_t of,
          Lines* lines) {
  const float* b = static_cast<const float*>(g.b) + t.bi * g.stride_b;
  const int64_t rows = g.trans_b ? t.c1 - t.c0 : kc;
  const int64_t from = rows * share / of, to = rows * (share + 1) / of;
  if (g.trans_b) return lines->Add(b + (t.c0 + from) * g.ldb + k0, to - from, g.ldb, kc);
  lines->Add(b + (k0 + from) * g.ldb + t.c0, to - from, g.ldb, t.c1 - t.c0);
}

void AddC(const GemmArgs& g, int64_t bi, int64_t r, int64_t rows, int64_t c0, int64_t c1,
          Lines* lines) {
  lines->Add(static_cast<const float*>(g.c) + bi * g.stride_c + r * g.ldc + c0, rows, g.ldc,
             c1 - c0);
}

// What to prefetch (into lines) while row tile r of piece t computes k
// block k0:k0+kc, B packed per call: the next row tile's A (when not
// shared) and C, a share of B's next k block or else of the next piece's B,
// and in the last row tile the next piece's first A and C.
void PlanPrefetch(const GemmArgs& g, const Piece& t, const Piece* next, int64_t r, int64_t k0,
                  int64_t kc, bool own_a, Lines* lines) {
  lines->Clear();
  const int64_t kc_max = KBlock(g.k), rn = r + kMr, tile = (r - t.r0) / kMr;
  const int64_t tiles = CeilDiv(t.r1 - t.r0, kMr);
  const bool last = k0 + kc == g.k;
  if (rn < t.r1) {
    const int64_t rows = std::min(kMr, t.r1 - rn);
    if (own_a) AddA(g, t.bi, rn, rows, k0, kc, lines);
    AddC(g, t.bi, rn, rows, t.c0, t.c1, lines);
  }
  if (!last) return AddB(g, t, k0 + kc, std::min(kc_max, g.k - k0 - kc), tile, tiles, lines);
  if (next == nullptr) return;
  AddB(g, *next, 0, kc_max, tile, tiles, lines);
  if (rn < t.r1) return;
  const int64_t rows = std::min(kMr, next->r1 - next->r0);
  if (own_a) AddA(g, next->bi, next->r0, rows, 0, kc_max, lines);
  AddC(g, next->bi, next->r0, rows, next->c0, next->c1, lines);
}

// C of piece t, then its epilogue one row panel at a time while that panel
// is in cache; `next` (may be null) is the piece this thread computes next,
// whose first reads are prefetched.  B's k block comes from g.packed_b32
// when set (c0 a multiple of kNr, c0:c1 within one column block), else is
// packed here; A's from all_a (SharedA) when set (r0 a multiple of kMr),
// else is packed here or read in place (DirectA).
void Block(const GemmArgs& g, const Piece& t, const Piece* next, const float* all_a) {
  const int64_t bi = t.bi, r0 = t.r0, r1 = t.r1, c0 = t.c0, c1 = t.c1;
  const float* a = static_cast<const float*>(g.a) + bi * g.stride_a;
  const float* b = static_cast<const float*>(g.b) + bi * g.stride_b;
  float* c = static_cast<float*>(g.c) + bi * g.stride_c;
  const Fp32PackedB* pre = g.packed_b32;
  const int64_t cols = c1 - c0, panels = CeilDiv(cols, kNr);
  const int64_t kc_max = KBlock(g.k);
  float* bp = pre != nullptr ? nullptr : Scratch(0, kc_max * panels * kNr);
  const bool direct_a = all_a == nullptr && DirectA(g);
  float* a_buf = all_a != nullptr || direct_a ? nullptr : Scratch(1, kc_max * kAp);
  const float* a_tiles =
      all_a == nullptr ? nullptr
                       : all_a + (g.stride_a == 0 ? 0 : bi) * CeilDiv(g.m, kMr) * g.k * kAp;
  thread_local Lines lines;
  for (int64_t k0 = 0; k0 < g.k; k0 += kc_max) {
    const int64_t kc = std::min(kc_max, g.k - k0);
    const bool accumulate = k0 > 0, last = k0 + kc == g.k;
    const float* bk = pre != nullptr ? PackedPanel(*pre, g, bi, c0, k0, kc) : bp;
    if (pre == nullptr) PackB(g, b, k0, kc, c0, cols, bp);
    for (int64_t r = r0; r < r1; r += kMr) {
      const int rows = static_cast<int>(std::min<int64_t>(kMr, r1 - r));
      if (pre == nullptr) PlanPrefetch(g, t, next, r, k0, kc, all_a == nullptr, &lines);
      const float* ap = a_buf;
      int64_t a_row = 1, a_k = kAp;
      if (direct_a) {
        ap = a + r * g.lda + k0;
        a_row = g.lda;
        a_k = 1;
      } else if (all_a == nullptr) {
        PackA(g, a, r, rows, k0, kc, a_buf);
      } else {
        ap = a_tiles + (r / kMr) * g.k * kAp + k0 * kAp;
      }
      const int64_t share = CeilDiv(lines.total(), panels);
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t left = cols - p * kNr;
        const char* pf;
        const int64_t npf = lines.Take(std::min(share, kc), &pf);
        kMicro[rows](kc, ap, a_row, a_k, bk + p * kc * kNr, c + r * g.ldc + c0 + p * kNr, g.ldc,
                     accumulate, TailMask(left), TailMask(left - 16), pf, npf);
        if (share > kc) lines.Take(share - kc, nullptr);
      }
      if (last) GemmEpilogue(g, bi, r, r + rows, c0, c1);
    }
  }
}

// With B packed once, narrow column tasks would each pack the same rows of
// A again (12 times for a 768-wide product: a tenth of the work at m = 8):
// all of A, packed once by the caller as kMr-row tiles of k x kAp (batch
// entries after each other), when that takes at most kSharedAFloats; else null.
constexpr int64_t kSharedAFloats = int64_t(2) << 20;  // 8 MiB

const float* SharedA(const GemmArgs& g, int num_threads, const GemmParallelFor& parallel_for) {
  const int64_t tiles = CeilDiv(g.m, kMr), entries = g.stride_a == 0 ? 1 : g.batch;
  const int64_t tile = g.k * kAp;
  if (entries * tiles * tile > kSharedAFloats) return nullptr;
  float* all = Scratch(2, entries * tiles * tile);
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t e = t / tiles, r = (t % tiles) * kMr;
      PackA(g, static_cast<const float*>(g.a) + e * g.stride_a, r,
            static_cast<int>(std::min<int64_t>(kMr, g.m - r)), 0, g.k, all + t * tile);
    }
  };
  if (num_threads <= 1 || entries * tiles == 1) {
    body(0, entries * tiles);
  } else {
    parallel_for(entries * tiles, 4 * tile + 1, body);
  }
  return all;
}

}  // namespace

bool PackedGemmAvailable() { return true; }

void RunPackedGemm(const GemmArgs& g, int num_threads, const GemmParallelFor& parallel_for) {
  // Small problems: one thread hop costs more than the work.
  const double flops = 2.0 * g.batch * g.m * g.n * g.k;
  const int threads = flops < 4e5 ? 1 : num_threads;
  // Column blocks of kNc; with B packed once and too few blocks and rows to
  // split, thirds of them (B needs no packing per task, so narrow tasks cost
  // nothing more when A is short: a task per 64 columns at m = 8).
  const int64_t want = 4 * int64_t(std::max(1, num_threads));
  int64_t cstep = kNc;
  if (g.packed_b32 != nullptr &&
      g.batch * CeilDiv(g.n, kNc) * std::max<int64_t>(1, g.m / kMinRows) < 2 * want) {
    cstep = kNc / 3;
  }
  const int64_t col_blocks = CeilDiv(g.n, cstep);
  // Enough tasks for load balance on a shared machine (4 per thread), row
  // blocks on multiples of the register tile and at least kMinRows tall.
  int64_t row_blocks = 1;
  if (g.batch * col_blocks < want) {
    row_blocks = std::min(CeilDiv(want, g.batch * col_blocks),
                          std::max<int64_t>(1, g.m / kMinRows));
  }
  const int64_t rstep = std::min(g.m, CeilDiv(CeilDiv(g.m, row_blocks), kMr) * kMr);
  row_blocks = CeilDiv(g.m, rstep);
  const int64_t per_batch = row_blocks * col_blocks, tasks = g.batch * per_batch;
  const float* all_a =
      g.packed_b32 != nullptr && col_blocks > 1 ? SharedA(g, threads, parallel_for) : nullptr;
  auto piece = [&](int64_t i) {
    const int64_t bi = i / per_batch, rb = (i % per_batch) / col_blocks, cb = i % col_blocks;
    return Piece{bi, rb * rstep, std::min(g.m, (rb + 1) * rstep), cb * cstep,
                 std::min(g.n, (cb + 1) * cstep)};
  };
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const Piece next = piece(i + 1);
      Block(g, piece(i), i + 1 < end ? &next : nullptr, all_a);
    }
  };
  if (threads <= 1 || tasks == 1) return run(0, tasks);
  parallel_for(tasks, static_cast<int64_t>(flops / tasks / 32) + 1, run);
}

std::unique_ptr<Fp32PackedB> PackFp32B(const GemmArgs& g, int num_threads,
                                       const GemmParallelFor& parallel_for) {
  if (g.batch <= 0 || g.n <= 0 || g.k <= 0 || g.b == nullptr) return nullptr;
  const int64_t entries = g.stride_b == 0 ? 1 : g.batch, blocks = CeilDiv(g.n, kNc);
  const int64_t entry = CeilDiv(g.n, kNr) * kNr * g.k, kc_max = KBlock(g.k);
  const size_t bytes = size_t(entries * entry) * sizeof(float);
  auto* data = static_cast<float*>(std::aligned_alloc(64, CeilDiv(bytes, 64) * 64));
  if (data == nullptr) return nullptr;
  auto packed = std::make_unique<Fp32PackedB>(data, bytes, entry);
  auto body = [&](int64_t begin, int64_t end) {  // one task per (entry, column block)
    for (int64_t t = begin; t < end; ++t) {
      const int64_t e = t / blocks, c0 = (t % blocks) * kNc, cols = std::min(kNc, g.n - c0);
      const float* b = static_cast<const float*>(g.b) + e * g.stride_b;
      float* out = data + e * entry + c0 * g.k;
      for (int64_t k0 = 0; k0 < g.k; k0 += kc_max) {
        const int64_t kc = std::min(kc_max, g.k - k0);
        PackB(g, b, k0, kc, c0, cols, out + k0 * CeilDiv(cols, kNr) * kNr);
      }
    }
  };
  const int64_t tasks = entries * blocks;
  if (num_threads <= 1 || tasks == 1) {
    body(0, tasks);
  } else {
    parallel_for(tasks, kNc * g.k + 1, body);
  }
  return packed;
}

#else  // no AVX-512: RunGemm keeps Eigen

bool PackedGemmAvailable() { return false; }

void RunPackedGemm(const GemmArgs&, int, const GemmParallelFor&) { std::abort(); }

std::unique_ptr<Fp32PackedB> PackFp32B(const GemmArgs&, int, const GemmParallelFor&) {
  return nullptr;
}

#endif

Fp32PackedB::Fp32PackedB(float* data, size_t bytes, int64_t entry)
    : data(data), bytes(bytes), entry(entry) {}


}  // namespace tf_disc
