// The prelude: helpers with TF semantics that every translation unit the
// blade_disc_tf compiler generates includes first (codegen/cpu/source.py), for
// its kernels (elementwise ops, integer ops that can fail, bfloat16 storage,
// conversions; the math in cpu/prelude/disc_math.h), after the
// target-neutral host helpers (host/disc_host.h).
//
// Everything is in an anonymous namespace: each translation unit of a
// generated library gets its own internal copies, so units compiled apart
// link without clashes and nothing leaks out of the library.
#ifndef TF_DISC_RUNTIME_CPU_PRELUDE_DISC_PRELUDE_H_
#define TF_DISC_RUNTIME_CPU_PRELUDE_DISC_PRELUDE_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cpu/prelude/disc_math.h"
#include "host/disc_host.h"

namespace {

// Elementwise ops with TF's NaN semantics (a NaN operand gives NaN).
template <class T> inline T disc_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) { if (a != a || b != b) return a + b; }
  return a > b ? a : b;
}
template <class T> inline T disc_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) { if (a != a || b != b) return a + b; }
  return a < b ? a : b;
}
template <class T> inline T disc_abs(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
  else return x < 0 ? T(-x) : x;
}
template <class T> inline T disc_sign(T x) {
  if constexpr (std::is_floating_point_v<T>) { if (x != x) return x; }
  return T((T(0) < x) - (x < T(0)));
}
template <class T> inline T disc_relu(T x) { return x > T(0) ? x : (x != x ? x : T(0)); }
template <class T> inline T disc_relu6(T x) {
  if (x != x) return x;
  return x > T(0) ? (x < T(6) ? x : T(6)) : T(0);
}
// TF's integer division, modulo and power: err := a code above where TF fails.
template <class T> inline T disc_floor_div_int(T x, T y, int32_t& err) {
  if (y == 0) { err = DISC_KERNEL_ERR_DIV_BY_ZERO; return 0; }
  if (y == -1) return T(-x);
  T q = x / y, r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? T(q - 1) : q;
}
template <class T> inline T disc_floor_mod_int(T x, T y, int32_t& err) {
  if (y == 0) { err = DISC_KERNEL_ERR_DIV_BY_ZERO; return 0; }
  if (y == -1) return 0;
  T r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? T(r + y) : r;
}
template <class T> inline T disc_div_int(T x, T y, int32_t& err) {
  if (y == 0) { err = DISC_KERNEL_ERR_DIV_BY_ZERO; return 0; }
  if (y == -1) return T(-x);
  return x / y;
}
template <class T> inline T disc_floor_mod_float(T x, T y) {
  T m = std::fmod(x, y);
  return (m != 0 && ((y < 0) != (m < 0))) ? T(m + y) : m;
}
template <class T> inline T disc_power_int(T x, T y, int32_t& err) {
  if (y < 0) { err = DISC_KERNEL_ERR_NEGATIVE_POWER; return 0; }
  using U = std::make_unsigned_t<T>;
  U base = U(x), r = 1;
  while (y) { if (y & 1) r *= base; base *= base; y >>= 1; }
  return T(r);
}
// bfloat16 storage (GCC 12 has no bf16 arithmetic; values are computed in
// float): float -> bf16 rounds to nearest even, NaN -> quiet NaN of the same
// sign, as Eigen's float_to_bfloat16_rtne.
struct disc_bf16 {
  uint16_t bits;
  disc_bf16() = default;
  explicit disc_bf16(float f) {
    uint32_t u = __builtin_bit_cast(uint32_t, f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = (u >> 31) ? 0xffc0u : 0x7fc0u;
    } else {
      bits = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  explicit disc_bf16(double d) : disc_bf16(float(d)) {}
  explicit operator float() const { return __builtin_bit_cast(float, uint32_t(bits) << 16); }
};

template <class To, class From> inline To disc_convert(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // x86 semantics (what TF's static_cast yields): NaN/out of range -> min.
    const From lim = From(std::numeric_limits<To>::max()) + From(1);
    if (!(x > -lim && x < lim)) return std::numeric_limits<To>::min();
    return To(x);
  } else {
    return To(x);
  }
}

inline int64_t disc_numel(const int64_t* d, int r) {
  int64_t n = 1;
  for (int i = 0; i < r; ++i) n *= d[i];
  return n;
}

}  // namespace

#endif  // TF_DISC_RUNTIME_CPU_PRELUDE_DISC_PRELUDE_H_
