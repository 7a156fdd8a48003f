"""C++ for the `segment_reduce` library op (SparseSegmentSum/Mean/SqrtN):
one sequential pass checks ids and indices as TF does and finds where each
segment starts, then segments run in parallel, each summing its gathered
rows (mean/sqrtn divide by the count; empty segments are 0)."""
from __future__ import annotations

from ...errors import template_text
from ...ir.core import Op, Value
from ..cstr import c_string
from .dispatch import emit_launch
from ..c_types import c_type
from ..host_checks import free_temps


def _fail(op: Op, msg: str, a: str, b: str) -> str:
    text = msg + template_text(f" (node '{op.attrs['node']}', op {op.attrs['op']})")
    return (f"{{ char a[64], b[64]; snprintf(a, sizeof a, \"%lld\", (long long)({a})); "
            f"snprintf(b, sizeof b, \"%lld\", (long long)({b})); "
            f"return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, {c_string(text)}, a, b); }}")


def emit_segment_reduce(op: Op, dn, ptr: dict[Value, str], k: int) -> list[str]:
    data, ind, seg = op.operands
    t, ti, ts = c_type(data.dtype), c_type(ind.dtype), c_type(seg.dtype)
    rows = dn(data.shape[0])
    inner = " * ".join(dn(d) for d in data.shape[1:]) or "1"
    nidx, nseg = dn(ind.shape[0]), dn(op.result.shape[0])
    out = list(dn.lines)
    dn.lines = []
    kind = op.attrs["kind"]
    # TF divides each sum by the count (mean) or its square root (sqrtn).
    div = {"sum": None, "mean": f"{t}(cnt)", "sqrtn": f"std::sqrt({t}(cnt))"}[kind]
    scale = "" if div is None else \
        f"if (cnt > 1) {{ const {t} f = {div}; for (int64_t q = 0; q < n; ++q) o[q] /= f; }}"
    body = [
        f"  {{  // segment_reduce {k}: {kind}",
        f"    const {ti}* ind = {ptr[ind]}; const {ts}* seg = {ptr[seg]};",
        f"    const int64_t nidx = {nidx}, nseg = {nseg}, rows = {rows}, inner = {inner};",
        "    for (int64_t j = 0; j < nidx; ++j) {",
        "      const int64_t id = seg[j], ix = ind[j];",
        "      if (j > 0 && id < int64_t(seg[j - 1])) " +
        _fail(op, "segment ids are not increasing: {1} after {0}", "seg[j - 1]", "id"),
        "      if (id < 0 || id >= nseg) " +
        _fail(op, "Segment id {0} out of range [0, {1}), possibly because 'segment_ids' "
                  "input is not sorted.", "id", "nseg"),
        "      if (ix < 0 || ix >= rows) " +
        _fail(op, "Bad: indices[{0}] == {1} out of range", "j", "ix"),
        "    }",
        "    int64_t* st = static_cast<int64_t*>(rt->alloc_temp(rt->ctx, size_t(nseg + 1) * "
        "sizeof(int64_t)));",
        "    if (!st) return 1;",
        "    for (int64_t s = 0, j = 0; s <= nseg; ++s) {",
        "      while (j < nidx && int64_t(seg[j]) < s) ++j;",
        "      st[s] = j;",
        "    }",
        "    struct S {",
        f"      const {t}* x; const {ti}* ind; const int64_t* st; {t}* o; int64_t inner;",
        "      static void run(void* cl, int64_t b, int64_t e) {",
        "        const S& c = *static_cast<const S*>(cl);",
        "        const int64_t n = c.inner;",
        "        for (int64_t s = b; s < e; ++s) {",
        f"          {t}* o = c.o + s * n;",
        f"          for (int64_t q = 0; q < n; ++q) o[q] = {t}(0);",
        "          const int64_t cnt = c.st[s + 1] - c.st[s];",
        "          for (int64_t j = c.st[s]; j < c.st[s + 1]; ++j) {",
        f"            const {t}* r = c.x + int64_t(c.ind[j]) * n;",
        "            for (int64_t q = 0; q < n; ++q) o[q] += r[q];",
        "          }",
        f"          {scale}",
        "        }",
        "      }",
        "    };",
        f"    S sr{k} = {{{ptr[data]}, ind, st, {ptr[op.result]}, inner}};",
        "    if (nseg > 0 && inner > 0) {",
        *emit_launch("nseg", "inner * (nidx / nseg + 1)", "S::run", f"&sr{k}"),
        "    }",
        "    rt->free_temp(rt->ctx, st);",
    ]
    body += free_temps(op)
    body.append("  }")
    return out + body
