"""Seeded random graphs over the ops the compiler registers.

A case is a small program: a list of inputs (dtype + a symbolic shape made of
dim labels) and a list of steps, each one TF op applied to earlier values.  The
same program runs eagerly in stock TF and inside a tf.function under
blade_disc_tf; runner.py compares them.

Ops are picked by family from what the registry says is supported
(registry.support_table()), so ops other engineers register later are fuzzed
as soon as the generator knows their family; ops it cannot classify are
skipped.  Families:
  unary      1 input, same shape (any registered 1-input elementwise op)
  binary     2 inputs with numpy broadcasting (rule.shape_rule is broadcast_shape)
  select     Select (v1 shape rules) / SelectV2 (3-way broadcasting)
  cast       Cast to any registered dtype
  misc       BiasAdd, AddN, ZerosLike/OnesLike, Identity-like, Const operands
  reduce     Sum/Prod/Max/Min/Mean/All/Any with constant axes (if registered)
  matmul     MatMul / BatchMatMulV2 (if registered)

Symbolic shapes: a tuple of labels, each "1" (a static size-1 dim) or "dK"
(base dim K, whose size changes from call to call and may itself be 0 or 1).
Two values broadcast when their tail-aligned labels are equal or one is "1".
"""
from __future__ import annotations

import dataclasses
import random
from typing import Any, Callable, Optional

import numpy as np

MAX_RANK = 4
FLOAT_ENUMS = {1, 2}   # float32, float64
INT_ENUMS = {3, 9}     # int32, int64
BOOL_ENUM = 10
SPECIAL_FLOATS = [np.nan, np.inf, -np.inf, 0.0, 1e30, -1e-30, 88.0, -100.0, 0.5]
# Off by default, `python -m tests.fuzz --subnormals` turns them on:
# - subnormals: TF's own answer depends on where the element sits (Eigen
#   packet math runs under DAZ, its scalar tail calls libm: TF's float Log of
#   1e-45 is -inf in a 64-element tensor, -103.97 in a 4-element one); we
#   give one of TF's two answers per element (Log: the packet one; Pow,
#   Atan2, Log1p: the libm one), pinned by tests/reliability/test_fuzz_findings.py;
# - -0.0: TF's own sign of zero depends on the element's position (Relu(-0.0)
#   is -0.0 in Eigen's scalar tail, +0.0 inside a SIMD packet), visible
#   through Reciprocal/Div as -inf vs +inf.
SUBNORMALS = [1e-45, -1e-45, -3e-39, 5e-324, -1e-310, -0.0]


def use_subnormals(on: bool = True) -> None:
    global SPECIAL_FLOATS
    base = [v for v in SPECIAL_FLOATS if not any(v is w for w in SUBNORMALS)]
    SPECIAL_FLOATS = base + (SUBNORMALS if on else [])

REDUCE_OPS = ("Sum", "Prod", "Max", "Min", "Mean", "All", "Any")
MATMUL_OPS = ("MatMul", "BatchMatMulV2", "BatchMatMul")
PASS_OPS = ("Identity", "StopGradient", "Snapshot")
FILL_OPS = ("ZerosLike", "OnesLike")
SPECIAL_OPS = ("Select", "SelectV2", "Cast", "BiasAdd", "AddN", "Const") + \
    REDUCE_OPS + MATMUL_OPS + PASS_OPS + FILL_OPS


@dataclasses.dataclass
class Value:
    dtype: int          # TF DataType enum
    shape: tuple        # labels
    name: str


@dataclasses.dataclass
class Step:
    op: str
    args: list          # value names, or ("const", ndarray) pairs
    attrs: dict
    out: str
    dtype: int
    shape: tuple


@dataclasses.dataclass
class Program:
    seed: int
    inputs: list        # [Value]
    steps: list         # [Step]
    outputs: list       # value names
    base_rank: int

    def describe(self) -> str:
        lines = [f"# fuzz case seed={self.seed}"]
        for v in self.inputs:
            lines.append(f"{v.name} = input(dtype={_dt_name(v.dtype)}, shape={list(v.shape)})")
        for s in self.steps:
            args = ", ".join(a if isinstance(a, str) else f"const({a[1].tolist()!r}, "
                             f"{a[1].dtype})" for a in s.args)
            attrs = "".join(f", {k}={v!r}" for k, v in s.attrs.items())
            lines.append(f"{s.out} = {s.op}({args}{attrs})  # {_dt_name(s.dtype)} "
                         f"{list(s.shape)}")
        lines.append(f"return {', '.join(self.outputs)}")
        return "\n".join(lines)


