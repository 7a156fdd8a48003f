// Control flow in generated code (codegen/program.py): a function with
// loops runs as straight-line segments and loops, each segment, cond and
// body a generated function with disc_entry's signature.  disc_call runs
// one of them with its outputs going to the caller's DiscBuffers (scratch
// through rt->alloc_temp) instead of the op's outputs; disc_while loops
// calling cond and body, carrying the loop variables' buffers from one
// iteration to the next.
//
// disc_call hands the callee a copy of the caller's DiscRuntime whose
// alloc_output records into the innermost call's frame (a thread-local
// stack: host code runs on the calling thread only, kernels never allocate
// outputs); every other function keeps the caller's ctx.
#ifndef TF_DISC_RUNTIME_CPU_PRELUDE_DISC_LOOP_H_
#define TF_DISC_RUNTIME_CPU_PRELUDE_DISC_LOOP_H_

#include <cstdint>
#include <cstring>

#include "disc_abi.h"

namespace {

struct DiscCallFrame {
  const DiscRuntime* outer;  // the caller's runtime: its alloc_temp
  DiscBuffer* outs;          // the callee's outputs, by index
  const int64_t* esize;      // element bytes per output
  int32_t num_outs;
  DiscCallFrame* prev;
};

inline DiscCallFrame*& disc_call_frame() {
  static thread_local DiscCallFrame* frame = nullptr;
  return frame;
}

// rt->alloc_output inside disc_call: scratch recorded as output `index`.
// The callee checked the element count for overflow (disc_output_bytes).
inline void* disc_call_alloc_output(void* ctx, int32_t index, int32_t rank,
                                    const int64_t* dims) {
  DiscCallFrame* f = disc_call_frame();
  if (f == nullptr) return nullptr;
  if (index < 0 || index >= f->num_outs || rank < 0 || rank > DISC_MAX_RANK) {
    f->outer->set_error(ctx, DISC_ERROR_INTERNAL, "nested call: bad output index or rank");
    return nullptr;
  }
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  DiscBuffer& o = f->outs[index];
  o.rank = rank;
  for (int32_t i = 0; i < rank; ++i) o.dims[i] = dims[i];
  o.data = n > 0 ? f->outer->alloc_temp(ctx, size_t(n) * size_t(f->esize[index])) : nullptr;
  return o.data;
}

// fn(rt, in, num_in) with its num_out outputs in outs (scratch the caller
// frees, or the runtime at the end of the call); 0, or non-zero with the
// error recorded.
inline int32_t disc_call(const DiscRuntime* rt, DiscEntryFn fn, const DiscBuffer* in,
                         int32_t num_in, DiscBuffer* outs, int32_t num_out,
                         const int64_t* esize) {
  for (int32_t i = 0; i < num_out; ++i) {
    outs[i].data = nullptr;
    outs[i].rank = 0;
  }
  DiscRuntime nested = *rt;
  nested.alloc_output = &disc_call_alloc_output;
  DiscCallFrame frame{rt, outs, esize, num_out, disc_call_frame()};
  disc_call_frame() = &frame;
  const int32_t rc = fn(&nested, in, num_in);
  disc_call_frame() = frame.prev;
  return rc;
}

// Output `index` of the running function: a copy of src.
inline int32_t disc_copy_output(const DiscRuntime* rt, int32_t index, const DiscBuffer& src,
                                int64_t esize) {
  int64_t n = 1;
  for (int32_t i = 0; i < src.rank; ++i) n *= src.dims[i];
  void* p = rt->alloc_output(rt->ctx, index, src.rank, src.dims);
  if (p == nullptr && n > 0) return 1;
  if (n > 0) std::memcpy(p, src.data, size_t(n) * size_t(esize));
  return 0;
}

// Most loop variables one loop carries.
constexpr int32_t kDiscMaxLoopVars = 256;

// while (cond(vars)) vars' = body(vars): vars[0, n) hold the initial values
// and, on return, the final ones.  invariant[k]: the body does not return
// variable k (it keeps the caller's buffer); the body returns the others in
// order.  A buffer an iteration replaces is freed when the loop allocated
// it (never the caller's initial one).
inline int32_t disc_while(const DiscRuntime* rt, DiscEntryFn cond, DiscEntryFn body,
                          DiscBuffer* vars, int32_t n, const uint8_t* invariant,
                          const int64_t* esize) {
  if (n > kDiscMaxLoopVars) {
    rt->set_error(rt->ctx, DISC_ERROR_UNIMPLEMENTED, "a loop with more than 256 variables");
    return 1;
  }
  int32_t carried[kDiscMaxLoopVars];
  int64_t carried_esize[kDiscMaxLoopVars];
  uint8_t owned[kDiscMaxLoopVars] = {0};
  int32_t m = 0;
  for (int32_t k = 0; k < n; ++k) {
    if (!invariant[k]) {
      carried[m] = k;
      carried_esize[m++] = esize[k];
    }
  }
  DiscBuffer next[kDiscMaxLoopVars];
  const int64_t pred_esize = sizeof(bool);
  for (;;) {
    DiscBuffer pred;
    if (disc_call(rt, cond, vars, n, &pred, 1, &pred_esize)) return 1;
    const bool go = pred.data != nullptr && *static_cast<const bool*>(pred.data);
    if (pred.data != nullptr) rt->free_temp(rt->ctx, pred.data);
    if (!go) return 0;
    if (disc_call(rt, body, vars, n, next, m, carried_esize)) return 1;
    for (int32_t j = 0; j < m; ++j) {
      DiscBuffer& v = vars[carried[j]];
      if (owned[carried[j]] && v.data != nullptr && v.data != next[j].data) {
        rt->free_temp(rt->ctx, v.data);
      }
      v = next[j];
      owned[carried[j]] = 1;
    }
  }
}

}  // namespace

#endif  // TF_DISC_RUNTIME_CPU_PRELUDE_DISC_LOOP_H_
