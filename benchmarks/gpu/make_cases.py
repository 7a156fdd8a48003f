"""Builds the GPU validation bundle (issue 26; GPU-BACKEND-BRIEF.md 4A.1),
here, with TF: every case compiled by our compiler for the `cuda` target
into its library .so (host code with the embedded fatbin), a manifest with
each shape's inputs (dtype, shape, seed, checksum), tolerances and the
reference to check against, stock-TF outputs (the case's dtype) and a float64
reference of TF's decomposition (reference.py, checked against TF's own
float64 run) as .npy for small shapes, and the CUDA headers the device-side harness
compiles against.  run.sh / run_cases.py run it on a GPU machine without TF.

    python benchmarks/gpu/make_cases.py [--out .gpu] [--arch sm_90 ...] [--quick]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import dataclasses
import os
import shutil
import subprocess
import sys
import time
import zlib
from typing import Any, Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for p in (ROOT, os.path.join(ROOT, "benchmarks", "gpu")):
    if p not in sys.path:
        sys.path.insert(0, p)

import tensorflow as tf  # noqa: E402

from blade_disc_tf.compiler import service  # noqa: E402
from blade_disc_tf.compiler.options import CompileOptions  # noqa: E402
from tests.compiler import cuda_cases as cc  # noqa: E402

import common  # noqa: E402

# Arrays up to this size travel as .npy while the bundle stays under
# SHIP_BUDGET (outputs first, then inputs, smallest first); every other
# input is made again from its seed on the device.
SHIP_MAX_BYTES = 4 << 20
SHIP_BUDGET = 18 << 20
F32_U = 2.0 ** -23  # float32 ulp at 1: the brief's k * 2^-23 GEMM term
# reference.py and TF's float64 run agree to this (max |diff| / max |TF|).
TF_F64_AGREEMENT = 1e-6
# Under the wheel's third_party/gpus/cuda: cuda.h/cublasLt.h, and the
# <nv/target> cuda_fp16.h includes.
CUDA_INCLUDE_DIRS = ("include", os.path.join("libcudacxx", "include"))


def loop_gelu_erf(x, b):
    return tf.nn.gelu(x + b, approximate=False)


def loop_gelu_tanh(x, b):
    return tf.nn.gelu(x + b, approximate=True)


def col_sum(x):
    return tf.reduce_sum(x, axis=0)


def dense(x, w, b):
    return tf.matmul(x, w) + b


def qk(q, k):
    return tf.matmul(q, k, transpose_b=True)


@dataclasses.dataclass
class Case:
    """One compiled function and the shapes it runs at on the device."""
    name: str
    fn: Callable
    specs: tuple
    op: str                    # reference.py REFERENCES key
    shapes: list[list[tuple]]  # per shape: every input's shape
    tol: dict[str, Any]
    scales: dict[int, tuple[float, float]] = dataclasses.field(default_factory=dict)
    small: int = 1             # the first `small` shapes get stock-TF outputs
    timing_shapes: list[list[tuple]] = dataclasses.field(default_factory=list)
    quick: bool = False        # in the --quick subset (its first shape only)


def _ulp(dtype: str, ulps: float, atol: float) -> dict[str, Any]:
    return {"kind": "ulp", "dtype": dtype, "ulps": ulps, "atol": atol}


def _gemm(k: int, extra: float = 1.0, atol: float = 0.0) -> dict[str, Any]:
    # COMPUTE_32F: k * 2^-23 * Σ|a||b|; TF32 operands: 2^-10 * Σ|a||b|.
    # `extra` covers an epilogue (|gelu'| <= 1.13), atol its own rounding.
    return {"kind": "sum", "rel": extra * (k + 1) * F32_U, "rel_tf32": extra * 2.0 ** -10,
            "atol": atol}


def _mixed(atol: float, rtol: float, tf32: tuple[float, float] | None = None) -> dict[str, Any]:
    out = {"kind": "mixed", "atol": atol, "rtol": rtol}
    if tf32:
        out["atol_tf32"], out["rtol_tf32"] = tf32
    return out


def _bert_shapes(pairs):
    return [[(b, s, cc.HIDDEN), (b, 1, 1, s), *(shape for _, shape in cc._WEIGHTS)]
            for b, s in pairs]


# BERT weights: small (as trained weights are), LayerNorm gains near 1.
_BERT_SCALES = {i + 2: ((1.0, 0.1) if n.endswith("_g") else (0.0, 0.05 if n[0] != "b" else 0.1))
                for i, (n, _) in enumerate(cc._WEIGHTS)}
# Twenty distinct (batch, seq) pairs: torch.compile(dynamic=True) vs ours.
_BERT_TIMING = [(b, s) for b in (1, 2, 4, 8, 16) for s in (16, 64, 128, 384)]


def cases() -> list[Case]:
    """The case list of the brief's 4A.1."""
    s, h = cc.spec, cc.half
    gelu_tol = _ulp("float32", 8, 1e-6)     # erf/tanh of CUDA libdevice: a few ulps each
    bs = [(1, 16), (8, 128), (32, 512)]
    return [
        Case("loop_gelu_erf", loop_gelu_erf, (s(None, None, 768), s(768)), "bias_gelu_erf",
             [[(b, q, 768), (768,)] for b, q in bs], gelu_tol, {0: (0.0, 3.0)}, quick=True),
        Case("loop_gelu_tanh", loop_gelu_tanh, (s(None, None, 768), s(768)), "bias_gelu_tanh",
             [[(b, q, 768), (768,)] for b, q in bs], gelu_tol, {0: (0.0, 3.0)}),
        Case("broadcast_chain", cc.broadcast_chain, cc.CASES["broadcast_chain"][1:],
             "broadcast_chain", [[(4, 1, 256), (4, 128, 1), ()], [(8, 1, 1024), (8, 512, 1), ()]],
             _ulp("float32", 4, 1e-7)),
        Case("softmax", cc.softmax, (s(None, None),), "softmax",
             [[(384, n)] for n in (7, 128, 512, 513, 1000, 4096)] + [[(64, 30522)], [(49152, 128)]],
             _mixed(1e-9, 2.0 ** -18), {0: (0.0, 4.0)}, small=6, quick=True),
        Case("half_softmax", cc.softmax, cc.CASES["half_softmax"][1:], "softmax",
             [[(384, n)] for n in (128, 512, 4096)], _mixed(1e-6, 2.0 ** -10), {0: (0.0, 4.0)},
             small=2),
        Case("layer_norm", cc.layer_norm, cc.CASES["layer_norm"][1:], "layer_norm",
             [[(n, 768), (768,), (768,)] for n in (16, 4096, 16384)],
             _mixed(2.0 ** -18, 2.0 ** -18), {0: (0.0, 2.0), 1: (1.0, 0.1), 2: (0.0, 0.1)},
             small=2, quick=True),
        Case("layer_norm_1024", cc.layer_norm, (s(None, 1024), s(1024), s(1024)), "layer_norm",
             [[(n, 1024), (1024,), (1024,)] for n in (16, 4096)],
             _mixed(2.0 ** -18, 2.0 ** -18), {0: (0.0, 2.0), 1: (1.0, 0.1), 2: (0.0, 0.1)},
             small=2),
        Case("column_sum", col_sum, (s(None, 768),), "column_sum",
             [[(n, 768)] for n in (1, 33, 4096)], {"kind": "sum", "rel": 2.0 ** -20, "atol": 0.0},
             small=3),
        Case("dense", dense, (s(None, 768), s(768, 3072), s(3072)), "dense",
             [[(m, 768), (768, 3072), (3072,)] for m in (1, 7, 128, 4096)], _gemm(768),
             small=3, quick=True),
        Case("dense_gelu_tanh", cc.bias_gelu_tanh, cc.CASES["bias_gelu_tanh"][1:],
             "dense_gelu_tanh", [[(m, 768), (768, 3072), (3072,)] for m in (1, 7, 128, 4096)],
             _gemm(768, 1.2, 1e-6), small=3),
        Case("dense_gelu_erf", cc.bias_gelu_erf, cc.CASES["bias_gelu_erf"][1:],
             "dense_gelu_erf", [[(m, 768), (768, 3072), (3072,)] for m in (1, 7, 128, 4096)],
             _gemm(768, 1.2, 1e-6), small=3),
        Case("qk", qk, (s(None, 12, None, 64), s(None, 12, None, 64)), "qk",
             [[(1, 12, 128, 64)] * 2, [(8, 12, 512, 64)] * 2], _gemm(64)),
        Case("bert_layer", cc.bert_layer, cc.CASES["bert_layer"][1:], "bert_layer",
             _bert_shapes([(1, 16), (2, 128), (32, 128)]), _mixed(1e-4, 1e-4, (2e-2, 2e-2)),
             _BERT_SCALES, small=2),
        Case("half_bert_layer", cc.bert_layer, cc.CASES["half_bert_layer"][1:], "bert_layer",
             _bert_shapes([(1, 16), (2, 128), (32, 128)]), _mixed(6e-2, 6e-2), _BERT_SCALES,
             small=2, timing_shapes=_bert_shapes(_BERT_TIMING)),
    ]


