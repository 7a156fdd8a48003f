"""C++ helpers shared by every generated library (TF semantics that need more
than one expression).  Integer ops that can fail set `err` (1: integer
division by zero, 2: negative integer power); the host reports it."""

ERROR_MESSAGES = {
    1: "Integer division by zero",
    2: "Integers to negative integer powers are not allowed",
}

PRELUDE = r'''
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "disc_abi.h"

namespace {

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
template <class T> inline T disc_logistic(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <class T> inline T disc_elu(T x) { return x < T(0) ? T(std::exp(x) - T(1)) : x; }
template <class T> inline T disc_selu(T x) {
  const T scale = T(1.0507009873554804934193349852946);
  const T scale_alpha = T(1.7580993408473768599402175208123);
  return x < T(0) ? T(scale_alpha * (std::exp(x) - T(1))) : T(scale * x);
}
template <class T> inline T disc_softplus(T x) {
  const T threshold = std::log(std::numeric_limits<T>::epsilon()) + T(2);
  if (x > -threshold) return x;
  T e = std::exp(x);
  if (x < threshold) return e;
  return std::log(e + T(1));
}
template <class T> inline T disc_floor_div_int(T x, T y, int32_t& err) {
  if (y == 0) { err = 1; return 0; }
  if (y == -1) return T(-x);
  T q = x / y, r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? T(q - 1) : q;
}
template <class T> inline T disc_floor_mod_int(T x, T y, int32_t& err) {
  if (y == 0) { err = 1; return 0; }
  if (y == -1) return 0;
  T r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? T(r + y) : r;
}
template <class T> inline T disc_div_int(T x, T y, int32_t& err) {
  if (y == 0) { err = 1; return 0; }
  if (y == -1) return T(-x);
  return x / y;
}
template <class T> inline T disc_floor_mod_float(T x, T y) {
  T m = std::fmod(x, y);
  return (m != 0 && ((y < 0) != (m < 0))) ? T(m + y) : m;
}
template <class T> inline T disc_power_int(T x, T y, int32_t& err) {
  if (y < 0) { err = 2; return 0; }
  using U = std::make_unsigned_t<T>;
  U base = U(x), r = 1;
  while (y) { if (y & 1) r *= base; base *= base; y >>= 1; }
  return T(r);
}
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

// "[2,3]" for messages.
inline void disc_fmt_shape(char* buf, size_t cap, const int64_t* d, int r) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < r && k < cap; ++i)
    k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld", (long long)d[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

// Replaces "{0}"/"{1}" in tmpl with a and b and records the error.
inline int32_t disc_fail(const DiscRuntime* rt, int32_t code, const char* tmpl,
                         const char* a, const char* b) {
  char msg[2048];
  size_t k = 0;
  for (const char* p = tmpl; *p && k + 1 < sizeof msg; ++p) {
    const char* sub = nullptr;
    if (p[0] == '{' && (p[1] == '0' || p[1] == '1') && p[2] == '}') {
      sub = p[1] == '0' ? a : b;
      p += 2;
    }
    if (sub) { while (*sub && k + 1 < sizeof msg) msg[k++] = *sub++; }
    else msg[k++] = *p;
  }
  msg[k] = 0;
  rt->set_error(rt->ctx, code, msg);
  return 1;
}

}  // namespace
'''
