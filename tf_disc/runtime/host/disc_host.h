// Helpers for the host code of every generated library, whatever device its
// kernels run on: TF-style error messages through DiscRuntime::set_error,
// input checks, element counts and the allocation of outputs and temps
// (codegen/host_checks.py emits the calls).
//
// Each check runs once per call and compiles once per library, so the
// helpers are noinline: disc_entry stays short, and so does its compile.
// Everything is in an anonymous namespace: each translation unit gets its
// own internal copies, so units compiled apart link without clashes and
// nothing leaks out of the library.
#ifndef TF_DISC_RUNTIME_HOST_DISC_HOST_H_
#define TF_DISC_RUNTIME_HOST_DISC_HOST_H_

#include <cstdint>
#include <cstdio>

#include "disc_abi.h"

namespace {

// Kernel error codes: integer ops that can fail set the kernel's `err` to one
// of these, and the host reports it with disc_kernel_error's message.
enum : int32_t {
  DISC_KERNEL_ERR_DIV_BY_ZERO = 1,     // integer division by zero
  DISC_KERNEL_ERR_NEGATIVE_POWER = 2,  // integer to a negative integer power
};

// Decimal text of v for messages (a temporary: valid until the end of the
// full expression); snprintf instead of std::to_string, whose <string>
// doubles the time to parse every generated source.
struct disc_int_text {
  char s[24];
  explicit disc_int_text(long long v) { snprintf(s, sizeof s, "%lld", v); }
};

// "[2,3]" for messages.
inline void disc_fmt_shape(char* buf, size_t cap, const int64_t* d, int r) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < r && k < cap; ++i)
    k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld", (long long)d[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

// Replaces "{0}"/"{1}" in tmpl with a and b ("{{"/"}}": one brace, as
// str.format; graph names in templates are escaped so), records the error
// and returns 1.
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

// Input i has `rank` dims, and want[j] where want[j] >= 0 (want may be null);
// else records the error (msg: "{0}" the input's shape, "{1}" want) and returns 1.
inline __attribute__((noinline)) int32_t disc_check_input(const DiscRuntime* rt,
                                                          const DiscBuffer* inputs, int32_t i,
                                                          int32_t rank, const int64_t* want,
                                                          const char* msg) {
  const DiscBuffer& in = inputs[i];
  if (in.rank != rank) {
    char t[64];
    snprintf(t, sizeof t, "input %d: expected rank %d", int(i), int(rank));
    return disc_fail(rt, DISC_ERROR_INTERNAL, t, "", "");
  }
  for (int j = 0; want && j < rank; ++j) {
    if (want[j] >= 0 && in.dims[j] != want[j]) {
      char a[512], b[512];
      disc_fmt_shape(a, sizeof a, in.dims, rank);
      disc_fmt_shape(b, sizeof b, want, rank);
      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, msg, a, b);
    }
  }
  return 0;
}

// *n = the element count of d[0..r), checked left to right like TensorShape.
inline __attribute__((noinline)) int32_t disc_count(const DiscRuntime* rt, const int64_t* d,
                                                    int r, int64_t* n) {
  int64_t c = 1;
  for (int i = 0; i < r; ++i) {
    if (__builtin_mul_overflow(c, d[i], &c)) {
      char a[512];
      disc_fmt_shape(a, sizeof a, d, r);
      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT,
                       "Shape {0} would have more than 2**63 - 1 elements", a, "");
    }
  }
  *n = c;
  return 0;
}

// Output `index` of dims d[0..r) (null when empty); 1 when its size overflows
// or the runtime failed (error recorded).
inline __attribute__((noinline)) int32_t disc_output_bytes(const DiscRuntime* rt, int32_t index,
                                                           const int64_t* d, int r, void** p) {
  int64_t n;
  if (disc_count(rt, d, r, &n)) return 1;
  *p = rt->alloc_output(rt->ctx, index, r, d);
  return !*p && n > 0;
}

// Scratch for d[0..r) elements of esize bytes (null when empty).
inline __attribute__((noinline)) int32_t disc_temp_bytes(const DiscRuntime* rt, const int64_t* d,
                                                         int r, int64_t esize, void** p) {
  int64_t n;
  if (disc_count(rt, d, r, &n)) return 1;
  if (n > int64_t(0x7fffffffffffffffLL) / esize)
    return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT,
                     "Encountered overflow when multiplying {0} with {1}",
                     disc_int_text(n).s, disc_int_text(esize).s);
  *p = n > 0 ? rt->alloc_temp(rt->ctx, size_t(n) * size_t(esize)) : nullptr;
  return !*p && n > 0;
}

template <typename T>
inline int32_t disc_output(const DiscRuntime* rt, int32_t index, const int64_t* d, int r,
                           T** p) {
  void* v = nullptr;
  const int32_t bad = disc_output_bytes(rt, index, d, r, &v);
  *p = static_cast<T*>(v);
  return bad;
}

template <typename T>
inline int32_t disc_temp(const DiscRuntime* rt, const int64_t* d, int r, T** p) {
  void* v = nullptr;
  const int32_t bad = disc_temp_bytes(rt, d, r, int64_t(sizeof(T)), &v);
  *p = static_cast<T*>(v);
  return bad;
}

// A kernel's err code (DISC_KERNEL_ERR_*) recorded with TF's message: 1; 0
// for the codes its launch handles itself.
inline __attribute__((noinline)) int32_t disc_kernel_error(const DiscRuntime* rt, int32_t err) {
  switch (err) {
    case DISC_KERNEL_ERR_DIV_BY_ZERO:
      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, "Integer division by zero", "", "");
    case DISC_KERNEL_ERR_NEGATIVE_POWER:
      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT,
                       "Integers to negative integer powers are not allowed", "", "");
    default: return 0;
  }
}

}  // namespace

#endif  // TF_DISC_RUNTIME_HOST_DISC_HOST_H_
