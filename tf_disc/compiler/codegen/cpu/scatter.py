"""C++ for the row scatters: DynamicStitch (ops/dynamic_stitch.py: the
`stitchlen` dim, its output rows read by the entry from the run-time
indices, and the `dynamic_stitch` library op) and UnsortedSegmentSum
(ops/unsorted_segment.py: the `segment_sum` library op).

TF's semantics: out[indices[i][j]] = data[i][j] in (i, j) order, so a
repeated index takes the last row; rows no index names are zero (TF 2.21
zero-fills its output); an index outside [0, rows) is "indices[j] is out of
range" (the first in (i, j) order, as TF).  Narrow rows go TF's way: zero
the output, then one ordered pass checks each index and copies its row.
Wide rows: the ordered pass records the winning source row of each output
row, then rows copy (or zero) in parallel, so duplicates never race."""
from __future__ import annotations

from ...errors import template_text
from ...ir.core import Op, Value
from ..cstr import c_string
from .dispatch import emit_launch
from ..c_types import c_type
from ..host_checks import free_temps

_WIDE = 64  # row elements from which rows copy in parallel (memcpy per row)


def _close(op: Op, out: list[str], body: list[str]) -> list[str]:
    """The dim lines, the op's block and its frees, closed."""
    return out + body + free_temps(op) + ["  }"]


def emit_dynamic_stitch(op: Op, dn, ptr: dict[Value, str], k: int) -> list[str]:
    n = len(op.operands) // 2
    idx, data = op.operands[:n], op.operands[n:]
    out_v = op.result
    t = c_type(out_v.dtype)
    rows = dn(out_v.shape[0])
    inner = " * ".join(dn(d) for d in out_v.shape[1:]) or "int64_t(1)"
    counts = [" * ".join(dn(d) for d in v.shape) or "int64_t(1)" for v in idx]
    out = list(dn.lines)
    dn.lines = []
    msg = "indices[{0}] is out of range" + template_text(
        f" (node '{op.attrs['node']}', op {op.attrs['op']})")
    fail = ("{ char a[32]; snprintf(a, sizeof a, \"%lld\", (long long)j); if (src) "
            "rt->free_temp(rt->ctx, src); return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, "
            f"{c_string(msg)}, a, \"\"); }}")
    o3 = '__attribute__((optimize("O3")))'  # the host code around is -O1
    body = [f"  {{  // dynamic_stitch {k}: {n} inputs",
            f"    const int64_t rows = {rows}, inner = {inner};",
            f"    const int32_t* ix[{n}] = {{{', '.join(ptr[v] for v in idx)}}};",
            f"    const {t}* xs[{n}] = {{{', '.join(ptr[v] for v in data)}}};",
            f"    const int64_t cnt[{n}] = {{{', '.join(counts)}}};",
            f"    {t}* out = {ptr[out_v]};",
            "    struct S {",
            f"      const {t}* const* src; {t}* o; int64_t inner;",
            f"      static void zero(void* cl, int64_t b, int64_t e) {o3} {{",
            "        const S& c = *static_cast<const S*>(cl);",
            f"        std::memset(c.o + b * c.inner, 0, size_t((e - b) * c.inner) * sizeof({t}));",
            "      }",
            f"      static void rows(void* cl, int64_t b, int64_t e) {o3} {{",
            "        const S& c = *static_cast<const S*>(cl);",
            "        for (int64_t r = b; r < e; ++r) {",
            f"          if (c.src[r]) std::memcpy(c.o + r * c.inner, c.src[r], "
            f"size_t(c.inner) * sizeof({t}));",
            f"          else std::memset(c.o + r * c.inner, 0, size_t(c.inner) * sizeof({t}));",
            "        }",
            "      }",
            f"      static void copy(const {t}* x, {t}* o, int64_t n) {o3} {{",
            "        for (int64_t q = 0; q < n; ++q) o[q] = x[q];",
            "      }",
            "    };",
            # Narrow rows (TF's way): zero, then one ordered pass that checks and
            # copies.  Wide rows: an ordered pass records the winning source of
            # each row, then rows copy (or zero) in parallel.
            f"    const bool wide = inner >= {_WIDE} && rows > 1;",
            f"    const {t}** src = wide ? static_cast<const {t}**>(rt->alloc_temp(rt->ctx, "
            "size_t(rows) * sizeof(void*))) : nullptr;",
            "    if (wide && !src) return 1;",
            f"    S ds{k} = {{src, out, inner}};",
            "    if (wide) {",
            "      for (int64_t r = 0; r < rows; ++r) src[r] = nullptr;",
            "    } else if (rows > 0 && inner > 0) {",
            *emit_launch("rows", "inner", "S::zero", f"&ds{k}"),
            "    }",
            f"    for (int i = 0; i < {n}; ++i)",
            "      for (int64_t j = 0; j < cnt[i]; ++j) {",
            "        const int64_t r = ix[i][j];",
            f"        if (r < 0 || r >= rows) {fail}",
            "        if (wide) src[r] = xs[i] + j * inner;",
            "        else S::copy(xs[i] + j * inner, out + r * inner, inner);",
            "      }",
            "    if (wide) {",
            *emit_launch("rows", "inner", "S::rows", f"&ds{k}"),
            "      rt->free_temp(rt->ctx, src);",
            "    }"]
    return _close(op, out, body)


