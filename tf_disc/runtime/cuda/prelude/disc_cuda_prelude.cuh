// Device-side helpers of every generated CUDA kernel module (kernels.cu,
// codegen/cuda/): the disc_* math the shared expression table calls
// (codegen/expressions.py) on CUDA's math library, 16-byte vector loads and
// stores for the vectorized loop variants, and warp/block all-reductions
// for row kernels.  Semantics follow TF on GPUs (CUDA math functions; NaN
// propagation as the CPU prelude's).
#ifndef TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_PRELUDE_CUH_
#define TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_PRELUDE_CUH_

#include <cstdint>
#include <cmath>

#include "cuda/prelude/disc_cuda_types.h"

#define DISC_DEVICE __device__ __forceinline__

// Threads per block of every generated kernel, and per warp.
#define DISC_BLOCK 256
#define DISC_WARP 32

// ---- math (float and double overloads; templates for the rest) ----
DISC_DEVICE float disc_exp(float x) { return expf(x); }
DISC_DEVICE double disc_exp(double x) { return exp(x); }
DISC_DEVICE float disc_expm1(float x) { return expm1f(x); }
DISC_DEVICE double disc_expm1(double x) { return expm1(x); }
DISC_DEVICE float disc_log(float x) { return logf(x); }
DISC_DEVICE double disc_log(double x) { return log(x); }
DISC_DEVICE float disc_log1p(float x) { return log1pf(x); }
DISC_DEVICE double disc_log1p(double x) { return log1p(x); }
DISC_DEVICE float disc_tanh(float x) { return tanhf(x); }
DISC_DEVICE double disc_tanh(double x) { return tanh(x); }
DISC_DEVICE float disc_erf(float x) { return erff(x); }
DISC_DEVICE double disc_erf(double x) { return erf(x); }
DISC_DEVICE float disc_erfc(float x) { return erfcf(x); }
DISC_DEVICE double disc_erfc(double x) { return erfc(x); }
// 1 / (1 + e^-x), saturating to 0 and 1 without inf / inf.
template <class T> DISC_DEVICE T disc_logistic(T x) { return T(1) / (T(1) + disc_exp(-x)); }
template <class T> DISC_DEVICE T disc_elu(T x) { return x < T(0) ? T(disc_expm1(x)) : x; }
template <class T> DISC_DEVICE T disc_selu(T x) {
  const T scale = T(1.0507009873554804934193349852946);
  const T scale_alpha = T(1.7580993408473768599402175208123);
  return x < T(0) ? T(scale_alpha * disc_expm1(x)) : T(scale * x);
}
// TF's softplus: e^x below log(eps) + 2, x above its negation, else log1p(e^x).
template <class T> DISC_DEVICE T disc_softplus(T x) {
  const T threshold = sizeof(T) == 4 ? T(-13.9423847f) : T(-34.0436533891171);
  if (x > -threshold) return x;
  const T e = disc_exp(x);
  return x < threshold ? e : T(disc_log1p(e));
}
// max/min propagate NaN (TF); relu keeps NaN.
template <class T> DISC_DEVICE T disc_max(T a, T b) {
  if (a != a || b != b) return a + b;
  return a > b ? a : b;
}
template <class T> DISC_DEVICE T disc_min(T a, T b) {
  if (a != a || b != b) return a + b;
  return a < b ? a : b;
}
template <class T> DISC_DEVICE T disc_abs(T x) { return x < T(0) ? T(-x) : x; }
DISC_DEVICE float disc_abs(float x) { return fabsf(x); }
DISC_DEVICE double disc_abs(double x) { return fabs(x); }
template <class T> DISC_DEVICE T disc_sign(T x) {
  if (x != x) return x;
  return T((T(0) < x) - (x < T(0)));
}
template <class T> DISC_DEVICE T disc_relu(T x) { return x > T(0) ? x : (x != x ? x : T(0)); }
template <class T> DISC_DEVICE T disc_relu6(T x) {
  if (x != x) return x;
  return x > T(0) ? (x < T(6) ? x : T(6)) : T(0);
}
template <class T> DISC_DEVICE T disc_floor_mod_float(T x, T y) {
  const T m = fmod(x, y);
  return (m != 0 && ((y < 0) != (m < 0))) ? T(m + y) : m;
}
// static_cast, but float -> integer saturates NaN and out-of-range values to
// the type's minimum (what TF's x86 kernels yield; cvt.rzi would clamp).
template <class To, class From> DISC_DEVICE To disc_convert(From x) {
  if constexpr (std::is_same<To, bool>::value) {
    return x != From(0);
  } else if constexpr (std::is_integral<To>::value && std::is_floating_point<From>::value) {
    const From lim = From(sizeof(To) == 8 ? 9223372036854775808.0 : 2147483648.0);
    if (!(x > -lim && x < lim)) return sizeof(To) == 8 ? To(-9223372036854775807LL - 1)
                                                        : To(-2147483647 - 1);
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

// ---- 16-byte vector access (vectorized loop variants) ----
// N elements of T in one register group; N * sizeof(T) is 16, 8, 4, 2 or 1.
template <class T, int N> struct alignas(N * sizeof(T)) disc_vec { T v[N]; };

template <int BYTES> struct disc_raw;
template <> struct disc_raw<16> { typedef uint4 type; };
template <> struct disc_raw<8> { typedef uint2 type; };
template <> struct disc_raw<4> { typedef unsigned int type; };
template <> struct disc_raw<2> { typedef unsigned short type; };
template <> struct disc_raw<1> { typedef unsigned char type; };

// Elements [q*N, q*N + N) of p through the read-only cache (ld.global.nc).
template <int N, class T> DISC_DEVICE disc_vec<T, N> disc_load_vec(const T* p, int64_t q) {
  typedef typename disc_raw<N * sizeof(T)>::type R;
  const R r = __ldg(reinterpret_cast<const R*>(p) + q);
  disc_vec<T, N> out;
  memcpy(&out, &r, sizeof r);
  return out;
}
template <int N, class T> DISC_DEVICE void disc_store_vec(T* p, int64_t q,
                                                          const disc_vec<T, N>& x) {
  typedef typename disc_raw<N * sizeof(T)>::type R;
  R r;
  memcpy(&r, &x, sizeof r);
  reinterpret_cast<R*>(p)[q] = r;
}

// ---- row reductions ----
// The combines of IR reduce kinds; max/min propagate NaN (TF), max_ignore_nan
// never lets NaN win (Eigen's MaxReducer, TF's Softmax).
struct disc_sum { template <class T> DISC_DEVICE T operator()(T a, T b) const { return a + b; } };
struct disc_prod { template <class T> DISC_DEVICE T operator()(T a, T b) const { return a * b; } };
struct disc_maxop { template <class T> DISC_DEVICE T operator()(T a, T b) const { return disc_max(a, b); } };
struct disc_minop { template <class T> DISC_DEVICE T operator()(T a, T b) const { return disc_min(a, b); } };
struct disc_max_ignore_nan {
  template <class T> DISC_DEVICE T operator()(T a, T b) const { return b > a ? b : a; }
};
struct disc_and { DISC_DEVICE bool operator()(bool a, bool b) const { return a && b; } };
struct disc_or { DISC_DEVICE bool operator()(bool a, bool b) const { return a || b; } };

// Every lane of the warp gets op over the warp's 32 values (butterfly).
template <class T, class Op> DISC_DEVICE T disc_warp_allreduce(T v, Op op) {
#pragma unroll
  for (int s = DISC_WARP / 2; s > 0; s >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, s));
  return v;
}

// Every thread of the block gets op over the block's values: each warp's
// result goes through shared memory (smem: DISC_BLOCK / DISC_WARP slots),
// then warp 0's lanes combine them.  All threads of the block must call it.
template <class T, class Op> DISC_DEVICE T disc_block_allreduce(T v, Op op, T* smem) {
  const int lane = threadIdx.x % DISC_WARP, warp = threadIdx.x / DISC_WARP;
  v = disc_warp_allreduce(v, op);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  T r = smem[0];
#pragma unroll
  for (int w = 1; w < DISC_BLOCK / DISC_WARP; ++w) r = op(r, smem[w]);
  __syncthreads();  // smem is reused by the row's next reduction
  return r;
}

#endif  // TF_DISC_RUNTIME_CUDA_PRELUDE_DISC_CUDA_PRELUDE_CUH_
