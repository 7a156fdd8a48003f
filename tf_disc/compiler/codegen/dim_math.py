"""Host C++ for derived dims with well-defined int64 arithmetic.

Signed overflow is undefined behaviour in C++, and a wrapped dim would size
a buffer wrongly.  Every add/sub/mul of dims goes through GCC's
__builtin_*_overflow and an overflow is TF's InvalidArgument error
("Encountered overflow when multiplying a with b", as TensorShape reports a
shape whose element count overflows int64).  Each function returns the lines
defining `name` (an int64_t local of disc_entry, which may return early)."""
from __future__ import annotations

from typing import List

CHECKED = {"mul": ("__builtin_mul_overflow", "multiplying"),
           "add": ("__builtin_add_overflow", "adding"),
           "sub": ("__builtin_sub_overflow", "subtracting")}

INT64_MAX = "int64_t(0x7fffffffffffffffLL)"


def overflow_fail(word: str, a: str, b: str) -> str:
    """The disc_fail statement for `a word b` overflowing int64."""
    return ("return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, \"Encountered overflow when "
            f"{word} {{0}} with {{1}}\", disc_int_text({a}).s, disc_int_text({b}).s);")


def checked(name: str, fn: str, terms: List[str]) -> List[str]:
    """`name` = terms[0] fn terms[1] fn ..., left to right (TensorShape's
    order: a zero dim after an overflow does not hide it)."""
    builtin, word = CHECKED[fn]
    lines = [f"  int64_t {name} = {terms[0]};"]
    for t in terms[1:]:
        lines.append(f"  {{ int64_t r; if ({builtin}({name}, {t}, &r)) "
                     f"{overflow_fail(word, name, t)} {name} = r; }}")
    return lines


def floordiv(name: str, x: str, y: str) -> List[str]:
    """Floor division, 0 for a zero divisor (INT64_MIN / -1 overflows)."""
    return [f"  int64_t {name} = 0;",
            f"  if ({y} == -1) {{ if (__builtin_sub_overflow(int64_t(0), {x}, &{name})) "
            f"{overflow_fail('dividing', x, y)} }}",
            f"  else if ({y} != 0) {name} = {x} / {y} - (({x} % {y} != 0) && "
            f"(({x} < 0) != ({y} < 0)));"]


def range_len(name: str, reads: List[str], ctype: str, is_int: bool) -> List[str]:
    """TF Range's size from start, limit, delta (0 for a zero delta or an
    empty range; the sign checks are TF's, not repeated here), computed
    without overflow; TF's error when it exceeds int64."""
    s, l, d = reads
    head = f"const {ctype} s = {s}, l = {l}, d = {d};"
    fail = ("return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, "
            "\"Requires ((limit - start) / delta) <= {0}\", \"9223372036854775807\", \"\");")
    if is_int:  # the span as uint64 is exact whatever the signs
        body = ["uint64_t n = 0;",
                "if (d != 0 && (d > 0 ? l > s : s > l)) {",
                "  const uint64_t span = d > 0 ? uint64_t(l) - uint64_t(s) : "
                "uint64_t(s) - uint64_t(l);",
                "  const uint64_t step = d > 0 ? uint64_t(d) : uint64_t(0) - uint64_t(d);",
                "  n = span / step + (span % step != 0);",
                "}",
                f"if (n > uint64_t({INT64_MAX})) {fail}"]
    else:  # NaN, inf and sizes from 2^63 up are out of int64's range
        body = ["double n = 0;",
                "if (d != 0 && (d > 0 ? l > s : s > l)) "
                "n = std::ceil(std::abs(double((l - s) / d)));",
                f"if (!(n < 9223372036854775808.0)) {fail}"]
    return [f"  int64_t {name};", f"  {{ {head}",
            *(f"    {b}" for b in body), f"    {name} = int64_t(n); }}"]


def segment_count(name: str, last: str, count: str) -> List[str]:
    """Last segment id + 1 (0 for no ids); `count` is the number of ids."""
    return [f"  int64_t {name} = 0;",
            f"  if ({count} > 0 && __builtin_add_overflow({last}, int64_t(1), &{name})) "
            f"{overflow_fail('adding', last, 'int64_t(1)')}"]


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
