// The AMX micro-kernel of the bf16 GEMM (gemm_amx.h).
//
// Eight tiles, all 16 rows x 64 bytes: four fp32 C tiles (a 32 x 32 block
// of C), two A tiles (16 rows x 32 k each) and two B tiles (16 k pairs x 16
// columns each); each step of 32 k loads 4 KiB and issues four TDPBF16PS,
// the usual AMX blocking (oneDNN's brgemm uses the same 2 x 2).  C stays in
// tiles over the whole k range the caller passes and is written once.
// TDPBF16PS flushes denormal inputs and outputs to zero and rounds to
// nearest even whatever MXCSR says: results are within the bf16 kernel's
// documented bound (gemm_bf16.h), not bitwise equal to the VDPBF16PS path.
#include "tf_disc/runtime/cpu/gemm_amx.h"

#ifdef DISC_AMX_KERNEL

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace tf_disc {
namespace {

#define DISC_AMX_TARGET __attribute__((target("amx-tile,amx-bf16")))

// The tile numbers (the intrinsics take them as literal tokens).
#define DISC_C00 0
#define DISC_C01 1
#define DISC_C10 2
#define DISC_C11 3
#define DISC_A0 4
#define DISC_A1 5
#define DISC_B0 6
#define DISC_B1 7

constexpr int kTileRows = 16;
constexpr int kTileBytes = 64;      // per tile row: 16 fp32 or 32 bf16
constexpr int kTileCols = 16;       // fp32 columns of a C tile
constexpr int64_t kTilePairs = 16;  // k pairs of an A or B tile
constexpr int64_t kBRowBytes = kAmxGroupCols * 2 * 2;  // one k pair of a B group

// The tile intrinsics declare no memory input (LDTILECFG: 8 of its 64
// bytes): ordinary stores they depend on must not move past them.
inline void MemoryBarrier() { __asm__ volatile("" ::: "memory"); }

// Palette 1 (the only one): the 64-byte block LDTILECFG reads.
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

DISC_AMX_TARGET void ConfigureTiles() {
  TileConfig cfg;
  std::memset(&cfg, 0, sizeof(cfg));
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = kTileBytes;
    cfg.rows[t] = kTileRows;
  }
  MemoryBarrier();
  _tile_loadconfig(&cfg);
}

// A C tile with fewer than 16 valid rows or columns goes through a 16 x 16
// staging block (zero past them; only the valid part is written back).
void StageIn(const float* c, int64_t ldc, int64_t rows, int64_t cols, float* stage) {
  std::memset(stage, 0, kTileRows * kTileCols * sizeof(float));
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(stage + r * kTileCols, c + r * ldc, cols * sizeof(float));
  }
  MemoryBarrier();
}

void StageOut(const float* stage, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(c + r * ldc, stage + r * kTileCols, cols * sizeof(float));
  }
}

#define DISC_LOAD_C(T, ptr, rows, cols)                        \
  if (first) {                                                 \
    _tile_zero(T);                                             \
  } else if ((rows) >= kTileRows && (cols) >= kTileCols) {     \
    _tile_loadd(T, ptr, ldc * sizeof(float));                  \
  } else {                                                     \
    StageIn(ptr, ldc, std::min<int64_t>(rows, kTileRows),      \
            std::min<int64_t>(cols, kTileCols), stage);        \
    _tile_loadd(T, stage, kTileBytes);                         \
  }

#define DISC_STORE_C(T, ptr, rows, cols)                       \
  if ((rows) >= kTileRows && (cols) >= kTileCols) {            \
    _tile_stored(T, ptr, ldc * sizeof(float));                 \
  } else {                                                     \
    _tile_stored(T, stage, kTileBytes);                        \
    StageOut(stage, ptr, ldc, std::min<int64_t>(rows, kTileRows), \
             std::min<int64_t>(cols, kTileCols));             \
  }

