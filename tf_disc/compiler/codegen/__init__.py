"""IR (after the pipeline) -> one C++ translation unit: prelude helpers,
loop kernels (kernel.py), and the disc_entry host wrapper (host.py)."""
from .source import generate_source  # noqa: F401
