"""Symbolic dimensions, all in one module.

A dim is a string: an integer ("3"), a symbol for an unknown input dim
("s0"), or a broadcast of two dims ("bcast(s0,s1)": TF's rule, which is
checked at run time by an assert op).  Strings keep IR printing trivial.

ShapeEnv keeps *queries* (known_equal: commits to nothing) apart from
*assumptions* (assume_equal: the caller must emit a runtime check, which the
lowering does with an assert op).  When a question cannot be decided
statically the answer is "not known", never a guess.
"""
from __future__ import annotations

import functools
import hashlib
import re

from ..errors import ShapeError

Dim = str

# Hash-consing: a derived dim longer than this is replaced by a name
# ("e" + 16 hex digits of its text's sha1) whose definition _DEFS holds.
# Parts are interned before their parents, so a dim is a DAG of short
# strings: a residual chain whose every block reuses the previous dim twice
# (bcast(h, f(h))) grows linearly, not 2^blocks.  Names are content-
# addressed (the same in every process); parse_dim sees through them.
INTERN_LEN = 160
_DEFS: dict[str, str] = {}


def intern_dim(text: Dim) -> Dim:
    """text, or its name when it is long."""
    if len(text) <= INTERN_LEN:
        return text
    name = "e" + hashlib.sha1(text.encode()).hexdigest()[:16]
    _DEFS.setdefault(name, text)
    return name


def definition(d: Dim) -> Dim:
    """The text an interned name stands for (d itself otherwise)."""
    return _DEFS.get(d, d)


_INTERNED_RE = re.compile(r"\be[0-9a-f]{16}\b")


def interned_definitions(text: str) -> list[tuple[Dim, Dim]]:
    """(name, definition) of every interned name in `text` and, transitively,
    in those definitions, parts before their parents: what another process
    needs to expand the dims of `text` (ir/printer.py writes them)."""
    out: list[tuple[Dim, Dim]] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in _DEFS:
            return
        seen.add(name)
        for part in _INTERNED_RE.findall(_DEFS[name]):
            visit(part)
        out.append((name, _DEFS[name]))

    for name in _INTERNED_RE.findall(text):
        visit(name)
    return out


def define_interned(name: Dim, text: Dim) -> None:
    """Registers `name` for `text` as intern_dim would (a dump read back in
    another process); ValueError when `name` is not text's content address."""
    if intern_dim(text) != name:
        raise ValueError(f"dim {name} is not the interned name of {text!r}")


def is_static(d: Dim) -> bool:
    return d.lstrip("-").isdigit()


def static_value(d: Dim) -> int | None:
    return int(d) if is_static(d) else None