// C rows [0, min(rows, 16 MA)) x columns [0, min(cols, 16 NB)): MA A tiles
// (16 rows each, a_stride elements apart; rows < 16 only when MA == 1) by
// NB B tiles of one group (cols > 16 (NB - 1)).
template <int MA, int NB>
DISC_AMX_TARGET void Block(const uint16_t* pa, int64_t a_stride, const uint16_t* pb,
                           int64_t pairs, float* c, int64_t ldc, int64_t rows, int64_t cols,
                           bool first) {
  alignas(64) float stage[kTileRows * kTileCols];
  float* c1 = c + kTileRows * ldc;
  DISC_LOAD_C(DISC_C00, c, rows, cols);
  if (NB == 2) { DISC_LOAD_C(DISC_C01, c + kTileCols, rows, cols - kTileCols); }
  if (MA == 2) {
    DISC_LOAD_C(DISC_C10, c1, rows - kTileRows, cols);
    if (NB == 2) { DISC_LOAD_C(DISC_C11, c1 + kTileCols, rows - kTileRows, cols - kTileCols); }
  }
  const int64_t a_bytes = a_stride * int64_t(sizeof(uint16_t));
  const uint16_t* a1 = pa + kTileRows * a_stride;
  for (int64_t p = 0; p < pairs; p += kTilePairs) {
    const uint16_t* b = pb + p * 2 * kAmxGroupCols;
    _tile_loadd(DISC_A0, pa + 2 * p, a_bytes);
    _tile_loadd(DISC_B0, b, kBRowBytes);
    _tile_dpbf16ps(DISC_C00, DISC_A0, DISC_B0);
    if (NB == 2) {
      _tile_loadd(DISC_B1, b + 2 * kTileCols, kBRowBytes);
      _tile_dpbf16ps(DISC_C01, DISC_A0, DISC_B1);
    }
    if (MA == 2) {
      _tile_loadd(DISC_A1, a1 + 2 * p, a_bytes);
      _tile_dpbf16ps(DISC_C10, DISC_A1, DISC_B0);
      if (NB == 2) { _tile_dpbf16ps(DISC_C11, DISC_A1, DISC_B1); }
    }
  }
  DISC_STORE_C(DISC_C00, c, rows, cols);
  if (NB == 2) { DISC_STORE_C(DISC_C01, c + kTileCols, rows, cols - kTileCols); }
  if (MA == 2) {
    DISC_STORE_C(DISC_C10, c1, rows - kTileRows, cols);
    if (NB == 2) { DISC_STORE_C(DISC_C11, c1 + kTileCols, rows - kTileRows, cols - kTileCols); }
  }
}

// The last rows % 16 rows of A, copied into a whole tile (zero rows past
// them): an A tile always reads 16 rows.
struct alignas(64) TailRows {
  uint16_t a[kTileRows * kMaxPairs * 2];
};

using BlockFn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, float*, int64_t,
                         int64_t, int64_t, bool);

// By [A tiles - 1][B tiles - 1].
constexpr BlockFn kBlocks[2][2] = {{Block<1, 1>, Block<1, 2>}, {Block<2, 1>, Block<2, 2>}};

}  // namespace

DISC_AMX_TARGET void AmxBf16Tiles(const uint16_t* pa, int64_t a_stride, int64_t rows,
                                  const uint16_t* pb, int64_t b_group, int64_t pairs, float* c,
                                  int64_t ldc, int64_t cols, bool first) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t k_pairs = (pairs + kTilePairs - 1) / kTilePairs * kTilePairs;
  const int64_t whole = rows / kTileRows * kTileRows, tail = rows - whole;
  TailRows buffer;  // 24 KiB of stack
  const uint16_t* tail_a = nullptr;
  if (tail > 0) {
    const int64_t row = 2 * k_pairs;
    for (int64_t r = 0; r < tail; ++r) {
      std::memcpy(buffer.a + r * row, pa + (whole + r) * a_stride, row * sizeof(uint16_t));
    }
    std::memset(buffer.a + tail * row, 0, (kTileRows - tail) * row * sizeof(uint16_t));
    tail_a = buffer.a;
  }
  MemoryBarrier();
  ConfigureTiles();
  // Per 32 columns (two B tiles of a group), per 32 rows (two A tiles); C
  // goes through tiles once per call.
  for (int64_t hc = 0; hc < cols; hc += 2 * kTileCols) {
    const uint16_t* half = pb + (hc / kAmxGroupCols) * b_group + 2 * (hc % kAmxGroupCols);
    const int64_t left = cols - hc;
    const int nb = left > kTileCols ? 2 : 1;
    for (int64_t r = 0; r < whole; r += 2 * kTileRows) {
      const int ma = whole - r > kTileRows ? 2 : 1;
      kBlocks[ma - 1][nb - 1](pa + r * a_stride, a_stride, half, k_pairs, c + r * ldc + hc, ldc,
                              ma * kTileRows, left, first);
    }
    if (tail > 0) {
      kBlocks[0][nb - 1](tail_a, 2 * k_pairs, half, k_pairs, c + whole * ldc + hc, ldc, tail,
                         left, first);
    }
  }
  _tile_release();
}

}  // namespace tf_disc

#endif  // DISC_AMX_KERNEL
