// Skinny float products (few rows of C, row-major B): a register-tiled
// kernel that streams B from memory instead of packing it (gemm.cc's
// RunSkinny routes them here and hands the columns past the last full tile
// to Eigen).  Its own source file (only Eigen/Core): it compiles in seconds,
// so benchmarks/gemm_skinny.py can rebuild it for A/B timings.
#ifndef TF_DISC_RUNTIME_CPU_GEMM_SKINNY_H_
#define TF_DISC_RUNTIME_CPU_GEMM_SKINNY_H_

#include <cstdint>

#include "tf_disc/runtime/cpu/gemm.h"

namespace tf_disc {

// Columns of C per tile for g (the tile shape depends on g.m): RunSkinny's
// task unit.
int64_t SkinnyTileCols(const GemmArgs& g);

// Column tiles [t0, t1) (SkinnyTileCols(g) columns each) of C = op(A) B for
// batch entry bi, all g.m rows, each tile's epilogue included.
void SkinnyColumns(const GemmArgs& g, int64_t bi, int64_t t0, int64_t t1);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_GEMM_SKINNY_H_