def emit_segment_sum(op: Op, dn, ptr: dict[Value, str], k: int) -> list[str]:
    """UnsortedSegmentSum (TF's CPU kernel): zero the output, then one
    ordered pass adds row j of data to out[ids[j]]; negative ids are
    dropped, ids >= num_segments are TF's error naming ids' position."""
    seg, data = op.operands
    out_v = op.result
    t, ti = c_type(out_v.dtype), c_type(seg.dtype)
    rows = dn(out_v.shape[0])
    inner = " * ".join(dn(d) for d in out_v.shape[1:]) or "int64_t(1)"
    sdims = [dn(d) for d in seg.shape]
    count = " * ".join(sdims) or "int64_t(1)"
    out = list(dn.lines)
    dn.lines = []
    msg = "segment_ids{0} = {1}" + template_text(
        f" (node '{op.attrs['node']}', op {op.attrs['op']})")
    rank = max(len(sdims), 1)
    fail = ["        if (r >= rows) {",
            f"          const int64_t sd[{rank}] = {{{', '.join(sdims) or '1'}}};",
            f"          int64_t gi[{rank}] = {{0}}, rem = j;",
            f"          for (int d = {len(sdims) - 1}; d >= 0; --d) {{ gi[d] = rem % sd[d]; "
            "rem /= sd[d]; }",
            "          char a[512], b[128];",
            f"          disc_fmt_shape(a, sizeof a, gi, {len(sdims)});",
            "          snprintf(b, sizeof b, \"%lld is out of range [0, %lld)\", (long long)r, "
            "(long long)rows);",
            f"          return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, {c_string(msg)}, a, b);",
            "        }"]
    o3 = '__attribute__((optimize("O3")))'  # the host code around is -O1
    body = [f"  {{  // segment_sum {k}",
            f"    const int64_t rows = {rows}, inner = {inner}, n = {count};",
            f"    const {ti}* ids = {ptr[seg]}; const {t}* x = {ptr[data]}; {t}* out = {ptr[out_v]};",
            "    struct S {",
            f"      static void add(const {t}* x, {t}* o, int64_t n) {o3} {{",
            "        for (int64_t q = 0; q < n; ++q) o[q] += x[q];",
            "      }",
            "    };",
            f"    if (rows > 0 && inner > 0) std::memset(out, 0, size_t(rows * inner) * sizeof({t}));",
            "    for (int64_t j = 0; j < n; ++j) {",
            "      const int64_t r = ids[j];",
            "      if (r < 0) continue;",
            *fail,
            "      S::add(x + j * inner, out + r * inner, inner);",
            "    }"]
    return _close(op, out, body)
