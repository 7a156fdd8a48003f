"""Runs fuzz programs in stock TF (eagerly) and under blade_disc_tf, compares.

A case passes when, for every call, either both raise the same kind of
tf.errors.OpError, or both return the same dtypes and shapes and values equal
within a tolerance (NaNs in the same places, infinities equal)."""
from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Optional

import numpy as np

from .generator import Generator, OpCatalog, Program, build_fn, make_inputs, random_dims

CALLS_PER_CASE = 3


@dataclasses.dataclass
class Failure:
    seed: int
    program: Program
    message: str
    dims: Optional[dict] = None

    def reproducer(self) -> str:
        return (f"--- FAIL seed={self.seed}: {self.message}\n"
                f"    dims={self.dims}\n"
                f"    rerun: python -m tests.fuzz --cases 1 --seed {self.seed} -v\n"
                + "\n".join("    " + ln for ln in self.program.describe().splitlines()))


def _outcome(call):
    import tensorflow as tf
    try:
        return [np.asarray(t.numpy() if hasattr(t, "numpy") else t) for t in call()], None
    except tf.errors.OpError as e:
        return None, e


def _tolerance(dtype) -> tuple[float, float]:
    if dtype == np.float32:
        return 2e-5, 1e-6
    if dtype == np.float64:
        return 1e-12, 1e-14
    return 0.0, 0.0


def compare(want, got) -> Optional[str]:
    if len(want) != len(got):
        return f"{len(got)} outputs, TF has {len(want)}"
    for i, (w, g) in enumerate(zip(want, got)):
        if w.dtype != g.dtype or w.shape != g.shape:
            return f"output {i}: {g.dtype}{list(g.shape)}, TF {w.dtype}{list(w.shape)}"
        if w.dtype.kind in "biu":
            if not np.array_equal(w, g):
                bad = np.argwhere(w != g)[:3].tolist()
                return f"output {i}: differs at {bad}: {g[tuple(np.array(bad).T)]} " \
                       f"vs TF {w[tuple(np.array(bad).T)]}"
            continue
        rtol, atol = _tolerance(w.dtype)
        # Scale atol with the magnitude the chain went through: compare in ulps
        # of the larger of the two values.
        same_nan = np.array_equal(np.isnan(w), np.isnan(g))
        finite = np.isfinite(w) & np.isfinite(g)
        inf_ok = np.array_equal(np.where(np.isinf(w), w, 0), np.where(np.isinf(g), g, 0))
        close = np.isclose(g[finite], w[finite], rtol=rtol, atol=atol)
        if not (same_nan and inf_ok and close.all()):
            diff = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
            bad = np.argwhere(diff)[:3].tolist()
            idx = tuple(np.array(bad).T) if bad else ()
            return f"output {i}: differs at {bad}: {g[idx] if bad else g} vs TF " \
                   f"{w[idx] if bad else w}"
    return None


def run_program(program: Program, disc_module, calls: int = CALLS_PER_CASE) -> Optional[Failure]:
    import tensorflow as tf

    fn = build_fn(program)
    specs = [tf.TensorSpec([None] * len(v.shape), tf.as_dtype(v.dtype)) for v in program.inputs]
    compiled = tf.function(fn, input_signature=specs)
    rng = np.random.default_rng(program.seed)
    for _ in range(calls):
        dims = random_dims(program, rng)
        arrays = make_inputs(program, rng, dims)
        want, want_err = _outcome(lambda: fn(*[tf.constant(a) for a in arrays]))
        got, got_err = _outcome(lambda: compiled(*arrays))
        if want_err is not None or got_err is not None:
            if type(want_err) is not type(got_err) and not _known_quirk(want_err, got_err):
                if _stock_graph_error_like(fn, specs, arrays, got_err, disc_module):
                    GRAPH_MODE_DIFFS.append(program.seed)
                    continue
                return Failure(program.seed, program,
                               f"TF: {_err(want_err)}; disc: {_err(got_err)}", dims)
            continue
        msg = compare(want, got)
        if msg and _ill_conditioned(program, arrays, want, got):
            ILL_CONDITIONED.append(program.seed)
            msg = None
        if msg and _same_as_stock_graph(fn, specs, arrays, got, disc_module):
            GRAPH_MODE_DIFFS.append(program.seed)
            msg = None
        if msg:
            return Failure(program.seed, program, msg, dims)
    return None