def split_dims(text: str) -> list[Dim]:
    """'s0,bcast(s1,s2),3' -> ['s0', 'bcast(s1,s2)', '3'] (paren aware)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_dim(d: Dim) -> tuple:
    """Dim string -> ('const', n) | ('sym', name) | ('bcast', [parts])."""
    if is_static(d):
        return ("const", int(d))
    d = _DEFS.get(d, d)
    if d.startswith("bcast(") and d.endswith(")"):
        return ("bcast", split_dims(d[len("bcast("):-1]))
    fn = d.split("(", 1)[0]
    if fn in EXPR_FNS and d.endswith(")"):
        return ("expr", fn, split_dims(d[len(fn) + 1:-1]))
    if d.isidentifier():
        return ("sym", d)
    raise ValueError(f"bad dim {d!r}")


@functools.lru_cache(maxsize=65536)
def symbols_of(d: Dim) -> frozenset[str]:
    """Input symbols d depends on (memoized: shared parts are seen once)."""
    p = parse_dim(d)
    if p[0] == "sym":
        return frozenset({p[1]})
    if p[0] == "bcast":
        return frozenset().union(*(symbols_of(x) for x in p[1]))
    if p[0] == "expr":
        return frozenset().union(*(symbols_of(x) for x in p[2]))
    return frozenset()


def bcast_parts(d: Dim) -> list[Dim]:
    """Components of a (flat, n-ary) broadcast dim; [d] for other dims."""
    p = parse_dim(d)
    return list(p[1]) if p[0] == "bcast" else [d]


# Derived dims (shape arithmetic evaluated by the host before kernels run):
# "mul(a,b,..)", "add(a,b,..)", "sub(a,b)", "floordiv(a,b)" (0 when b == 0),
# "max(a,b)", "min(a,b)".  Build them with the dim_* helpers, which fold
# constants and keep one spelling for commutative forms.
# "rangelen(i,j,k,t)": element count of TF's Range over the scalar function
# inputs i, j, k (start, limit, delta) of TF dtype enum t, read by the host.
# "ifzero(c,a,b)": a when c == 0, else b.
# "val(i,k,t)": element k of the small int function input i (TF dtype enum
# t), read by the host at entry: a data value (x[:, :n], a reshape target)
# used as a dim without being a cache-key constant.  It may be negative, so
# the lowerings that use one check it as TF does.
# "segcount(i,t)": the last element + 1 of the int vector input i (0 when
# empty): SparseSegment*'s output rows, read by the host.
# "stitchlen(c,i,j,..)": max(c, 1 + every element of the int32 inputs i, j,
# ..): DynamicStitch's output rows for run-time indices, read by the host.
EXPR_FNS = ("mul", "add", "sub", "floordiv", "max", "min", "rangelen", "ifzero", "val",
            "segcount", "stitchlen")
# The dim functions the host reads from input data (not from shapes).
DATA_FNS = ("val", "segcount", "stitchlen")


def dim_val(arg: int, k: int, tf_enum: int) -> Dim:
    """Element k of function input arg, read at run time."""
    return f"val({arg},{k},{tf_enum})"


@functools.lru_cache(maxsize=65536)
def has_value_dims(d: Dim) -> bool:
    """Whether d depends on run-time data (DATA_FNS anywhere in it)."""
    p = parse_dim(d)
    if p[0] == "expr" and p[1] in DATA_FNS:
        return True
    return p[0] in ("expr", "bcast") and any(has_value_dims(x) for x in p[-1])


@functools.lru_cache(maxsize=65536)
def int32_order_safe(d: Dim) -> bool:
    """Whether max/min over d as an int32 value gives TF's answer when the
    host computes it in int64 and casts once at the end.  Add, sub and mul
    commute with that cast (both are arithmetic mod 2^32), max and min do
    not: TF's max(x + y, 0) for x + y past 2^31 - 1 sees the wrapped,
    negative sum.  Sizes (symbols, shape arithmetic) stay in range; a sum or
    product of run-time values (val) need not."""
    p = parse_dim(d)
    if p[0] != "expr" or not has_value_dims(d) or p[1] in DATA_FNS:
        return True
    return p[1] in ("max", "min") and all(int32_order_safe(x) for x in p[2])


def _mk(fn: str, parts: list) -> Dim:
    return intern_dim(f"{fn}(" + ",".join(parts) + ")")


def dim_mul(*ds: Dim) -> Dim:
    const, rest = 1, []
    for d in ds:
        p = parse_dim(d)
        if p[0] == "const":
            const *= p[1]
        elif p[0] == "expr" and p[1] == "mul":
            for x in p[2]:
                if is_static(x):
                    const *= int(x)
                else:
                    rest.append(x)
        else:
            rest.append(d)
    if const == 0 or not rest:
        return str(const)
    rest = sorted(rest)
    if const != 1:
        rest = [str(const)] + rest
    return rest[0] if len(rest) == 1 else _mk("mul", rest)


def dim_add(*ds: Dim) -> Dim:
    const, rest = 0, []
    for d in ds:
        p = parse_dim(d)
        if p[0] == "const":
            const += p[1]
        elif p[0] == "expr" and p[1] == "add":
            for x in p[2]:
                if is_static(x):
                    const += int(x)
                else:
                    rest.append(x)
        else:
            rest.append(d)
    rest = sorted(rest)
    if const != 0 or not rest:
        rest = rest + [str(const)]
    return rest[0] if len(rest) == 1 else _mk("add", rest)


def dim_sub(a: Dim, b: Dim) -> Dim:
    if is_static(a) and is_static(b):
        return str(int(a) - int(b))
    if is_static(b):
        return dim_add(a, str(-int(b)))
    if a == b:
        return "0"
    return _mk("sub", [a, b])


def dim_floordiv(a: Dim, b: Dim) -> Dim:
    if is_static(a) and is_static(b):
        return str(int(a) // int(b)) if int(b) else "0"
    if b == "1":
        return a
    if a == b:
        return "1"  # (0 // 0 is 0 at run time; only used where b > 0 is checked)
    return _mk("floordiv", [a, b])


@functools.lru_cache(maxsize=65536)
def known_nonneg(d: Dim) -> bool:
    """Whether d is >= 0 whatever its symbols are (symbols are input
    sizes; max/min/sums/products/quotients of such stay sizes)."""
    p = parse_dim(d)
    if p[0] == "const":
        return p[1] >= 0
    if p[0] == "sym":
        return True
    parts = p[1] if p[0] == "bcast" else p[2]
    if p[0] == "bcast" or (p[0] == "expr" and p[1] in ("mul", "add", "floordiv", "min")):
        return all(known_nonneg(x) for x in parts)
    if p[0] == "expr" and p[1] == "max":
        return any(known_nonneg(x) for x in parts)
    if p[0] == "expr" and p[1] == "ifzero":
        return known_nonneg(parts[1]) and known_nonneg(parts[2])
    return p[0] == "expr" and p[1] in ("rangelen", "stitchlen")


def dim_max(a: Dim, b: Dim) -> Dim:
    if is_static(a) and is_static(b):
        return str(max(int(a), int(b)))
    # max(0, size) is the size (VALID windows): folding it keeps a residual
    # Add's two operands one spelling instead of doubling the dim per block.
    if a == "0" and known_nonneg(b):
        return b
    if b == "0" and known_nonneg(a):
        return a
    return a if a == b else _mk("max", sorted([a, b]))


def dim_min(a: Dim, b: Dim) -> Dim:
    if is_static(a) and is_static(b):
        return str(min(int(a), int(b)))
    return a if a == b else _mk("min", sorted([a, b]))


def dim_ifzero(c: Dim, a: Dim, b: Dim) -> Dim:
    if is_static(c):
        return a if int(c) == 0 else b
    return a if a == b else _mk("ifzero", [c, a, b])


def _key(d: Dim) -> tuple:
    return (not is_static(d), len(d), d)


class ShapeEnv:
    """Symbols of one function plus the equalities assumed so far."""

    def __init__(self) -> None:
        self._parent: dict[Dim, Dim] = {}
        self._count = 0

    def fresh(self) -> Dim:
        name = f"s{self._count}"
        self._count += 1
        return name

    # -- union-find over dim strings -------------------------------------
    def canon(self, d: Dim) -> Dim:
        while self._parent.get(d, d) != d:
            d = self._parent[d]
        return d

    def known_equal(self, a: Dim, b: Dim) -> bool:
        """Query: True only if a == b is certain (statically or assumed)."""
        return self.canon(a) == self.canon(b)

    def equal_dims(self, d: Dim) -> list[Dim]:
        """Query: every dim known equal to d (d first)."""
        c = self.canon(d)
        seen = set(self._parent) | set(self._parent.values())
        return [d] + sorted((x for x in seen if x != d and self.canon(x) == c), key=_key)

    def known_one(self, d: Dim) -> bool:
        return self.canon(d) == "1"

    def assume_equal(self, a: Dim, b: Dim) -> None:
        """Record a == b.  The caller emits the matching runtime check."""
        ca, cb = self.canon(a), self.canon(b)
        if ca == cb:
            return
        if is_static(ca) and is_static(cb):
            raise ShapeError(f"dimension {ca} can never equal {cb}")
        # Prefer a static, then shorter, then smaller-named representative.
        if _key(cb) < _key(ca):
            ca, cb = cb, ca
        self._parent[cb] = ca

    # -- broadcasting -----------------------------------------------------
    def broadcast_dim(self, a: Dim, b: Dim) -> Dim:
        """Result dim of TF broadcasting a with b (runtime check separate)."""
        ca, cb = self.canon(a), self.canon(b)
        if ca == "1":
            return cb
        if cb == "1" or ca == cb:
            return ca
        if is_static(ca) and is_static(cb):
            raise ShapeError(f"Incompatible shapes: dims {ca} vs. {cb}")
        # Broadcast is associative, commutative and idempotent once checked:
        # keep one flat, sorted, duplicate-free spelling.
        parts = sorted({self.canon(p) for p in bcast_parts(ca) + bcast_parts(cb)} - {"1"},
                       key=_key)
        statics = [p for p in parts if is_static(p)]
        if len(statics) > 1:
            raise ShapeError(f"Incompatible shapes: dims {statics[0]} vs. {statics[1]}")
        if statics:  # the other parts must be 1 or equal to it
            return statics[0]
        if len(parts) == 1:
            return parts[0]
        return _mk("bcast", parts)

    def broadcast_shapes(self, *shapes: tuple[Dim, ...]) -> tuple[Dim, ...]:
        """numpy/TF broadcast of several shapes (right-aligned)."""
        rank = max((len(s) for s in shapes), default=0)
        out: list[Dim] = ["1"] * rank
        for s in shapes:
            padded = ["1"] * (rank - len(s)) + list(s)
            out = [self.broadcast_dim(o, d) for o, d in zip(out, padded)]
        return tuple(out)

    def needs_broadcast_check(self, a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
        """Whether broadcasting a with b can fail at run time."""
        rank = max(len(a), len(b))
        pa = ["1"] * (rank - len(a)) + list(a)
        pb = ["1"] * (rank - len(b)) + list(b)
        return any(not (self.known_one(x) or self.known_one(y) or self.known_equal(x, y))
                   for x, y in zip(pa, pb))
