// Control flow in generated code (codegen/cpu/program.py): a function with
// loops runs as straight-line segments and loops, each segment, cond and
// body a generated function with disc_entry's signature.  disc_call runs
// one of them with its outputs going to the caller's DiscBuffers (scratch
// through rt->alloc_temp) instead of the op's outputs; disc_while loops
// calling cond and body, carrying the loop variables' buffers from one
// iteration to the next; disc_free_steps frees a program's step results
// once its outputs are copied out.
//
// disc_call hands the callee a copy of the caller's DiscRuntime whose
// alloc_output records into the innermost call's frame (a thread-local
// stack: host code runs on the calling thread only, kernels never allocate
// outputs); every other function keeps the caller's ctx.
#ifndef TF_DISC_RUNTIME_CPU_PRELUDE_DISC_LOOP_H_
#define TF_DISC_RUNTIME_CPU_PRELUDE_DISC_LOOP_H_

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "cpu/prelude/disc_prelude.h"
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

// Frees the scratch the num_steps buffers in steps hold (a program's step
// results, its outputs already copied out), each data pointer once; one that
// is among the program's num_in inputs is the caller's and stays.  A loop
// body calling several steps so frees them per iteration instead of at the
// end of the DiscLaunch call.
inline void disc_free_steps(const DiscRuntime* rt, const DiscBuffer* steps, int32_t num_steps,
                            const DiscBuffer* inputs, int32_t num_in) {
  for (int32_t i = 0; i < num_steps; ++i) {
    const void* p = steps[i].data;
    bool keep = p == nullptr;
    for (int32_t j = 0; !keep && j < num_in; ++j) keep = inputs[j].data == p;
    for (int32_t j = 0; !keep && j < i; ++j) keep = steps[j].data == p;  // freed already
    if (!keep) rt->free_temp(rt->ctx, steps[i].data);
  }
}

// Most loop variables one loop carries.
constexpr int32_t kDiscMaxLoopVars = 256;

// How a loop carries a variable (passes/program.py CARRIED, INVARIANT,
// IN_PLACE).
enum : uint8_t {
  DISC_LOOP_CARRIED = 0,    // the body returns its next value
  DISC_LOOP_INVARIANT = 1,  // unchanged: the caller's buffer throughout
  DISC_LOOP_IN_PLACE = 2,   // a TensorList: the body returns a row index and
                            // item, the loop writes them into its own copy
};

// A scratch copy of b (its data freed by the loop later).
inline int32_t disc_loop_copy(const DiscRuntime* rt, DiscBuffer* b, int64_t esize) {
  int64_t n = 1;
  for (int32_t i = 0; i < b->rank; ++i) n *= b->dims[i];
  if (n == 0) return 0;
  void* p = rt->alloc_temp(rt->ctx, size_t(n) * size_t(esize));
  if (p == nullptr) return 1;
  std::memcpy(p, b->data, size_t(n) * size_t(esize));
  b->data = p;
  return 0;
}

// Writes item into row *index of list (TensorListSetItem's checks and
// messages); frees nothing.
inline int32_t disc_loop_set_row(const DiscRuntime* rt, DiscBuffer* list, const DiscBuffer& index,
                                 const DiscBuffer& item, int64_t esize) {
  char a[512], b[512];
  bool same = item.rank + 1 == list->rank;
  for (int32_t i = 0; same && i < item.rank; ++i) same = item.dims[i] == list->dims[i + 1];
  if (!same) {
    disc_fmt_shape(a, sizeof a, item.dims, item.rank);
    disc_fmt_shape(b, sizeof b, list->dims + 1, list->rank > 0 ? list->rank - 1 : 0);
    return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT,
                     "Tried to set a tensor with incompatible shape at a list index. Item "
                     "element shape: {0} list shape: {1}", a, b);
  }
  const int64_t i = int64_t(*static_cast<const int32_t*>(index.data));
  if (i < 0 || i >= list->dims[0]) {
    snprintf(a, sizeof a, "%lld", (long long)i);
    snprintf(b, sizeof b, "%lld", (long long)list->dims[0]);
    return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT,
                     "Trying to modify element {0} in a list with {1} elements.", a, b);
  }
  int64_t row = esize;
  for (int32_t d = 0; d < item.rank; ++d) row *= item.dims[d];
  if (row > 0) std::memcpy(static_cast<char*>(list->data) + i * row, item.data, size_t(row));
  return 0;
}

