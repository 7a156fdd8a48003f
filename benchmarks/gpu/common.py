"""What both sides of the GPU validation harness share (numpy only): the
bundle's manifest format, inputs made from a seed, and the tolerance test.

make_cases.py (here, with TF) and run_cases.py (the GPU machine: numpy and
torch, no TF) both import this file, so an input made from a seed on the GPU
machine is the very array stock TF saw here: PCG64's `random()` stream is
fixed across numpy versions, and each input's checksum in the manifest
proves it."""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

MANIFEST = "manifest.json"
FORMAT = 1  # bumped when the manifest's layout changes

# Manifest dtype names -> numpy dtypes (the bundle has no bfloat16 case:
# torch and numpy would disagree on its .npy encoding).
DTYPES = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
          "int32": np.int32}
# Unit roundoff (half an ulp at 1) per dtype, for tolerances.
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "float64": 2.0 ** -53}


def make_input(spec: dict[str, Any]) -> np.ndarray:
    """The input an entry of a shape's "inputs" describes: offset + scale *
    U[-1, 1) drawn in float64 from PCG64(seed), rounded to the dtype."""
    rng = np.random.Generator(np.random.PCG64(int(spec["seed"])))
    shape = tuple(int(d) for d in spec["shape"])
    values = spec.get("offset", 0.0) + spec.get("scale", 1.0) * (rng.random(shape) * 2.0 - 1.0)
    return values.astype(DTYPES[spec["dtype"]])


def checksum(x: np.ndarray) -> float:
    """A position-weighted float64 sum: equal arrays give equal checksums,
    and a reordered or reshuffled stream does not."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    weights = 1.0 + (np.arange(flat.size, dtype=np.float64) % 1009) / 1009.0
    return float(np.dot(flat, weights))


def tolerance(tol: dict[str, Any], ref: np.ndarray, scale: np.ndarray | None,
              allow_tf32: bool) -> np.ndarray:
    """Per-element allowed |ours - ref| of a manifest tolerance entry.

    kinds:
      "ulp":  ulps * u(dtype) * |ref| + atol  (elementwise chains; u is the
              unit roundoff, so 8 ulps = 2^-20 relative in float32);
      "sum":  rel * scale + atol, scale being the same op evaluated in
              float64 on |inputs| (sum of |terms|: Σ|x| of a reduction,
              Σ|a||b| of a GEMM); rel_tf32 replaces rel when TF32 is on;
      "mixed": atol + rtol * |ref| (normalised outputs: softmax, LayerNorm,
              a whole BERT layer), atol_tf32/rtol_tf32 when TF32 is on.
    """
    kind = tol["kind"]
    ref = np.abs(np.asarray(ref, dtype=np.float64))
    if kind == "ulp":
        return tol["ulps"] * UNIT_ROUNDOFF[tol["dtype"]] * ref + tol["atol"]
    if kind == "sum":
        if scale is None:
            raise ValueError("a 'sum' tolerance needs the |inputs| scale")
        rel = tol["rel_tf32"] if allow_tf32 and "rel_tf32" in tol else tol["rel"]
        return rel * np.abs(np.asarray(scale, dtype=np.float64)) + tol["atol"]
    if kind == "mixed":
        suffix = "_tf32" if allow_tf32 and "atol_tf32" in tol else ""
        return tol["atol" + suffix] + tol["rtol" + suffix] * ref
    raise ValueError(f"unknown tolerance kind {kind!r}")


def check(ours: np.ndarray, ref: np.ndarray, allowed: np.ndarray) -> tuple[bool, float, float]:
    """(all within allowed, max |error|, worst error / allowed ratio).  NaNs
    must sit where the reference has them."""
    with np.errstate(invalid="ignore"):  # NaN/garbage outputs are judged below
        ours64 = np.asarray(ours, dtype=np.float64)
    ref64 = np.asarray(ref, dtype=np.float64)
    if ours64.shape != ref64.shape:
        return False, float("inf"), float("inf")
    nan_ok = np.array_equal(np.isnan(ours64), np.isnan(ref64))
    finite = ~np.isnan(ref64)
    err = np.abs(ours64 - ref64)[finite]
    err[np.isnan(err)] = np.inf  # a NaN of ours where the reference has a number
    if err.size == 0:
        return nan_ok, 0.0, 0.0
    allowed = np.broadcast_to(allowed, ref64.shape)[finite]
    ratio = err / np.maximum(allowed, np.finfo(np.float64).tiny)
    return bool(nan_ok and np.all(err <= allowed)), float(err.max()), float(ratio.max())


def write_manifest(bundle: str, manifest: dict[str, Any]) -> str:
    path = os.path.join(bundle, MANIFEST)
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    return path


def read_manifest(bundle: str) -> dict[str, Any]:
    """The bundle's manifest; ValueError when its format is another one."""
    with open(os.path.join(bundle, MANIFEST)) as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"manifest format {manifest.get('format')} (this harness reads {FORMAT})")
    return manifest
