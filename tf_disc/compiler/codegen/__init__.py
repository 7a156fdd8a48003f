"""Code generation, after the pipeline.  This package holds what every
target's generated host code shares: C types, string literals, dim
arithmetic, the host's checks and allocations, library calls (GEMM,
windowed ops) and kernels as structured data (kernel_code.py).  Each target
has its own subpackage (cpu/: C++ kernels and the disc_entry host wrapper);
nothing here imports one."""