// while (cond(vars)) vars' = body(vars): vars[0, n) hold the initial values
// and, on return, the final ones; modes[k] says how variable k is carried
// (DISC_LOOP_*): the body returns the CARRIED ones in order, then an int32
// index and an item per IN_PLACE one.  A buffer an iteration replaces is
// freed when the loop allocated it (never the caller's).  unset_list >= 0:
// that variable is a TensorList stacked after the loop whose element shape
// (TF's text: unset_shape) TF knows only once a row is set, so a loop whose
// body never ran fails as TensorListStack would (ops/control_flow.py).
inline int32_t disc_while(const DiscRuntime* rt, DiscEntryFn cond, DiscEntryFn body,
                          DiscBuffer* vars, int32_t n, const uint8_t* modes,
                          const int64_t* esize, int32_t unset_list, const char* unset_shape) {
  if (n > kDiscMaxLoopVars) {
    rt->set_error(rt->ctx, DISC_ERROR_UNIMPLEMENTED, "a loop with more than 256 variables");
    return 1;
  }
  int32_t carried[kDiscMaxLoopVars], in_place[kDiscMaxLoopVars];
  int64_t out_esize[2 * kDiscMaxLoopVars];
  uint8_t owned[kDiscMaxLoopVars] = {0};
  int32_t m = 0, p = 0;
  for (int32_t k = 0; k < n; ++k) {
    if (modes[k] == DISC_LOOP_CARRIED) {
      carried[m] = k;
      out_esize[m++] = esize[k];
    }
  }
  for (int32_t k = 0; k < n; ++k) {
    if (modes[k] != DISC_LOOP_IN_PLACE) continue;
    in_place[p++] = k;
    out_esize[m + 2 * (p - 1)] = sizeof(int32_t);
    out_esize[m + 2 * (p - 1) + 1] = esize[k];
    if (disc_loop_copy(rt, &vars[k], esize[k])) return 1;  // the caller's stays intact
  }
  DiscBuffer next[2 * kDiscMaxLoopVars];
  const int64_t pred_esize = sizeof(bool);
  for (int64_t iterations = 0;; ++iterations) {
    DiscBuffer pred;
    if (disc_call(rt, cond, vars, n, &pred, 1, &pred_esize)) return 1;
    const bool go = pred.data != nullptr && *static_cast<const bool*>(pred.data);
    if (pred.data != nullptr) rt->free_temp(rt->ctx, pred.data);
    if (!go && iterations == 0 && unset_list >= 0 && unset_list < n) {
      const bool empty = vars[unset_list].rank == 0 || vars[unset_list].dims[0] == 0;
      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT,
                       empty ? "Tried to stack elements of an empty list with "
                               "non-fully-defined element_shape: {0}"
                             : "Tried to stack list which only contains uninitialized tensors "
                               "and has a non-fully-defined element_shape: {0}",
                       unset_shape, "");
    }
    if (!go) return 0;
    if (disc_call(rt, body, vars, n, next, m + 2 * p, out_esize)) return 1;
    for (int32_t j = 0; j < p; ++j) {
      const DiscBuffer& index = next[m + 2 * j];
      const DiscBuffer& item = next[m + 2 * j + 1];
      const int32_t bad = disc_loop_set_row(rt, &vars[in_place[j]], index, item,
                                            esize[in_place[j]]);
      if (index.data != nullptr) rt->free_temp(rt->ctx, index.data);
      if (item.data != nullptr) rt->free_temp(rt->ctx, item.data);
      if (bad) return 1;
    }
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