def _dt_name(enum: int) -> str:
    import tensorflow as tf
    return tf.as_dtype(enum).name


def _broadcast(a: tuple, b: tuple) -> Optional[tuple]:
    n = max(len(a), len(b))
    a = ("1",) * (n - len(a)) + tuple(a)
    b = ("1",) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == "1":
            out.append(x)
        elif x == "1":
            out.append(y)
        else:
            return None
    return tuple(out)


def _needs_unknown_attr(op_def) -> bool:
    """An attr without a default that the generator cannot choose (e.g.
    Bucketize's boundaries): such ops are skipped, not called wrongly."""
    return any(a.type != "type" and not a.HasField("default_value") and
               a.name != "alpha" for a in op_def.attr)


class OpCatalog:
    """What the registry supports, sorted into families the generator knows."""

    def __init__(self, table: Optional[dict] = None):
        from blade_disc_tf.compiler import registry
        from tensorflow.python.framework import op_def_registry

        table = table if table is not None else registry.support_table()
        self.types: dict[str, set] = {}
        self.unary: list[str] = []
        self.binary: list[str] = []
        self.binary_same: list[str] = []   # 2 inputs of one shape, no broadcasting
        self.special: set[str] = set()
        self.skipped: list[str] = []
        self.arg_names: dict[str, list] = {}
        self.attr_values = {}
        for name, entry in sorted(table["ops"].items()):
            op_def = op_def_registry.get(name)
            rule = registry.REGISTRY.get(name)
            if op_def is None or rule is None:
                self.skipped.append(name)
                continue
            self.arg_names[name] = [a.name for a in op_def.input_arg]
            self.attr_values[name] = entry.get("attr_values", {})
            ta = entry.get("type_attrs", {})
            self.types[name] = set(ta.get("T", ta.get("dtype", [])))
            if not ta.get("T") and not op_def.attr:
                self.types[name] = {BOOL_ENUM}   # LogicalNot / LogicalAnd / LogicalOr
            if name in SPECIAL_OPS:
                self.special.add(name)
                continue
            n_in = len(op_def.input_arg)
            if any(a.number_attr or a.type_list_attr for a in op_def.input_arg) or \
                    len(op_def.output_arg) != 1 or rule.fusion != "elementwise" or \
                    _needs_unknown_attr(op_def):
                self.skipped.append(name)
            elif n_in == 1 and rule.shape_rule.__name__ == "same_shape":
                self.unary.append(name)
            elif n_in == 2 and rule.shape_rule.__name__ == "broadcast_shape":
                self.binary.append(name)
            elif n_in == 2 and rule.shape_rule.__name__ == "same_shape":
                self.binary_same.append(name)   # TanhGrad, ReluGrad, ...
            else:
                self.skipped.append(name)
        self.rules = registry.REGISTRY

    def out_dtype(self, op: str, in_dtypes: list) -> int:
        from blade_disc_tf.compiler import dtypes
        rule = self.rules[op]
        outs = rule.dtype_rule([dtypes.BY_ENUM[d] for d in in_dtypes], {})
        return outs[0].tf_enum

    def ops_for(self, names, dtype: int) -> list:
        return [n for n in names if dtype in self.types.get(n, set())]


