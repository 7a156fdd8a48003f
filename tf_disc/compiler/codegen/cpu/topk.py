"""C++ for the `topk` library op (ops/topk.py): per row of the last dim, a
k-entry heap whose top is the worst kept entry (lower value, or equal value
and higher index), so one pass of n log k; the heap is then emptied from
the back of the output row, giving TF's order.  Rows run in parallel; each
task's heap lives in one temp buffer."""
from __future__ import annotations

from ...ir.core import Op
from .dispatch import emit_units_and_close
from ..c_types import c_type


def emit_topk(op: Op, dn, ptr: dict, k: int) -> list[str]:
    (x,) = op.operands
    t, ot = c_type(x.dtype), c_type(op.result.dtype)
    xd = [dn(d) for d in x.shape]
    kk = dn(op.attrs["k"])
    out = list(dn.lines)
    dn.lines = []
    rows = " * ".join(xd[:-1]) or "1"
    write = "c.o[r * c.k + pos] = " + ("c.x[r * c.n + h[0]];" if op.attrs["output"] == "values"
                                       else f"({ot})h[0];")
    body = [
        f"  {{  // topk {op.attrs['output']}",
        "    struct T {",
        f"      const {t}* x; {ot}* o; int64_t n, k; const DiscRuntime* rt;",
        "      // a kept entry is worse than b (the heap's top is the worst)",
        "      bool worse(int64_t r, int64_t a, int64_t b) const {",
        "        const auto va = x[r * n + a], vb = x[r * n + b];",
        "        return va < vb || (va == vb && a > b);",
        "      }",
        "      void sift(int64_t r, int64_t* h, int64_t size, int64_t i) const {",
        "        for (;;) {",
        "          int64_t w = i, l = 2 * i + 1, rr = l + 1;",
        "          if (l < size && worse(r, h[l], h[w])) w = l;",
        "          if (rr < size && worse(r, h[rr], h[w])) w = rr;",
        "          if (w == i) return;",
        "          const int64_t s = h[i]; h[i] = h[w]; h[w] = s; i = w;",
        "        }",
        "      }",
        "      static void run(void* cl, int64_t b, int64_t e) {",
        "        const T& c = *static_cast<const T*>(cl);",
        "        int64_t* h = static_cast<int64_t*>(c.rt->alloc_temp(c.rt->ctx, c.k * sizeof(int64_t)));",
        "        if (h == nullptr) return;  // the entry checked k > 0; alloc failure is reported",
        "        for (int64_t r = b; r < e; ++r) {",
        "          int64_t size = 0;",
        "          for (int64_t j = 0; j < c.n; ++j) {",
        "            if (size < c.k) {  // push and sift up",
        "              int64_t i = size++;",
        "              h[i] = j;",
        "              while (i > 0 && c.worse(r, h[i], h[(i - 1) / 2])) {",
        "                const int64_t p = (i - 1) / 2, s = h[i]; h[i] = h[p]; h[p] = s; i = p;",
        "              }",
        "            } else if (c.worse(r, h[0], j)) {",
        "              h[0] = j;",
        "              c.sift(r, h, size, 0);",
        "            }",
        "          }",
        "          for (int64_t pos = size - 1; pos >= 0; --pos) {  // worst first, from the back",
        f"            {write}",
        "            h[0] = h[--size];",
        "            c.sift(r, h, size, 0);",
        "          }",
        "        }",
        "        c.rt->free_temp(c.rt->ctx, h);",
        "      }",
        "    };",
        f"    T tk{k} = {{{ptr[x]}, {ptr[op.result]}, {xd[-1]}, {kk}, rt}};",
    ]
    return out + body + emit_units_and_close(op, rows, kk, f"{xd[-1]} * 4 + 1", "T::run",
                                             f"&tk{k}")
