"""C++ for DynamicStitch (ops/dynamic_stitch.py): the `stitchlen` dim (its
output rows, read by the entry from the run-time indices) and the
`dynamic_stitch` library op.

TF's semantics: out[indices[i][j]] = data[i][j] in (i, j) order, so a
repeated index takes the last row; rows no index names are zero (TF 2.21
zero-fills its output); an index outside [0, rows) is "indices[j] is out of
range".  One sequential pass over the indices checks them and records,
per output row, the source row that wins; the copy then runs in parallel
over output rows (a source pointer each, null: zeros), so duplicates never
race."""
from __future__ import annotations

from ..errors import template_text
from ..ir.core import Op, Value
from .cstr import c_string
from .dispatch import emit_launch


def stitch_len(name: str, parts: list[str]) -> list[str]:
    """max(c, 1 + max element of int32 inputs i, j, ..) (parts: c, i, j, ..)."""
    lines = [f"  int64_t {name} = {int(parts[0])};"]
    for i in (int(x) for x in parts[1:]):
        lines += [f"  {{ const int32_t* ix = static_cast<const int32_t*>(inputs[{i}].data);",
                  "    int64_t n = 1;",
                  f"    for (int d = 0; d < inputs[{i}].rank; ++d) n *= inputs[{i}].dims[d];",
                  f"    for (int64_t j = 0; j < n; ++j) "
                  f"if (int64_t(ix[j]) + 1 > {name}) {name} = int64_t(ix[j]) + 1; }}"]
    return lines


def emit_dynamic_stitch(op: Op, dn, ptr: dict[Value, str], k: int) -> list[str]:
    n = len(op.operands) // 2
    idx, data = op.operands[:n], op.operands[n:]
    out_v = op.result
    t = out_v.dtype.ctype
    rows = dn(out_v.shape[0])
    inner = " * ".join(dn(d) for d in out_v.shape[1:]) or "int64_t(1)"
    counts = [" * ".join(dn(d) for d in v.shape) or "int64_t(1)" for v in idx]
    out = list(dn.lines)
    dn.lines = []
    msg = "indices[{0}] is out of range" + template_text(
        f" (node '{op.attrs['node']}', op {op.attrs['op']})")
    fail = ("{ char a[32]; snprintf(a, sizeof a, \"%lld\", (long long)j); "
            f"rt->free_temp(rt->ctx, src); return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, "
            f"{c_string(msg)}, a, \"\"); }}")
    body = [f"  {{  // dynamic_stitch {k}: {n} inputs",
            f"    const int64_t rows = {rows}, inner = {inner};",
            f"    const {t}** src = static_cast<const {t}**>(rt->alloc_temp(rt->ctx, "
            f"size_t(rows > 0 ? rows : 1) * sizeof(void*)));",
            "    if (!src) return 1;",
            "    for (int64_t r = 0; r < rows; ++r) src[r] = nullptr;"]
    for i, (iv, dv) in enumerate(zip(idx, data)):
        body += [f"    {{ const int32_t* ix = {ptr[iv]}; const {t}* x = {ptr[dv]};",
                 f"      const int64_t n = {counts[i]};",
                 "      for (int64_t j = 0; j < n; ++j) {",
                 "        const int64_t r = ix[j];",
                 f"        if (r < 0 || r >= rows) {fail}",
                 "        src[r] = x + j * inner;",
                 "      }",
                 "    }"]
    body += [
        "    struct S {",
        f"      const {t}* const* src; {t}* o; int64_t inner;",
        "      static void run(void* cl, int64_t b, int64_t e) {",
        "        const S& c = *static_cast<const S*>(cl);",
        "        for (int64_t r = b; r < e; ++r) {",
        f"          {t}* o = c.o + r * c.inner;",
        f"          if (c.src[r]) std::memcpy(o, c.src[r], size_t(c.inner) * sizeof({t}));",
        f"          else for (int64_t q = 0; q < c.inner; ++q) o[q] = {t}();",
        "        }",
        "      }",
        "    };",
        f"    S ds{k} = {{src, {ptr[out_v]}, inner}};",
        "    if (rows > 0 && inner > 0) {",
        *emit_launch("rows", "inner", "S::run", f"&ds{k}"),
        "    }",
        "    rt->free_temp(rt->ctx, src);"]
    for name in op.attrs.get("frees", []):
        body.append(f"    if ({name}) rt->free_temp(rt->ctx, {name});")
    body.append("  }")
    return out + body
