"""C++ for the `reduce` and `argreduce` library ops: one parallel loop over
the output elements; each walks its reduced elements (a contiguous inner
loop when the reduced dims are a suffix of the input: row reductions).
Emitted inline in disc_entry as a local struct with a static run function.
f32 sums and products accumulate in double; max/min propagate NaN (TF)."""
from __future__ import annotations

from ...ir.core import Op, Value
from .dispatch import emit_launch, emit_units_and_close
from ..c_types import c_type
from ..host_checks import free_temps

_INIT = {"sum": "0", "prod": "1", "and": "true", "or": "false"}


def _init(kind: str, t: str) -> str:
    if kind in ("max", "max_ignore_nan"):
        return (f"-std::numeric_limits<{t}>::infinity()" if t in ("float", "double")
                else f"std::numeric_limits<{t}>::lowest()")
    if kind == "min":
        return (f"std::numeric_limits<{t}>::infinity()" if t in ("float", "double")
                else f"std::numeric_limits<{t}>::max()")
    return f"{t}({_INIT[kind]})"


def _combine(kind: str, acc: str, v: str) -> str:
    return {"sum": f"{acc} += {v};", "prod": f"{acc} *= {v};",
            "max": f"{acc} = disc_max({acc}, {v});",
            # Eigen's default MaxReducer (TF's Softmax): NaN never wins
            "max_ignore_nan": f"if ({v} > {acc}) {acc} = {v};", "min": f"{acc} = disc_min({acc}, {v});",
            "and": f"{acc} = {acc} && {v};", "or": f"{acc} = {acc} || {v};"}[kind]


def emit_reduce(op: Op, dn, ptr: dict[Value, str], k: int) -> list[str]:
    (x,) = op.operands
    res = op.result
    t = c_type(x.dtype)
    n = x.type.rank
    if op.name == "reduce":
        red = sorted(op.attrs["dimensions"])
        kind = op.attrs["kind"]
    else:
        red = [op.attrs["dimension"]]
        kind = op.attrs["kind"]
    kept = [d for d in range(n) if d not in red]
    xd = [dn(d) for d in x.shape]
    od = [dn(d) for d in res.shape]
    out = list(dn.lines)
    dn.lines = []
    strides = [" * ".join(xd[d + 1:]) or "1" for d in range(n)]
    suffix = red == list(range(n - len(red), n))
    nk, nr = max(len(kept), 1), max(len(red), 1)
    at = "double" if (t == "float" and kind in ("sum", "prod")) else t
    body = [
        f"  {{  // {op.name} {kind} over {red}",
        "    struct R {",
        f"      const {t}* x; {c_type(res.dtype)}* o;",
        f"      int64_t kd[{nk}], ks[{nk}], rd[{nr}], rs[{nr}], rn;",
        "      static void run(void* cl, int64_t b, int64_t e) {",
        "        const R& c = *static_cast<const R*>(cl);",
        "        for (int64_t o = b; o < e; ++o) {",
        "          int64_t base = 0, rem = o;",
        f"          for (int d = {len(kept) - 1}; d >= 0; --d) {{ base += (rem % c.kd[d]) * c.ks[d]; "
        "rem /= c.kd[d]; }",
    ]
    if op.name == "argreduce":
        lim = "lowest()" if kind == "max" else "max()"
        cmp = ">" if kind == "max" else "<"
        body += [f"          {t} best = std::numeric_limits<{t}>::{lim}; int64_t bi = 0;",
                 "          for (int64_t j = 0; j < c.rn; ++j) {",
                 f"            const {t} v = c.x[base + j * c.rs[0]];",
                 f"            if (v {cmp} best) {{ best = v; bi = j; }}",
                 "          }",
                 f"          c.o[o] = {c_type(res.dtype)}(bi);"]
    else:
        body += [f"          {at} acc = {_init(kind, at)};"]
        if suffix:
            body += ["          const " + t + "* p = c.x + base;",
                     "          for (int64_t j = 0; j < c.rn; ++j) { " + _combine(kind, "acc", f"{at}(p[j])") + " }"]
        else:
            r = len(red)
            body += [f"          int64_t ri[{nr}] = {{0}}; int64_t off = base;",
                     "          for (int64_t j = 0; j < c.rn; ++j) {",
                     "            " + _combine(kind, "acc", f"{at}(c.x[off])"),
                     f"            for (int d = {r - 1}; d >= 0; --d) {{",
                     "              ++ri[d]; off += c.rs[d];",
                     "              if (ri[d] < c.rd[d]) break;",
                     "              off -= c.rs[d] * c.rd[d]; ri[d] = 0;",
                     "            }",
                     "          }"]
        body += [f"          c.o[o] = {c_type(res.dtype)}(acc);"]
    body += ["        }", "      }", "    };",
             f"    R r{k} = {{}};",
             f"    r{k}.x = {ptr[x]}; r{k}.o = {ptr[res]};"]
    for i, d in enumerate(kept):
        body.append(f"    r{k}.kd[{i}] = {xd[d]}; r{k}.ks[{i}] = {strides[d]};")
    for i, d in enumerate(red):
        body.append(f"    r{k}.rd[{i}] = {xd[d]}; r{k}.rs[{i}] = {strides[d]};")
    rn = " * ".join(xd[d] for d in red) or "1"
    on = " * ".join(od) or "1"
    body += [f"    r{k}.rn = {rn};",
             f"    const int64_t n = {on};",
             f"    if (n > 0) {{",
             *emit_launch("n", f"{rn} + 1", "R::run", f"&r{k}"),
             "    }"]
    body += free_temps(op)
    body.append("  }")
    return out + body


def emit_cumsum(op: Op, dn, ptr: dict[Value, str], k: int) -> list[str]:
    """Cumsum along one axis: one sequential scan per (outer, inner) line,
    lines in parallel; exclusive/reverse as TF; f32 accumulates in float
    like TF's Eigen scan."""
    (x,) = op.operands
    t = c_type(x.dtype)
    ax = op.attrs["axis"]
    xd = [dn(d) for d in x.shape]
    out = list(dn.lines)
    dn.lines = []
    outer = " * ".join(xd[:ax]) or "1"
    inner = " * ".join(xd[ax + 1:]) or "1"
    excl, rev = bool(op.attrs.get("exclusive")), bool(op.attrs.get("reverse"))
    body = [
        f"  {{  // cumsum axis {ax}",
        "    struct S {",
        f"      const {t}* x; {t}* o; int64_t n, inner;",
        "      static void run(void* cl, int64_t b, int64_t e) {",
        "        const S& c = *static_cast<const S*>(cl);",
        "        for (int64_t l = b; l < e; ++l) {",
        "          const int64_t base = (l / c.inner) * c.n * c.inner + l % c.inner;",
        f"          {t} acc = {t}(0);",
        "          for (int64_t j0 = 0; j0 < c.n; ++j0) {",
        f"            const int64_t j = {'c.n - 1 - j0' if rev else 'j0'};",
        "            const int64_t p = base + j * c.inner;",
        ("            c.o[p] = acc; acc += c.x[p];" if excl else
         "            acc += c.x[p]; c.o[p] = acc;"),
        "          }",
        "        }",
        "      }",
        "    };",
        f"    S cs{k} = {{{ptr[x]}, {ptr[op.result]}, {xd[ax]}, {inner}}};",
    ]
    return out + body + emit_units_and_close(op, f"{outer} * {inner}", xd[ax], f"{xd[ax]} + 1",
                                             "S::run", f"&cs{k}")
