// The AMX micro-kernel of the bf16 fast-math GEMM (gemm_bf16.cc), for CPUs
// of the avx512_amx tier (cpu_isa.h).  It reads gemm_bf16.cc's packed
// operands as they are: a packed A row is a run of bf16 in k order (an A tile
// is 16 such rows x 32 k), and a packed B group holds, per k pair, 64
// columns x 2 bf16 -- for 16 of those columns, exactly the pair-interleaved
// ("VNNI") layout TDPBF16PS takes as its B tile (16 k pairs x 64 bytes,
// rows 256 bytes apart).
#ifndef TF_DISC_RUNTIME_CPU_GEMM_AMX_H_
#define TF_DISC_RUNTIME_CPU_GEMM_AMX_H_

#include <cstdint>

// Only the avx512 kernel library compiles AMX code, with a compiler that
// knows the instructions (g++ 11, clang 12).
#if defined(__x86_64__) && defined(__AVX512F__) && \
    ((defined(__clang__) && __clang_major__ >= 12) || \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define DISC_AMX_KERNEL 1
#endif

namespace tf_disc {

#ifdef DISC_AMX_KERNEL

// Columns per packed B group (gemm_bf16.cc kGroup).
constexpr int64_t kAmxGroupCols = 64;

// The most k pairs one call takes (gemm_bf16.cc's k chunk of 768).
constexpr int64_t kMaxPairs = 384;

// C[0:rows, 0:cols] = (first) or += A x B over `pairs` k pairs (at most
// kMaxPairs).  A: packed rows a_stride elements apart; B: groups of
// kAmxGroupCols columns b_group elements apart, the first at C's column 0.
// Both operands must hold zeros from `pairs` up to the next multiple of 16
// pairs (the packers pad k to 32).  C: fp32, rows ldc elements apart.
// Runs only where cpu_isa.h's tier is avx512_amx (the process holds the
// tile-data permission); leaves the tile state released.
void AmxBf16Tiles(const uint16_t* pa, int64_t a_stride, int64_t rows, const uint16_t* pb,
                  int64_t b_group, int64_t pairs, float* c, int64_t ldc, int64_t cols,
                  bool first);

#endif  // DISC_AMX_KERNEL

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_GEMM_AMX_H_
