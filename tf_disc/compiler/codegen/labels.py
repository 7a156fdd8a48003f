"""C++ for the `label_check` library op (ops/sparse_xent.py): TF's check
that every label lies in [0, classes) before SparseSoftmaxCrossEntropy
computes anything, with its message (the bad value, then every label),
then the labels copied to the result the loss kernels read."""
from __future__ import annotations

from ..errors import template_text
from ..ir.core import Op, Value
from .cstr import c_string
from .c_types import c_type
from .host_checks import free_temps


def emit_label_check(op: Op, dn, ptr: dict[Value, str], k: int) -> list[str]:
    (lab,) = op.operands
    t = c_type(lab.dtype)
    n, classes = dn(lab.shape[0]), dn(op.attrs["classes"])
    out = list(dn.lines)
    dn.lines = []
    msg = "Received a label value of {0}.  Label values: {1}" + template_text(
        f" (node '{op.attrs['node']}', op {op.attrs['op']})")
    return out + [
        f"  {{  // label_check {k}",
        f"    const {t}* l = {ptr[lab]}; {t}* o = {ptr[op.result]};",
        f"    const int64_t n = {n}, classes = {classes};",
        "    for (int64_t j = 0; j < n; ++j) {",
        "      if (l[j] >= 0 && l[j] < classes) continue;",
        "      char a[128], b[4096];",
        "      snprintf(a, sizeof a, \"%lld which is outside the valid range of [0, %lld)\", "
        "(long long)l[j], (long long)classes);",
        "      size_t at = 0;",
        "      b[0] = 0;",
        "      for (int64_t q = 0; q < n && at + 24 < sizeof b; ++q)",
        "        at += size_t(snprintf(b + at, sizeof b - at, q ? \" %lld\" : \"%lld\", "
        "(long long)l[q]));",
        f"      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, {c_string(msg)}, a, b);",
        "    }",
        f"    if (n > 0) std::memcpy(o, l, size_t(n) * sizeof({t}));",
        *free_temps(op),
        "  }"]
