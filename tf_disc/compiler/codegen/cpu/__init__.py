"""The CPU target's code generator: IR (after the pipeline) -> C++
translation units holding the prelude include, loop/row/column kernels
(kernel.py, stitch.py, reduce.py, ...) run through rt->parallel_for
(dispatch.py), and the disc_entry host wrapper (host.py); source.py
assembles them."""
from .source import generate_library, generate_source  # noqa: F401