def _known_quirk(want_err, got_err) -> bool:
    """TF 2.21's CPU TruncateDiv reports integer division by zero as an
    InternalError ("only integer div and mod should have errors"); we report
    InvalidArgumentError("Integer division by zero") like Div/FloorDiv do.
    Both fail the step; only the error class differs (reported, not fixed)."""
    import tensorflow as tf
    return (isinstance(want_err, tf.errors.InternalError)
            and "only integer div and mod should have errors" in str(want_err)
            and isinstance(got_err, tf.errors.InvalidArgumentError))
    # (our message may name another failing op of the same fused kernel, e.g.
    # a negative integer power computed from that division)


ILL_CONDITIONED: list = []
GRAPH_MODE_DIFFS: list = []


def _stock_graph_error_like(fn, specs, arrays, got_err, disc_module) -> bool:
    """Stock TF graph mode (without us) fails the same way we do (or, like
    us, does not fail: Grappler prunes an op whose value is never used)."""
    import tensorflow as tf
    disc_module.disable()
    try:
        _, err = _outcome(lambda: tf.function(fn, input_signature=specs)(*arrays))
    finally:
        disc_module.enable()
    return type(err) is type(got_err)


def _same_as_stock_graph(fn, specs, arrays, got, disc_module) -> bool:
    """True when stock TF's own graph mode (a tf.function without us) gives
    our answer: TF's Grappler rewrote the graph before we saw it (e.g. the
    arithmetic optimizer turns LogicalNot(GreaterEqual(a, b)) into Less(a, b),
    which differs from eager TF for NaN)."""
    import tensorflow as tf
    disc_module.disable()
    try:
        stock, err = _outcome(lambda: tf.function(fn, input_signature=specs)(*arrays))
    finally:
        disc_module.enable()
    return err is None and compare(stock, got) is None


def _promote(program: Program) -> Program:
    """The same program computed in float64 wherever it uses float32."""
    import copy
    p = copy.deepcopy(program)
    for v in p.inputs:
        v.dtype = 2 if v.dtype == 1 else v.dtype
    for st in p.steps:
        st.dtype = 2 if st.dtype == 1 else st.dtype
        if st.attrs.get("DstT") == 1:
            st.attrs["DstT"] = 2
        st.args = [a if isinstance(a, str) or a[1].dtype != np.float32
                   else ("const", a[1].astype(np.float64)) for a in st.args]
    return p