class Generator:
    def __init__(self, catalog: OpCatalog, seed: int, max_steps: int = 8):
        self.cat = catalog
        self.rng = random.Random(seed)
        self.seed = seed
        self.max_steps = max_steps

    # -- helpers ---------------------------------------------------------
    def _new_input(self, dtype: int, shape: tuple) -> Value:
        v = Value(dtype, tuple(shape), f"in{len(self.inputs)}")
        self.inputs.append(v)
        self.values.append(v)
        return v

    def _random_shape(self, max_rank: Optional[int] = None) -> tuple:
        r = self.rng.randint(0, min(self.base_rank, max_rank if max_rank is not None else 9))
        labels = [f"d{self.base_rank - r + i}" for i in range(r)]
        return tuple("1" if self.rng.random() < 0.2 else lab for lab in labels)

    def _pick(self, dtype: Optional[int] = None, pred: Callable = lambda v: True,
              fresh_shape: Optional[tuple] = None, fresh_dtype: Optional[int] = None):
        cands = [v for v in self.values if (dtype is None or v.dtype == dtype) and pred(v)]
        # Prefer recent values so graphs are deep rather than wide.
        if cands and self.rng.random() < 0.85:
            return self.rng.choice(cands[-4:])
        dt = dtype if dtype is not None else (fresh_dtype or self.main_dtype)
        shape = fresh_shape if fresh_shape is not None else self._random_shape()
        if self.rng.random() < 0.12 and all(lab == "1" for lab in shape):
            return ("const", self._const(dt, tuple(1 for _ in shape))), dt, shape
        return self._new_input(dt, shape)

    def _const(self, dtype: int, shape: tuple) -> np.ndarray:
        import tensorflow as tf
        np_dt = tf.as_dtype(dtype).as_numpy_dtype
        if dtype in FLOAT_ENUMS:
            vals = [self.rng.choice(SPECIAL_FLOATS) if self.rng.random() < 0.2
                    else round(self.rng.uniform(-4, 4), 3) for _ in range(int(np.prod(shape)))]
        elif dtype == BOOL_ENUM:
            vals = [self.rng.random() < 0.5 for _ in range(int(np.prod(shape)))]
        else:
            vals = [self.rng.randint(-5, 5) for _ in range(int(np.prod(shape)))]
        return np.array(vals, dtype=np_dt).reshape(shape)

    def _arg(self, picked):
        """(name-or-const, dtype, shape) for a value or a const tuple."""
        if isinstance(picked, Value):
            return picked.name, picked.dtype, picked.shape
        const, dt, shape = picked
        return const, dt, shape

    def _emit(self, op: str, args: list, attrs: dict, dtype: int, shape: tuple) -> Value:
        out = f"v{len(self.steps)}"
        self.steps.append(Step(op, args, attrs, out, dtype, tuple(shape)))
        v = Value(dtype, tuple(shape), out)
        self.values.append(v)
        return v

    # -- families --------------------------------------------------------
    def g_unary(self) -> bool:
        dt = self.rng.choice(self._live_dtypes())
        ops = self.cat.ops_for(self.cat.unary, dt)
        if not ops:
            return False
        op = self.rng.choice(ops)
        a, adt, ashape = self._arg(self._pick(dt))
        attrs = {}
        if op == "LeakyRelu" and self.rng.random() < 0.5:
            attrs["alpha"] = self.rng.choice([0.0, 0.1, 1.5, -0.3])
        self._emit(op, [a], attrs, self.cat.out_dtype(op, [adt]), ashape)
        return True

    def g_binary(self) -> bool:
        dt = self.rng.choice(self._live_dtypes())
        ops = self.cat.ops_for(self.cat.binary + self.cat.binary_same, dt)
        if not ops:
            return False
        op = self.rng.choice(ops)
        attrs = {}  # e.g. Equal's incomplete_shape_error: TF's default is the allowed value
        a, _, ashape = self._arg(self._pick(dt))
        if op in self.cat.binary_same:
            b, _, bshape = self._arg(self._pick(dt, lambda v: v.shape == ashape,
                                                fresh_shape=ashape))
        else:
            b, _, bshape = self._arg(self._pick(dt, lambda v: _broadcast(ashape, v.shape)
                                                is not None, fresh_shape=self._compatible(ashape)))
        if self.rng.random() < 0.5:
            a, ashape, b, bshape = b, bshape, a, ashape
        shape = _broadcast(ashape, bshape)
        self._emit(op, [a, b], attrs, self.cat.out_dtype(op, [dt, dt]), shape)
        return True

    def _compatible(self, shape: tuple) -> tuple:
        """A random shape that broadcasts with `shape` (tail-aligned labels)."""
        r = self.rng.randint(0, len(shape))
        tail = shape[len(shape) - r:] if r else ()
        return tuple("1" if self.rng.random() < 0.3 else lab for lab in tail)

    def g_select(self) -> bool:
        ops = [o for o in ("Select", "SelectV2") if o in self.cat.special]
        if not ops:
            return False
        op = self.rng.choice(ops)
        dt = self.rng.choice(self._live_dtypes())
        if dt not in self.cat.types[op]:
            return False
        t, _, tshape = self._arg(self._pick(dt))
        if op == "SelectV2":
            c, _, cshape = self._arg(self._pick(BOOL_ENUM, lambda v: _broadcast(tshape, v.shape)
                                                is not None, fresh_shape=self._compatible(tshape)))
            e, _, eshape = self._arg(self._pick(dt, lambda v: _broadcast(tshape, v.shape)
                                                is not None, fresh_shape=self._compatible(tshape)))
            shape = _broadcast(_broadcast(tshape, cshape), eshape)
            if shape is None:
                return False
        else:
            e, _, _ = self._arg(self._pick(dt, lambda v: v.shape == tshape, fresh_shape=tshape))
            kind = self.rng.choice(["same", "scalar", "vector"] if tshape else ["same", "scalar"])
            cshape = {"same": tshape, "scalar": (), "vector": tshape[:1]}[kind]
            c, _, _ = self._arg(self._pick(BOOL_ENUM, lambda v: v.shape == cshape,
                                           fresh_shape=cshape))
            shape = tshape
        self._emit(op, [c, t, e], {}, dt, shape)
        return True

    def g_cast(self) -> bool:
        if "Cast" not in self.cat.special:
            return False
        dt = self.rng.choice(self._live_dtypes())
        if dt not in self.cat.types["Cast"] and self.cat.types["Cast"]:
            return False
        dst = self.rng.choice(sorted(self.cat.types["Cast"] or {1}))
        a, _, ashape = self._arg(self._pick(dt))
        self._emit("Cast", [a], {"DstT": dst}, dst, ashape)
        return True

    def g_misc(self) -> bool:
        choices = [o for o in ("BiasAdd", "AddN") + FILL_OPS + PASS_OPS if o in self.cat.special]
        if not choices:
            return False
        op = self.rng.choice(choices)
        dt = self.rng.choice(self._live_dtypes())
        if dt not in self.cat.types[op]:
            return False
        if op == "BiasAdd":
            x, _, xshape = self._arg(self._pick(dt, lambda v: len(v.shape) >= 2,
                                                fresh_shape=self._random_shape_min(2)))
            if len(xshape) < 2:
                return False
            b, _, _ = self._arg(self._pick(dt, lambda v: v.shape == xshape[-1:],
                                           fresh_shape=xshape[-1:]))
            self._emit(op, [x, b], {}, dt, xshape)
        elif op == "AddN":
            x, _, xshape = self._arg(self._pick(dt))
            rest = [self._arg(self._pick(dt, lambda v: v.shape == xshape, fresh_shape=xshape))[0]
                    for _ in range(self.rng.randint(0, 3))]
            self._emit(op, [x, *rest], {}, dt, xshape)
        else:
            x, xdt, xshape = self._arg(self._pick(dt))
            self._emit(op, [x], {}, xdt, xshape)
        return True

    def _random_shape_min(self, r: int) -> tuple:
        if self.base_rank < r:
            return ()
        labels = [f"d{i}" for i in range(self.base_rank - r, self.base_rank)]
        return tuple("1" if self.rng.random() < 0.2 else lab for lab in labels)

    def g_reduce(self) -> bool:
        ops = [o for o in REDUCE_OPS if o in self.cat.special]
        if not ops:
            return False
        op = self.rng.choice(ops)
        dt = BOOL_ENUM if op in ("All", "Any") else self.rng.choice(self._live_dtypes())
        if dt not in self.cat.types[op] and self.cat.types[op]:
            return False
        x, _, xshape = self._arg(self._pick(dt))
        r = len(xshape)
        axes = sorted(self.rng.sample(range(r), self.rng.randint(0, r))) if r else []
        if self.rng.random() < 0.3:
            axes = [a - r for a in axes]   # negative axes
        keep = self.rng.random() < 0.4
        shape = tuple(("1" if keep else None) if (i in axes or i - r in axes) else lab
                      for i, lab in enumerate(xshape))
        shape = tuple(s for s in shape if s is not None)
        const = ("const", np.array(axes, dtype=np.int32))
        self._emit(op, [x, const], {"keep_dims": keep}, dt, shape)
        return True

    def g_matmul(self) -> bool:
        ops = [o for o in MATMUL_OPS if o in self.cat.special]
        if not ops:
            return False
        op = self.rng.choice(ops)
        dt = self.rng.choice(self._live_dtypes())
        if dt not in self.cat.types[op]:
            return False
        # Inner dims get their own labels so that shapes always agree.
        m, k, n = "d0", "k" + str(self.rng.randint(0, 1)), "d1"
        if op == "MatMul":
            ta, tb = self.rng.random() < 0.5, self.rng.random() < 0.5
            ashape = (k, m) if ta else (m, k)
            bshape = (n, k) if tb else (k, n)
            attrs = {"transpose_a": ta, "transpose_b": tb}
            out = (m, n)
        else:
            adj_x, adj_y = self.rng.random() < 0.5, self.rng.random() < 0.5
            batch = tuple(self.rng.choice(["d2", "1"]) for _ in range(self.rng.randint(0, 1)))
            ashape = batch + ((k, m) if adj_x else (m, k))
            bshape = batch + ((n, k) if adj_y else (k, n))
            attrs = {"adj_x": adj_x, "adj_y": adj_y}
            out = batch + (m, n)
        a = self._new_input(dt, ashape)
        b = self._new_input(dt, bshape)
        self._emit(op, [a.name, b.name], attrs, dt, out)
        return True

    def _live_dtypes(self) -> list:
        dts = sorted({v.dtype for v in self.values} | {self.main_dtype})
        return dts

    # -- driver ----------------------------------------------------------
    def generate(self) -> Program:
        self.base_rank = self.rng.randint(0, MAX_RANK)
        self.inputs: list[Value] = []
        self.values: list[Value] = []
        self.steps: list[Step] = []
        enums = sorted({d for t in self.cat.types.values() for d in t} & {1, 2, 3, 9, 10})
        weights = {1: 5, 2: 2, 3: 2, 9: 1, 10: 1}
        self.main_dtype = self.rng.choices(enums, [weights[e] for e in enums])[0]
        self._new_input(self.main_dtype, self._random_shape())
        families = [(self.g_unary, 4), (self.g_binary, 5), (self.g_select, 1),
                    (self.g_cast, 1), (self.g_misc, 1), (self.g_reduce, 1),
                    (self.g_matmul, 1)]
        n = self.rng.randint(1, self.max_steps)
        tries = 0
        while len(self.steps) < n and tries < 20 * n:
            tries += 1
            fam = self.rng.choices([f for f, _ in families], [w for _, w in families])[0]
            fam()
        if not self.steps:
            self._emit("Identity", [self.inputs[0].name], {}, self.main_dtype,
                       self.inputs[0].shape)
        used = {a for s in self.steps for a in s.args if isinstance(a, str)}
        outs = [s.out for s in self.steps if s.out not in used]
        if self.rng.random() < 0.3:
            outs.append(self.rng.choice(self.steps).out)   # an interior value too
        return Program(self.seed, list(self.inputs), list(self.steps),
                       list(dict.fromkeys(outs)), self.base_rank)


