"""The host's once-per-call checks and allocations as calls to shared
helpers instead of inline code.

disc_entry is one long straight-line function; before these helpers its
input checks, element counts, allocations and kernel error checks were most
of its text and a quarter of a cold compile (decode_loop.py's cluster: 100
KB of host code, 0.35 s of g++ at -O1).  Each helper is noinline: it runs
once per check per call, and compiles once per library.  Messages and error
codes are the inline code's, character for character."""
from __future__ import annotations

from typing import List

from ..ir.core import Op
from .cstr import c_string
from .prelude import ERROR_MESSAGES


def _kernel_error_cases() -> str:
    return "\n".join(f"    case {code}: return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, "
                     f"{c_string(msg)}, \"\", \"\");" for code, msg in ERROR_MESSAGES.items())


HOST_HELPERS = r'''
namespace {

// Input i has `rank` dims, and want[j] where want[j] >= 0 (want may be null);
// else records the error (msg: "{0}" the input's shape, "{1}" want) and returns 1.
__attribute__((noinline)) int32_t disc_check_input(const DiscRuntime* rt,
                                                   const DiscBuffer* inputs, int32_t i,
                                                   int32_t rank, const int64_t* want,
                                                   const char* msg) {
  const DiscBuffer& in = inputs[i];
  if (in.rank != rank) {
    char t[64];
    snprintf(t, sizeof t, "input %d: expected rank %d", int(i), int(rank));
    return disc_fail(rt, DISC_ERROR_INTERNAL, t, "", "");
  }
  for (int j = 0; want && j < rank; ++j) {
    if (want[j] >= 0 && in.dims[j] != want[j]) {
      char a[512], b[512];
      disc_fmt_shape(a, sizeof a, in.dims, rank);
      disc_fmt_shape(b, sizeof b, want, rank);
      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, msg, a, b);
    }
  }
  return 0;
}

// *n = the element count of d[0..r), checked left to right like TensorShape.
__attribute__((noinline)) int32_t disc_count(const DiscRuntime* rt, const int64_t* d, int r,
                                             int64_t* n) {
  int64_t c = 1;
  for (int i = 0; i < r; ++i) {
    if (__builtin_mul_overflow(c, d[i], &c)) {
      char a[512];
      disc_fmt_shape(a, sizeof a, d, r);
      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT,
                       "Shape {0} would have more than 2**63 - 1 elements", a, "");
    }
  }
  *n = c;
  return 0;
}

// Output `index` of dims d[0..r) (null when empty); 1 when its size overflows
// or the runtime failed (error recorded).
__attribute__((noinline)) int32_t disc_output_bytes(const DiscRuntime* rt, int32_t index,
                                                    const int64_t* d, int r, void** p) {
  int64_t n;
  if (disc_count(rt, d, r, &n)) return 1;
  *p = rt->alloc_output(rt->ctx, index, r, d);
  return !*p && n > 0;
}

// Scratch for d[0..r) elements of esize bytes (null when empty).
__attribute__((noinline)) int32_t disc_temp_bytes(const DiscRuntime* rt, const int64_t* d, int r,
                                                  int64_t esize, void** p) {
  int64_t n;
  if (disc_count(rt, d, r, &n)) return 1;
  if (n > int64_t(0x7fffffffffffffffLL) / esize)
    return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT,
                     "Encountered overflow when multiplying {0} with {1}",
                     disc_int_text(n).s, disc_int_text(esize).s);
  *p = n > 0 ? rt->alloc_temp(rt->ctx, size_t(n) * size_t(esize)) : nullptr;
  return !*p && n > 0;
}

template <typename T>
inline int32_t disc_output(const DiscRuntime* rt, int32_t index, const int64_t* d, int r,
                           T** p) {
  void* v = nullptr;
  const int32_t bad = disc_output_bytes(rt, index, d, r, &v);
  *p = static_cast<T*>(v);
  return bad;
}

template <typename T>
inline int32_t disc_temp(const DiscRuntime* rt, const int64_t* d, int r, T** p) {
  void* v = nullptr;
  const int32_t bad = disc_temp_bytes(rt, d, r, int64_t(sizeof(T)), &v);
  *p = static_cast<T*>(v);
  return bad;
}

// A kernel's err code with a message (prelude ERROR_MESSAGES): recorded, 1;
// 0 for the codes its launch handles itself.
__attribute__((noinline)) int32_t disc_kernel_error(const DiscRuntime* rt, int32_t err) {
  switch (err) {
@CASES@
    default: return 0;
  }
}

}  // namespace
'''.replace("@CASES@", _kernel_error_cases())


def input_check(i: int, rank: int, want: List[str] | None, msg: str) -> List[str]:
    """Lines checking input i's rank and (want, "-1" for any) static dims."""
    if want is None:
        return [f"  if (disc_check_input(rt, inputs, {i}, {rank}, nullptr, \"\")) return 1;"]
    return [f"  {{ static const int64_t w[{len(want)}] = {{{', '.join(want)}}};",
            f"    if (disc_check_input(rt, inputs, {i}, {rank}, w, {c_string(msg)})) return 1; }}"]


def alloc_output(name: str, ctype: str, index: int, dims: List[str]) -> List[str]:
    """`ctype* name`: output `index` of dims (its count checked)."""
    arr = f"od_{name}"
    return [f"  const int64_t {arr}[{max(len(dims), 1)}] = {{{', '.join(dims) or '0'}}};",
            f"  {ctype}* {name};",
            f"  if (disc_output(rt, {index}, {arr}, {len(dims)}, &{name})) return 1;"]


def free_temps(*ops: Op) -> List[str]:
    """Frees the temps the ops are the last readers of (attr "frees",
    passes/buffers.py)."""
    return [f"    if ({name}) rt->free_temp(rt->ctx, {name});"
            for op in ops for name in op.attrs.get("frees", [])]


def alloc_temp(name: str, ctype: str, dims: List[str]) -> List[str]:
    """`ctype* name`: scratch of dims (count and bytes checked; null when empty)."""
    return [f"  {ctype}* {name};",
            f"  {{ const int64_t sd[{max(len(dims), 1)}] = {{{', '.join(dims) or '0'}}};",
            f"    if (disc_temp(rt, sd, {len(dims)}, &{name})) return 1; }}"]


def kernel_error_check(closure: str) -> str:
    """The line reporting closure's err when it is one of ERROR_MESSAGES'."""
    return f"    if ({closure}.err && disc_kernel_error(rt, {closure}.err)) return 1;"