def _ill_conditioned(program: Program, arrays, want, got) -> bool:
    """True when float32 TF itself is as far from a float64 evaluation as we
    are from TF: the difference is rounding amplified by the program (e.g.
    tan(exp(x)) with a 1-ulp different exp), not a wrong answer."""
    import tensorflow as tf
    if not any(w.dtype in (np.float32, np.float64) for w in want):
        return False
    env: dict = {}
    try:
        ref = [np.asarray(t) for t in build_fn(_promote(program), env)(
            *[tf.constant(a.astype(np.float64) if a.dtype == np.float32 else a)
              for a in arrays])]
    except Exception:  # noqa: BLE001 - no float64 reference: not excusable
        return False
    # The largest finite float magnitude the program went through: float32
    # rounding of it (a few ulps) is an absolute error that cancellation
    # (Sub, FloorMod, ...) can leave in a small result, in TF as in ours.
    mags = [np.abs(np.asarray(v, dtype=np.float64)) for v in env.values()
            if hasattr(v, "dtype") and v.dtype.is_floating]
    scale = max([float(m[np.isfinite(m)].max()) for m in mags if np.isfinite(m).any()] or [0.0])
    abs_bound = 8 * float(np.finfo(np.float32).eps) * scale
    # float64 outputs have no more precise reference: TF's own value, with the
    # bound taken from TF's own (eager, float64) intermediates.
    env64: dict = {}
    try:
        build_fn(program, env64)(*[tf.constant(a) for a in arrays])
    except Exception:  # noqa: BLE001
        env64 = {}
    mags64 = [np.abs(np.asarray(v, dtype=np.float64)) for v in env64.values()
              if hasattr(v, "dtype") and v.dtype == tf.float64]
    scale64 = max([float(m[np.isfinite(m)].max()) for m in mags64 if np.isfinite(m).any()]
                  or [0.0])
    bound64 = 8 * float(np.finfo(np.float64).eps) * scale64
    for w, g, r in zip(want, got, ref):
        if compare([w], [g]) is None:
            continue
        if w.dtype == np.float64:
            bad = ~np.isclose(g, w, rtol=1e-12, atol=1e-14, equal_nan=True)
            if not np.array_equal(np.isnan(g), np.isnan(w)) or \
                    not (np.isfinite(g[bad]) & np.isfinite(w[bad])).all():
                return False
            if not (np.abs(g[bad] - w[bad]) <= bound64).all():
                return False
            continue
        if w.dtype != np.float32:
            return False
        r = r.astype(np.float64)
        with np.errstate(invalid="ignore"):
            ours = np.abs(g.astype(np.float64) - r)
            theirs = np.abs(w.astype(np.float64) - r)
        bad = ~np.isclose(g, w, rtol=2e-5, atol=1e-6, equal_nan=True)
        bad &= np.isfinite(g) & np.isfinite(w)
        if not bad.any() and compare([w], [g]) is not None:
            return False       # NaN/Inf placement differs: never excused
        # excused only where TF float32 is itself off from float64 by more
        # than we are off from TF float32 (ill-conditioned), or we are at
        # least as close to float64 as TF is.
        tf_error = theirs[bad] > 1e-3 * np.maximum(np.abs(r[bad]), 1.0)
        both_rounding = (ours[bad] <= abs_bound) & (theirs[bad] <= abs_bound)
        if not np.all(tf_error | both_rounding | (ours[bad] <= theirs[bad] * 1.01)):
            return False
    return True


def _err(e) -> str:
    if e is None:
        return "no error"
    return f"{type(e).__name__}: {' '.join(str(e.message).split())[:200]}"


def run_cases(cases: int, seed: int, verbose: bool = False, max_steps: int = 8,
              cache_dir: Optional[str] = None):
    """Returns (passed, failures, stats)."""
    import blade_disc_tf as disc

    import tensorflow as tf
    tf.get_logger().setLevel("ERROR")
    cache_dir = cache_dir or tempfile.mkdtemp(prefix="disc-fuzz-")
    disc.enable(min_cluster_size=1, cache_dir=cache_dir, async_compile=False,
                forbid_compile=False)
    catalog = OpCatalog()
    if verbose:
        print(f"families: unary={catalog.unary} binary={catalog.binary} "
              f"special={sorted(catalog.special)} skipped={catalog.skipped}")
    passed, failures = 0, []
    for i in range(cases):
        case_seed = seed + i
        program = Generator(catalog, case_seed, max_steps).generate()
        if verbose:
            print(program.describe())
        try:
            failure = run_program(program, disc)
        except Exception as e:  # noqa: BLE001 - a crash of the harness is a failure too
            failure = Failure(case_seed, program, f"harness error {type(e).__name__}: {e}")
        if failure is None:
            passed += 1
        else:
            failures.append(failure)
            print(failure.reproducer(), flush=True)
        if verbose or (i + 1) % 100 == 0:
            print(f"... {i + 1} cases, {len(failures)} failed", flush=True)
    return passed, failures, disc.stats()


def total_fallbacks(stats: dict) -> dict:
    reasons: dict = {}
    for c in stats.get("clusters", {}).values():
        for r, n in c.get("fallback_reasons", {}).items():
            reasons[r] = reasons.get(r, 0) + n
    return reasons


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