def make_inputs(program: Program, rng: np.random.Generator, dims: dict) -> list:
    """Concrete arrays for one call: `dims` maps labels to sizes."""
    import tensorflow as tf
    arrays = []
    for v in program.inputs:
        shape = tuple(1 if lab == "1" else dims[lab] for lab in v.shape)
        np_dt = tf.as_dtype(v.dtype).as_numpy_dtype
        if v.dtype in FLOAT_ENUMS:
            a = rng.standard_normal(shape) * rng.choice([0.5, 2.0, 10.0])
            if a.size and rng.random() < 0.3:
                mask = rng.random(shape) < 0.15
                a = np.where(mask, rng.choice(np.array(SPECIAL_FLOATS), size=shape), a)
        elif v.dtype == BOOL_ENUM:
            a = rng.random(shape) < 0.5
        else:
            a = rng.integers(-9, 10, size=shape)
            if a.size and rng.random() < 0.1:
                a = np.where(rng.random(shape) < 0.1,
                             np.iinfo(np_dt).max if rng.random() < 0.5 else np.iinfo(np_dt).min,
                             a)
        arrays.append(np.asarray(a).astype(np_dt))
    return arrays


def random_dims(program: Program, rng: np.random.Generator) -> dict:
    labels = {lab for v in program.inputs for lab in v.shape if lab != "1"}
    cap = {0: 1, 1: 40, 2: 12, 3: 6, 4: 4}[min(program.base_rank, 4)]
    dims = {}
    for lab in sorted(labels):
        r = rng.random()
        dims[lab] = 0 if r < 0.1 else 1 if r < 0.3 else int(rng.integers(2, cap + 2))
    return dims


def build_fn(program: Program, capture: Optional[dict] = None) -> Callable:
    """The program as a Python function of its inputs (TF ops via tf.raw_ops)."""
    import inspect

    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    def input_names(op: str) -> list:
        n = len(op_def_registry.get(op).input_arg)
        return list(inspect.signature(getattr(tf.raw_ops, op)).parameters)[:n]

    def fn(*args):
        env: dict[str, Any] = {v.name: a for v, a in zip(program.inputs, args)}
        for s in program.steps:
            ins = [env[a] if isinstance(a, str) else tf.constant(a[1]) for a in s.args]
            kwargs = dict(s.attrs)
            if s.op == "Cast":
                kwargs["DstT"] = tf.as_dtype(kwargs["DstT"])
            if s.op == "AddN":
                kwargs["inputs"] = ins
            elif s.op == "Const":
                env[s.out] = ins[0]
                continue
            else:
                for arg, x in zip(input_names(s.op), ins):
                    kwargs[arg] = x
            env[s.out] = getattr(tf.raw_ops, s.op)(**kwargs)
        if capture is not None:   # eager runs only: every intermediate value
            capture.update(env)
        return [env[o] for o in program.outputs]

    return fn
