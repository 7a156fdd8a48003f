"""Code generation for NVIDIA GPUs: device kernels as CUDA C++ (kernels.cu,
built by nvcc into a fatbin), host code as C++ (host.cc, g++) that checks
shapes, allocates and launches through the runtime's C ABI, and the
argument structs both share (args.h)."""
from .source import CudaLibrary, generate_library  # noqa: F401