def _dtype_name(spec: tf.TensorSpec) -> str:
    return spec.dtype.as_numpy_dtype.__name__


def _seed(case: str, shape_index: int, input_index: int) -> int:
    return zlib.crc32(f"{case}/{shape_index}/{input_index}".encode())


def _input_specs(case: Case, shape_index: int, shapes: list[tuple]) -> list[dict[str, Any]]:
    out = []
    for j, (spec, shape) in enumerate(zip(case.specs, shapes)):
        offset, scale = case.scales.get(j, (0.0, 1.0))
        out.append({"dtype": _dtype_name(spec), "shape": list(shape), "offset": offset,
                    "scale": scale, "seed": _seed(case.name, shape_index, j)})
    return out


def _tf_outputs(fn: Callable, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Stock TF (CPU) on `arrays`: the tf.function traces per dtype."""
    out = tf.function(fn)(*[tf.constant(a) for a in arrays])
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


class _Shipper:
    """Collects the arrays worth shipping as .npy, then writes the smallest
    first (outputs before inputs) while the budget allows; each offer's
    `assign` gets its file name, or None when it stays behind."""

    def __init__(self, bundle: str) -> None:
        self.bundle, self.used, self.offers = bundle, 0, []

    def offer(self, rel: str, array: np.ndarray, priority: int,
              assign: Callable[[str | None], None]) -> None:
        self.offers.append((priority, array.nbytes, rel, array, assign))

    def ship(self) -> None:
        for _, nbytes, rel, array, assign in sorted(self.offers, key=lambda o: o[:3]):
            if nbytes > SHIP_MAX_BYTES or self.used + nbytes > SHIP_BUDGET:
                assign(None)
                continue
            path = os.path.join(self.bundle, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            np.save(path, array)
            self.used += nbytes
            assign(rel)
        self.offers = []


def _offer_all(shipper: _Shipper, prefix: str, arrays: list[np.ndarray], priority: int
               ) -> list[str | None]:
    """Offers arrays as <prefix><k>.npy; the returned list fills in on ship()."""
    names: list[str | None] = [None] * len(arrays)
    for k, a in enumerate(arrays):
        shipper.offer(f"{prefix}{k}.npy", a, priority,
                      lambda rel, k=k: names.__setitem__(k, rel))
    return names


def _shape_entry(case: Case, i: int, shapes: list[tuple], shipper: _Shipper,
                 with_tf: bool) -> dict[str, Any]:
    """One shape's manifest entry.  with_tf: stock TF's outputs (the case's
    dtype) and the float64 reference, reference.py's TF decomposition in
    numpy -- not TF's own float64 run, whose fused GELU is off by up to
    4e-7 relative -- checked against TF's float64 run (tf_f64_diff)."""
    import reference
    specs = _input_specs(case, i, shapes)
    arrays = [common.make_input(sp) for sp in specs]
    for j, (sp, a) in enumerate(zip(specs, arrays)):
        sp["checksum"] = common.checksum(a)
        shipper.offer(f"{case.name}/s{i}_in{j}.npy", a, 1,
                      lambda rel, sp=sp: sp.__setitem__("file", rel))
    entry: dict[str, Any] = {"inputs": specs}
    if with_tf:
        expected = _tf_outputs(case.fn, arrays)
        x64 = [a.astype(np.float64) for a in arrays]
        ops = reference.NumpyOps()
        ref64 = list(reference.REFERENCES[case.op](ops, *x64))
        tf64 = _tf_outputs(case.fn, x64)
        diff = max(float(np.max(np.abs(r - t))) / max(float(np.max(np.abs(t))), 1e-300)
                   for r, t in zip(ref64, tf64))
        if diff > TF_F64_AGREEMENT:
            raise RuntimeError(f"{case.name}: reference.py is not TF's op ({diff:.3g})")
        entry["expected"] = _offer_all(shipper, f"{case.name}/s{i}_tf", expected, 0)
        entry["reference_f64"] = _offer_all(shipper, f"{case.name}/s{i}_f64_", ref64, 0)
        entry["tf_f64_diff"] = diff
        # Stock TF CPU's own worst |error| / allowed (<= 1: TF meets it).
        scale = reference.abs_scale(case.op, ops, x64)
        entry["tf_error_ratio"] = max(
            common.check(e, r, common.tolerance(case.tol, r, scale, False))[2]
            for e, r in zip(expected, ref64))
    return entry


def _compile(case: Case, arch: str, bundle: str, cache: str) -> dict[str, Any]:
    """Our library for `case` on `arch`, copied into the bundle."""
    t0 = time.monotonic()
    req, fdef = cc.request(case.fn, *case.specs, arch=arch)
    reply = service.compile_request(req, fdef, CompileOptions(cache_dir=cache,
                                                              nvcc=cc.NVCC or "nvcc"))
    if not reply.get("ok"):
        raise RuntimeError(f"{case.name} ({arch}): {reply.get('error')}")
    rel = f"{case.name}/{arch}.so"
    os.makedirs(os.path.join(bundle, case.name), exist_ok=True)
    shutil.copyfile(reply["path"], os.path.join(bundle, rel))
    lib = ctypes.CDLL(os.path.join(bundle, rel))
    lib.disc_cuda_kernel_name.restype = ctypes.c_char_p
    kernels = [lib.disc_cuda_kernel_name(k).decode() for k in range(lib.disc_cuda_kernel_count())]
    return {"library": rel, "kernels": kernels, "compile_s": round(time.monotonic() - t0, 2)}


def copy_cuda_headers(bundle: str) -> list[str]:
    """The wheel's CUDA headers that harness.cc and runtime/cuda/*.cc include
    (the closure g++ -MM finds), copied into <bundle>/cuda/{include,
    libcudacxx/include}, so the device builds the harness against the
    headers the runtime was written for (CUDA 12.5's)."""
    base = os.path.realpath(os.path.join(tf.sysconfig.get_include(), "third_party", "gpus",
                                         "cuda"))
    here = os.path.dirname(os.path.abspath(__file__))
    incs = [x for d in CUDA_INCLUDE_DIRS for x in ("-I", os.path.join(base, d))]
    deps = subprocess.run(["g++", "-std=c++17", "-MM", "-I", ROOT, *incs,
                           os.path.join(here, "harness.cc")],
                          check=True, capture_output=True, text=True).stdout
    copied = []
    for path in deps.replace("\\\n", " ").split()[1:]:
        real = os.path.realpath(path)
        if real.startswith(base + os.sep):
            rel = os.path.relpath(real, base)
            os.makedirs(os.path.join(bundle, "cuda", os.path.dirname(rel)), exist_ok=True)
            shutil.copyfile(real, os.path.join(bundle, "cuda", rel))
            copied.append(rel)
    return sorted(copied)


def build(out: str, archs: list[str], quick: bool, jobs: int) -> dict[str, Any]:
    """Writes the bundle into `out` (replacing an earlier bundle there) and
    returns its manifest."""
    if os.path.isdir(out):
        if os.listdir(out) and not os.path.isfile(os.path.join(out, common.MANIFEST)):
            raise SystemExit(f"make_cases: {out} holds something other than a bundle")
        shutil.rmtree(out)
    os.makedirs(out)
    selected = [c for c in cases() if c.quick or not quick]
    cache = os.path.join(out, ".cache")
    shipper = _Shipper(out)
    manifest: dict[str, Any] = {"format": common.FORMAT, "archs": archs, "quick": quick,
                                "tf_version": tf.__version__, "cases": {}}
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        builds = {(c.name, a): pool.submit(_compile, c, a, out, cache)
                  for c in selected for a in archs}
        for c in selected:
            shapes = c.shapes[:1] if quick else c.shapes
            outputs = tf.nest.flatten(tf.function(c.fn).get_concrete_function(
                *c.specs).structured_outputs)
            entry = {"op": c.op, "tolerance": c.tol,
                     "input_dtypes": [_dtype_name(s) for s in c.specs],
                     "output_dtypes": [o.dtype.as_numpy_dtype.__name__ for o in outputs],
                     "shapes": [_shape_entry(c, i, sh, shipper, i < c.small)
                                for i, sh in enumerate(shapes)],
                     "timing_shapes": [] if quick else [
                         {"inputs": _input_specs(c, 1000 + i, sh)}
                         for i, sh in enumerate(c.timing_shapes)]}
            manifest["cases"][c.name] = entry
        for (name, arch), fut in builds.items():
            manifest["cases"][name].setdefault("builds", {})[arch] = fut.result()
    shipper.ship()
    shutil.rmtree(cache, ignore_errors=True)
    manifest["cuda_headers"] = copy_cuda_headers(out)
    manifest["shipped_bytes"] = shipper.used
    common.write_manifest(out, manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, ".gpu"))
    ap.add_argument("--arch", action="append", help="sm_90 (default); repeat for more")
    ap.add_argument("--quick", action="store_true", help="a few cases, first shape only")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if cc.NVCC is None:
        print("make_cases: no nvcc", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    manifest = build(args.out, args.arch or ["sm_90"], args.quick, args.jobs)
    for name, c in manifest["cases"].items():
        ratios = [s["tf_error_ratio"] for s in c["shapes"] if "tf_error_ratio" in s]
        worst = f"{max(ratios):.3g}" if ratios else "-"
        print(f"{name:18s} shapes={len(c['shapes'])} kernels="
              f"{len(next(iter(c['builds'].values()))['kernels'])} tf_vs_f64/tol={worst}")
    print(f"bundle {args.out}: {manifest['shipped_bytes'] / 2**20:.1f} MiB of .npy, "
          f"{time.monotonic() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
