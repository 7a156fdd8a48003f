"""The host side of generated CUDA libraries, run without a GPU
(cuda_harness.py's mock runtime): run-time schedule choices, the kernel
table, GEMM epilogues, shape errors before any launch, GEMM arguments the
CUDA runtime's own cuBLASLt translation accepts; and the compile request's
target and architecture (target/__init__.py target_for)."""
import ctypes
import os
import subprocess

import ml_dtypes
import numpy as np
import pytest

from blade_disc_tf.compiler import service
from blade_disc_tf.compiler.target import CudaTarget, target_for

from .cuda_cases import CASES, CASES_HOST_ONLY, NVCC, options, request
from .cuda_harness import MockCudaLibrary, args_layouts

pytestmark = [pytest.mark.cuda_compile,
              pytest.mark.skipif(NVCC is None, reason="no CUDA compiler (nvcc)")]

FATBIN_MAGIC = bytes.fromhex("50ed55ba")   # 0xBA55ED50, little-endian


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """name -> (MockCudaLibrary, args layouts) of a case, built once."""
    tmp = tmp_path_factory.mktemp("cuda_libs")
    built = {}

    def get(name: str, arch: str = "sm_90"):
        if (name, arch) not in built:
            fn, *specs = {**CASES, **CASES_HOST_ONLY}[name]
            req, fdef = request(fn, *specs, arch=arch)
            reply = service.compile_request(req, fdef, options(tmp))
            assert reply["ok"], reply
            _, units = service.compile_to_units(req, fdef, target=CudaTarget(arch))
            built[(name, arch)] = (MockCudaLibrary(reply["path"]), args_layouts(units[0]),
                                   reply["path"])
        return built[(name, arch)]
    return get


