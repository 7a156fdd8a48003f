// The prelude: helpers with TF semantics that every translation unit the
// blade_disc_tf compiler generates includes first (codegen/source.py), for
// its kernels (elementwise ops, integer ops that can fail, bfloat16 storage,
// conversions; the math in cpu/prelude/disc_math.h) and its host code (error
// messages through DiscRuntime, disc_abi.h).
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
#include "disc_abi.h"

namespace {

// Kernel error codes: integer ops that can fail set the kernel's `err` to
// one of these and the host reports it with its message
// (codegen/prelude.py ERROR_MESSAGES, which must list the same codes).
enum : int32_t {
  DISC_KERNEL_ERR_DIV_BY_ZERO = 1,     // integer division by zero
  DISC_KERNEL_ERR_NEGATIVE_POWER = 2,  // integer to a negative integer power
};

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

// Decimal text of v for messages (a temporary: valid until the end of the
// full expression); snprintf instead of std::to_string, whose <string>
// doubled the time to parse every generated source.
struct disc_int_text {
  char s[24];
  explicit disc_int_text(long long v) { snprintf(s, sizeof s, "%lld", v); }
};

inline int64_t disc_numel(const int64_t* d, int r) {
  int64_t n = 1;
  for (int i = 0; i < r; ++i) n *= d[i];
  return n;
}

// "[2,3]" for messages.
inline void disc_fmt_shape(char* buf, size_t cap, const int64_t* d, int r) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < r && k < cap; ++i)
    k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld", (long long)d[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

// Replaces "{0}"/"{1}" in tmpl with a and b ("{{"/"}}": one brace, as
// str.format; graph names in templates are escaped so) and records the error.
inline int32_t disc_fail(const DiscRuntime* rt, int32_t code, const char* tmpl,
                         const char* a, const char* b) {
  char msg[2048];
  size_t k = 0;
  for (const char* p = tmpl; *p && k + 1 < sizeof msg; ++p) {
    const char* sub = nullptr;
    if (p[0] == '{' && (p[1] == '0' || p[1] == '1') && p[2] == '}') {
      sub = p[1] == '0' ? a : b;
      p += 2;
    } else if ((p[0] == '{' || p[0] == '}') && p[1] == p[0]) {
      ++p;
    }
    if (sub) { while (*sub && k + 1 < sizeof msg) msg[k++] = *sub++; }
    else msg[k++] = *p;
  }
  msg[k] = 0;
  rt->set_error(rt->ctx, code, msg);
  return 1;
}

}  // namespace

#endif  // TF_DISC_RUNTIME_CPU_PRELUDE_DISC_PRELUDE_H_
