// Conditionals in generated code (codegen/cpu/program.py): an `if` or
// `case` (compiler/ir/control.py) runs one of its branches, each a
// generated function with disc_entry's signature, through disc_call: the
// branch's outputs are the conditional's results (scratch the runtime
// frees at the end of the call).
#ifndef TF_DISC_RUNTIME_CPU_PRELUDE_DISC_BRANCH_H_
#define TF_DISC_RUNTIME_CPU_PRELUDE_DISC_BRANCH_H_

#include <cstdint>

#include "cpu/prelude/disc_loop.h"
#include "disc_abi.h"

namespace {

// The branch TF runs: an If's first (then) branch when its bool predicate
// is true, else the second; a Case's branch at its int32 index, the last
// one (TF's default branch) when the index is out of range.
inline int32_t disc_branch_index(const DiscBuffer& selector, bool is_case, int32_t num_branches) {
  if (!is_case) return *static_cast<const bool*>(selector.data) ? 0 : 1;
  const int32_t i = *static_cast<const int32_t*>(selector.data);
  return i < 0 || i >= num_branches ? num_branches - 1 : i;
}

// Runs the branch `selector` picks with the num_in inputs in `in`; its
// num_out outputs land in outs (element bytes esize).  0, or non-zero with
// the error recorded.
inline int32_t disc_branch(const DiscRuntime* rt, const DiscBuffer& selector, bool is_case,
                           const DiscEntryFn* branches, int32_t num_branches,
                           const DiscBuffer* in, int32_t num_in, DiscBuffer* outs,
                           int32_t num_out, const int64_t* esize) {
  const DiscEntryFn fn = branches[disc_branch_index(selector, is_case, num_branches)];
  return disc_call(rt, fn, in, num_in, outs, num_out, esize);
}

}  // namespace

#endif  // TF_DISC_RUNTIME_CPU_PRELUDE_DISC_BRANCH_H_