def f32(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("cols,variant,grid", [(300, "_warp", 2), (512, "_warp", 2),
                                                (513, "_block", 13), (4096, "_block", 13)])
def test_row_schedule_follows_the_row_length(build, cols, variant, grid):
    lib, layouts, _ = build("softmax")
    launches, gemms, errors = lib.call([f32(13, cols)])
    assert not errors and not gemms
    (launch,) = launches
    assert launch.name == "disc_stitch_0" + variant
    assert launch.block == (256, 1, 1) and launch.grid == (grid, 1, 1) and launch.smem == 0
    layout = layouts["disc_stitch_0"]
    assert launch.field(layout, "rows") == 13 and launch.field(layout, "dims", 1) == cols
    assert len(launch.args) == max(layout.values()) + 8


def test_vector_variant_needs_divisible_count_and_aligned_pointers(build):
    lib, layouts, _ = build("same_shape")
    x, y = f32(8, 64), f32(8, 64)
    (launch,), _, errors = lib.call([x, y])
    assert not errors and launch.name == "disc_kernel_0_vec"
    assert launch.grid == (1, 1, 1)   # 128 groups of 4 floats
    (launch,), _, _ = lib.call([x, y], offsets=[4, 0])   # a misaligned view
    assert launch.name == "disc_kernel_0_flat32"
    (launch,), _, _ = lib.call([f32(3, 5), f32(3, 5)])   # 15 % 4 != 0
    assert launch.name == "disc_kernel_0_flat32"
    assert launch.field(layouts["disc_kernel_0"], "n") == 15


def test_half_vector_variant_moves_eight_elements(build):
    lib, layouts, _ = build("half_product")
    x = np.ones((4, 512), np.float16)
    (launch,), _, errors = lib.call([x, x])
    assert not errors and launch.name == "disc_kernel_0_vec"
    assert launch.grid == (1, 1, 1)   # 2048 halves: 256 groups of 8
    (launch,), _, _ = lib.call([x, x], offsets=[2, 0])
    assert launch.name == "disc_kernel_0_flat32"


@pytest.mark.parametrize("case,dtype,gemm_dtype,activation", [
    ("half_bias_relu", np.float16, 19, 1), ("half_bias_gelu_tanh", np.float16, 19, 3),
    ("bf16_bias_gelu_tanh", ml_dtypes.bfloat16, 14, 3)])
def test_half_matmul_is_a_half_gemm_with_its_epilogue(build, case, dtype, gemm_dtype,
                                                       activation):
    """A half MatMul (float32 math between converts in the frontend) is one
    16-bit GEMM (passes/narrow_dots.py) computing its bias and activation
    (each op of TF's half GELU rounded between converts)."""
    lib, _, _ = build(case)
    h = [np.ones(s, dtype) for s in ((3, 768), (768, 3072), (3072,))]
    launches, (g,), errors = lib.call(h)
    assert not errors and not launches
    assert g.dtype == gemm_dtype and g.activation == activation   # DISC_DTYPE_HALF/BFLOAT16
    assert (g.a, g.b, g.bias) == tuple(lib.input_ptrs[:3])


def test_half_matmul_with_other_epilogue_runs_a_kernel_after_the_gemm(build):
    lib, _, _ = build("half_bias_gelu_erf")
    h = [np.ones(s, np.float16) for s in ((3, 768), (768, 3072), (3072,))]
    launches, (g,), errors = lib.call(h)
    assert not errors and g.dtype == 19 and not g.bias and g.activation == 0
    assert [k.name.rsplit("_", 1)[0] for k in launches] == ["disc_kernel_0"]


def test_broadcasting_call_takes_the_strided_variant(build):
    lib, layouts, _ = build("same_shape")
    (launch,), _, errors = lib.call([f32(4, 6), f32(1, 6)])
    assert not errors and launch.name == "disc_kernel_0_strided"
    layout = layouts["disc_kernel_0"]
    # y's row stride is 0: its one row is read for every row of x
    assert [launch.field(layout, "st1", d) for d in range(2)] == [0, 1]


def test_large_grid_is_capped_at_resident_waves(build):
    lib, _, _ = build("same_shape")
    (launch,), _, _ = lib.call([f32(2047, 1025), f32(2047, 1025)])   # odd: no _vec
    # 132 SMs x 8 resident 256-thread blocks x 4 waves
    assert launch.name == "disc_kernel_0_flat32" and launch.grid == (132 * 8 * 4, 1, 1)


def test_kernel_ids_name_the_exported_table(build):
    lib, _, path = build("layer_norm")
    names = lib.kernel_names()
    assert len(set(names)) == len(names) > 0
    launches, _, errors = lib.call([f32(6, 768), f32(768), f32(768)])
    assert not errors and launches
    assert all(names[k.kernel] == k.name for k in launches)
    assert lib.image()[:4] == FATBIN_MAGIC
    with open(path, "rb") as f:
        assert b"disc_entry" in f.read()


@pytest.mark.parametrize("case,activation", [("bias_relu", 1), ("bias_gelu_tanh", 3)])
def test_bias_and_activation_run_inside_the_gemm(build, case, activation):
    lib, _, _ = build(case)
    launches, (g,), errors = lib.call([f32(5, 768), f32(768, 3072), f32(3072)])
    assert not errors and not launches
    assert g.activation == activation and g.bias == lib.input_ptrs[2]
    assert (g.m, g.n, g.k, g.trans_a, g.trans_b) == (5, 3072, 768, 0, 0)
    assert g.a == lib.input_ptrs[0] and g.b == lib.input_ptrs[1] and not g.epilogue


def test_erf_gelu_is_a_kernel_after_the_gemm(build):
    lib, _, _ = build("bias_gelu_erf")
    launches, (g,), errors = lib.call([f32(5, 768), f32(768, 3072), f32(3072)])
    assert not errors and not g.bias and g.activation == 0
    assert [k.name.rsplit("_", 1)[0] for k in launches] == ["disc_kernel_0"]


def test_mismatched_shapes_fail_before_any_launch(build):
    lib, _, _ = build("bias_chain")
    launches, gemms, errors = lib.call([f32(2, 3), f32(4)])
    assert errors and errors[0][0] == 3   # InvalidArgument
    assert "Incompatible shapes: [2,3] vs. [4]" in errors[0][1]
    assert not launches and not gemms


def test_compile_request_selects_target_and_arch(tmp_path, build):
    opts = options(tmp_path)
    t = target_for({"target": "cuda", "cuda_arch": "sm_80"}, opts)
    assert isinstance(t, CudaTarget) and t.arch == "sm_80"
    assert target_for({}, opts).name == "cpu"
    assert target_for({"target": "cuda"}, opts).arch == CudaTarget().arch
    assert t.cache_identity() != target_for({"target": "cuda", "cuda_arch": "sm_90"},
                                            opts).cache_identity()
    # one library per architecture, each a cache hit the second time
    paths = {arch: build("bias_chain", arch)[2] for arch in ("sm_80", "sm_90")}
    assert paths["sm_80"] != paths["sm_90"]
    req, fdef = request(*CASES["bias_chain"], arch="sm_80")
    again = service.compile_request(req, fdef, opts)
    assert again["ok"]


def test_bad_arch_and_unsupported_ops_leave_the_cluster_in_tf(tmp_path):
    req, fdef = request(*CASES["bias_chain"], arch="volta")
    reply = service.compile_request(req, fdef, options(tmp_path))
    assert not reply["ok"] and "bad CUDA architecture 'volta'" in reply["error"]
    req, fdef = request(*CASES_HOST_ONLY["strided_sum"])
    reply = service.compile_request(req, fdef, options(tmp_path))
    assert not reply["ok"] and "target cuda cannot run" in reply["error"], reply


@pytest.mark.parametrize("case,dtype,gemm_dtype", [("bert_layer", np.float32, 1),
                                                   ("half_bert_layer", np.float16, 19)])
def test_bert_layer_host_code_runs_every_step(build, case, dtype, gemm_dtype):
    """The encoder layer's host code on [2, 7, 768]: all checks pass, every
    launch names a table entry with a non-empty grid, and the GEMMs are the
    layer's (Q, K, V, output and FFN projections, the attention products),
    16-bit ones for a half layer."""
    from .cuda_cases import _WEIGHTS
    lib, layouts, _ = build(case)
    weights = [f32(*shape).astype(dtype) for _, shape in _WEIGHTS]
    inputs = [f32(2, 7, 768).astype(dtype), f32(2, 1, 1, 7).astype(dtype)]
    launches, gemms, errors = lib.call([*inputs, *weights])
    assert not errors, errors
    assert {g.dtype for g in gemms} == {gemm_dtype}
    names = lib.kernel_names()
    assert launches and all(names[k.kernel] == k.name and k.grid[0] > 0 for k in launches)
    assert any(k.name.endswith("_warp") for k in launches)   # softmax and LayerNorm rows
    projections = sorted((g.m, g.n, g.k) for g in gemms if g.batch == 1 and g.m == 14)
    assert projections == sorted([(14, 768, 768)] * 4 + [(14, 3072, 768), (14, 768, 3072)])
    attention = [g for g in gemms if g.batch > 1 or g.m != 14]
    assert attention and all(g.m == 7 and g.n in (7, 64) for g in attention)


def test_column_reductions_are_two_deterministic_passes(build):
    lib, layouts, _ = build("column_reductions")
    launches, _, errors = lib.call([f32(4096, 8, 3)])
    assert not errors
    assert [k.name for k in launches] == ["disc_reduce_0_partial", "disc_reduce_0_finish",
                                          "disc_reduce_1_partial", "disc_reduce_1_finish"]
    layout = layouts["disc_reduce_0"]
    first = launches[0]
    fields = {f: first.field(layout, f) for f in ("outer", "red", "inner", "chunks", "chunk")}
    # sum over axis 0: 24 columns; 256 chunks of 16 rows fill the device
    assert fields == {"outer": 1, "red": 4096, "inner": 24, "chunks": 256, "chunk": 16}
    assert first.grid == (24, 1, 1) and launches[1].grid == (1, 1, 1)
    assert launches[1].args == first.args   # both passes read one struct
    # max over axes 0 and 1 of [4096, 8, 3]: 3 columns of 32768 rows
    second = {f: launches[2].field(layouts["disc_reduce_1"], f) for f in ("red", "inner")}
    assert second == {"red": 32768, "inner": 3}


@pytest.fixture(scope="module")
def plan_gemm(tmp_path_factory):
    """The runtime's PlanLtGemm on one DiscGemmArgs: "" or why it refuses
    (cuda_gemm_plan.cc built against the TF wheel's CUDA headers)."""
    import tensorflow as tf
    cuda = os.path.join(tf.sysconfig.get_include(), "third_party", "gpus", "cuda")
    if not os.path.isfile(os.path.join(cuda, "include", "cublasLt.h")):
        pytest.skip("the TF wheel ships no CUDA headers")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = str(tmp_path_factory.mktemp("gemm_plan") / "libgemm_plan.so")
    subprocess.run(["c++", "-std=c++17", "-O1", "-shared", "-fPIC", "-I", root,
                    "-I", os.path.join(cuda, "include"),
                    "-I", os.path.join(cuda, "libcudacxx", "include"),
                    os.path.join(root, "tests", "compiler", "cuda_gemm_plan.cc"),
                    os.path.join(root, "tf_disc", "runtime", "cuda", "cublaslt_gemm.cc"),
                    "-ldl", "-o", out], check=True, capture_output=True, text=True)
    fn = ctypes.CDLL(out).disc_test_plan_gemm
    fn.restype = ctypes.c_int

    def plan(g) -> str:
        error = ctypes.create_string_buffer(512)
        return "" if fn(ctypes.byref(g), error, len(error)) else error.value.decode()
    return plan


@pytest.mark.parametrize("case,dtype", [("bert_layer", np.float32),
                                        ("half_bert_layer", np.float16),
                                        ("bias_gelu_tanh", np.float32),
                                        ("bf16_bias_gelu_tanh", ml_dtypes.bfloat16)])
def test_runtime_plans_every_gemm_the_host_code_issues(build, plan_gemm, case, dtype):
    from .cuda_cases import _WEIGHTS
    lib, _, _ = build(case)
    if "bert" in case:
        inputs = [f32(2, 7, 768), f32(2, 1, 1, 7), *(f32(*s) for _, s in _WEIGHTS)]
    else:
        inputs = [f32(5, 768), f32(768, 3072), f32(3072)]
    _, gemms, errors = lib.call([x.astype(dtype) for x in inputs])
    assert not errors and gemms
    assert [plan_gemm(g) for g in gemms] == [""] * len(gemms)
    gemms[0].dtype = 3   # int32: a GEMM the runtime refuses
    assert plan_gemm(gemms[0])
