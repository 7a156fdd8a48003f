// The host side of a `dot` (codegen/gemm.py): rt->gemm over the batch dims
// of a product whose operands and result are dense row-major buffers.
#ifndef TF_DISC_RUNTIME_HOST_DISC_GEMM_H_
#define TF_DISC_RUNTIME_HOST_DISC_GEMM_H_

#include <cstddef>
#include <cstdint>

#include "disc_abi.h"

namespace {

// Calls rt->gemm over the batch dims bd[0..nb) (output order) with per-dim
// element strides sa, sb, sc of A, B, C: drops size-1 dims, merges dims whose
// strides chain in all three, passes the innermost run as the GEMM's batch
// (or folds it into M when B is shared and A/C rows continue), loops over the
// rest.  g holds the rest of the product (dtype, transposes, m, n, k, the
// base pointers and leading dims, the epilogue); its batch fields are set
// here.  esize: bytes per element.
inline int32_t disc_gemm_batched(const DiscRuntime* rt, DiscGemmArgs g, int nb,
                                 const int64_t* bd, const int64_t* sa, const int64_t* sb,
                                 const int64_t* sc, size_t esize) {
  if (g.m == 0 || g.n == 0) return 0;
  int64_t d[DISC_MAX_RANK], xa[DISC_MAX_RANK], xb[DISC_MAX_RANK], xc[DISC_MAX_RANK];
  int r = 0;
  for (int i = 0; i < nb; ++i) {
    if (bd[i] == 0) return 0;
    if (bd[i] == 1) continue;
    if (r > 0 && xa[r - 1] == sa[i] * bd[i] && xb[r - 1] == sb[i] * bd[i] &&
        xc[r - 1] == sc[i] * bd[i]) {
      d[r - 1] *= bd[i];
      xa[r - 1] = sa[i]; xb[r - 1] = sb[i]; xc[r - 1] = sc[i];
      continue;
    }
    d[r] = bd[i]; xa[r] = sa[i]; xb[r] = sb[i]; xc[r] = sc[i];
    ++r;
  }
  g.batch = 1;
  g.stride_a = g.stride_b = g.stride_c = 0;
  if (r > 0) { --r; g.batch = d[r]; g.stride_a = xa[r]; g.stride_b = xb[r]; g.stride_c = xc[r]; }
  if (g.batch > 1 && g.stride_b == 0 && !g.trans_a && g.stride_a == g.m * g.lda &&
      g.stride_c == g.m * g.ldc) {
    g.m *= g.batch;
    g.batch = 1;
  }
  const char* a = static_cast<const char*>(g.a);
  const char* b = static_cast<const char*>(g.b);
  char* c = static_cast<char*>(g.c);
  int64_t outer = 1, idx[DISC_MAX_RANK];
  for (int i = 0; i < r; ++i) { outer *= d[i]; idx[i] = 0; }
  for (int64_t o = 0; o < outer; ++o) {
    int64_t oa = 0, ob = 0, oc = 0;
    for (int i = 0; i < r; ++i) { oa += idx[i] * xa[i]; ob += idx[i] * xb[i]; oc += idx[i] * xc[i]; }
    DiscGemmArgs part = g;
    part.a = a ? a + oa * esize : nullptr;
    part.b = b ? b + ob * esize : nullptr;
    part.c = c + oc * esize;
    part.c_offset = oc;
    if (rt->gemm(rt->ctx, &part)) return 1;
    for (int i = r - 1; i >= 0; --i) { if (++idx[i] < d[i]) break; idx[i] = 0; }
  }
  return 0;
}

}  // namespace

#endif  // TF_DISC_RUNTIME_HOST_DISC_GEMM_H_
