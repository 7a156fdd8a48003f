"""The CUDA code generator's device code, checked without a GPU: every
kernel of a representative set (elementwise chains with broadcasts, bias +
GELU, softmax and LayerNorm rows, row reductions, views, a BERT encoder
layer) compiles with nvcc for sm_80 and sm_90a within the register budget
of its 256-thread blocks and without spills, and the PTX shows the vector
accesses and warp shuffles its schedules are built on."""
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from blade_disc_tf.compiler.build.command import include_dir

from .cuda_cases import CASES, NVCC, sources

pytestmark = [pytest.mark.cuda_compile,
              pytest.mark.skipif(NVCC is None, reason="no CUDA compiler (nvcc)")]

# 65536 registers per SM: 64 per thread keeps eight 256-thread blocks resident.
MAX_REGISTERS = 64
ARCHS = ("sm_80", "sm_90a")


def _write(tmp, name: str, folder: str = "") -> str:
    """Case `name`'s device sources in tmp/<folder or name>."""
    args_h, kernels_cu, _ = sources(name)
    d = tmp / (folder or name)
    d.mkdir(exist_ok=True)
    (d / "args.h").write_text(args_h)
    (d / "kernels.cu").write_text(kernels_cu)
    return str(d)


def _nvcc(folder: str, *flags: str) -> subprocess.CompletedProcess:
    cmd = [NVCC, "-std=c++17", "-O3", *flags, "-I", include_dir(), "-I", folder,
           os.path.join(folder, "kernels.cu"), "-o", os.path.join(folder, "out")]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def parse_ptxas(text: str) -> dict[str, dict[str, int]]:
    """kernel -> {"registers", "spill_stores", "spill_loads", "stack"} from
    `ptxas -v` output."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill "
                      r"loads", line)
        if m and current is not None:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                           spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and current is not None:
            current["registers"] = int(m.group(1))
    return out


def test_parse_ptxas_reads_every_entry():
    text = ("ptxas info    : Compiling entry function 'k_flat' for 'sm_90a'\n"
            "ptxas info    : Function properties for k_flat\n"
            "    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
            "ptxas info    : Used 70 registers, used 0 barriers, 392 bytes cmem[0]\n")
    assert parse_ptxas(text) == {"k_flat": {"stack": 0, "spill_stores": 8, "spill_loads": 4,
                                            "registers": 70}}


@pytest.fixture(scope="module")
def ptxas_reports(tmp_path_factory):
    """(case, arch) -> parse_ptxas of its kernels.cu built to a cubin."""
    tmp = tmp_path_factory.mktemp("cuda_cubins")
    jobs = [(name, arch) for name in CASES for arch in ARCHS]

    def run(job):
        name, arch = job
        folder = _write(tmp, name, f"{name}_{arch}")   # one folder per job: they run at once
        proc = _nvcc(folder, "-cubin", f"-arch={arch}", "-Xptxas", "-v")
        assert proc.returncode == 0, f"{name} {arch}:\n{proc.stderr[-3000:]}"
        return job, parse_ptxas(proc.stderr)
    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(run, jobs))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", list(CASES))
def test_kernels_fit_registers_without_spills(ptxas_reports, name, arch):
    report = ptxas_reports[(name, arch)]
    names = re.findall(r"__global__ void __launch_bounds__\(DISC_BLOCK\) (\w+)\(",
                       sources(name)[1])
    assert names and sorted(report) == sorted(names), (sorted(report), names)
    for kernel, r in report.items():
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, (kernel, r)
        assert r["stack"] == 0, (kernel, r)
        assert r["registers"] <= MAX_REGISTERS, (kernel, r)


def _ptx_functions(ptx: str) -> dict[str, str]:
    """entry name -> its PTX body."""
    parts = re.split(r"\.visible \.entry (\w+)\(", ptx)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _cuda_functions(cu: str) -> dict[str, str]:
    """kernel name -> its CUDA source."""
    parts = re.split(r"__global__ void __launch_bounds__\(DISC_BLOCK\) (\w+)\(", cu)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


_ELEMENT_BYTES = {"float": 4, "double": 8, "int64_t": 8, "bool": 1,
                  "disc_cuda_f16": 2, "disc_cuda_bf16": 2}
# One access of 16, 8 or 4 bytes, as the PTX may spell it.
_VECTOR_PTX = {16: r"{op}\.v4\.(u32|b32|f32)|{op}\.v2\.(u64|b64|f64)",
               8: r"{op}\.v2\.(u32|b32|f32)|{op}\.v4\.(u16|b16)|{op}\.(u64|b64)",
               4: r"{op}\.(u32|b32)|{op}\.v2\.(u16|b16)|{op}\.v4\.(u8|b8)"}


def _vector_bytes(source: str) -> tuple[set[int], set[int]]:
    """The byte widths of a vectorized kernel's loads and stores: its
    disc_vec<T, N> inputs (x<k>) and outputs (y<m>)."""
    widths: dict[str, set[int]] = {"x": set(), "y": set()}
    for t, n, var in re.findall(r"disc_vec<(\w+), (\d+)> ([xy])\d+", source):
        widths[var].add(_ELEMENT_BYTES[t] * int(n))
    return widths["x"], widths["y"]


@pytest.mark.parametrize("name", ["bias_chain", "softmax", "layer_norm", "row_reductions",
                                  "half_chain", "half_softmax"])
def test_ptx_has_vector_accesses_and_warp_shuffles(tmp_path, name):
    folder = _write(tmp_path, name)
    proc = _nvcc(folder, "-ptx", "-arch=sm_90")
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(os.path.join(folder, "out")) as f:
        fns = _ptx_functions(f.read())
    source = _cuda_functions(sources(name)[1])
    assert fns and sorted(fns) == sorted(source)
    for fn, body in fns.items():
        assert ".local" not in body, fn   # nothing on the stack
        if fn.endswith("_vec"):
            loads, stores = _vector_bytes(source[fn])
            assert stores, fn
            for n in loads:
                assert re.search(_VECTOR_PTX[n].format(op=r"ld\.global\.nc"), body), (fn, n)
            for n in stores:
                assert re.search(_VECTOR_PTX[n].format(op=r"st\.global"), body), (fn, n)
        if fn.endswith(("_warp", "_block")):
            assert "shfl.sync.bfly" in body, fn
        if fn.endswith("_block"):
            assert "bar.sync" in body, fn


@pytest.mark.parametrize("name", ["bert_layer", "half_bert_layer"])
def test_bert_layer_runs_every_kernel_kind(name):
    """The encoder layer is one CUDA library: loop, vectorized and row
    kernels (softmax and both LayerNorms: no other reduction kernel), and
    GEMMs on the host side."""
    _, kernels_cu, host_cc = sources(name)
    assert "_vec(" in kernels_cu and "_warp(" in kernels_cu and "_block(" in kernels_cu
    assert "disc_reduce" not in kernels_cu
    assert "disc_gemm_batched" in host_cc
