// Element types of generated CUDA libraries that C++ lacks: 16-bit floats.
// args.h (the kernels' argument structs, shared by nvcc and the host
// compiler) names them; in device code they are CUDA's __half and
// __nv_bfloat16, on the host (which only passes pointers) their 16-bit
// storage, so both compilers agree on every layout.
#ifndef TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_TYPES_H_
#define TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_TYPES_H_

#include <cstdint>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __half disc_cuda_f16;
typedef __nv_bfloat16 disc_cuda_bf16;
#else
typedef uint16_t disc_cuda_f16;
typedef uint16_t disc_cuda_bf16;
#endif

static_assert(sizeof(disc_cuda_f16) == 2 && sizeof(disc_cuda_bf16) == 2, "16-bit floats");

#endif  // TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_TYPES_H_
