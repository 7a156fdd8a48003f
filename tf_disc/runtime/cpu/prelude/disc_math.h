// Float and double math of generated kernels, ported from Eigen (what TF's
// CPU kernels run): branch-free scalar code, so that GCC vectorizes the loops
// that call it (tests/compiler/test_prelude_vectorizes.py checks that it
// does, for the AVX2 and the AVX-512 tier).  Part of the prelude
// (cpu/prelude/disc_prelude.h); build/command.py's flags (-ffp-contract=off, no
// -ffast-math) are what keeps results equal to TF's.
//
// Everything is in an anonymous namespace: each translation unit of a
// generated library gets its own internal copies, so units compiled apart
// link without clashes and nothing leaks out of the library.
#ifndef TF_DISC_RUNTIME_CPU_PRELUDE_DISC_MATH_H_
#define TF_DISC_RUNTIME_CPU_PRELUDE_DISC_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace {

template <class To, class From> inline To disc_bits(From x) { return __builtin_bit_cast(To, x); }
// Eigen's pmadd in TF's (non-FMA) build: a rounded multiply, then an add
// (-ffp-contract=off keeps them apart).
template <class T> inline T disc_madd(T a, T b, T c) { return a * b + c; }
// Eigen's pmin/pmax on x86 (minps/maxps with swapped operands): a NaN `a` wins.
template <class T> inline T disc_pmin(T a, T b) { return b < a ? b : a; }
template <class T> inline T disc_pmax(T a, T b) { return b > a ? b : a; }

// floor(t) of the exp reductions' t = x * log2(e) + 1/2 (never -0): one
// vrndscale (build/command.py passes -fno-trapping-math); a round-trip-and-
// select floor makes GCC duplicate the whole exp polynomial per lane.
inline float disc_floor_small(float t) { return __builtin_floorf(t); }
inline double disc_floor_small(double t) { return __builtin_floor(t); }

// An integral-valued double in [0, 2^52) as uint64, and a uint64 below 2^52
// as double, through the bits of 2^52 + x: exact, and packed on AVX2 too,
// which has no double <-> int64 conversion (GCC then left every loop using
// them scalar).
inline uint64_t disc_small_u64(double x) {
  return disc_bits<uint64_t>(x + 4503599627370496.0) - 0x4330000000000000ull;
}
inline double disc_small_f64(uint64_t u) {
  return disc_bits<double>(u | 0x4330000000000000ull) - 4503599627370496.0;
}

// a * 2^e for integral-valued e, overflow/underflow safe (pldexp_generic;
// b = floor(e / 4) is its arithmetic shift e >> 2).
inline double disc_ldexp_d(double a, double e) {
  const double ec = disc_pmin(disc_pmax(e, -2099.0), 2099.0);
  const double b = __builtin_floor(ec * 0.25);
  double c = disc_bits<double>(disc_small_u64(b + 1023.0) << 52);
  double out = a * c * c * c;
  c = disc_bits<double>(disc_small_u64(ec - 3.0 * b + 1023.0) << 52);
  return out * c;
}

// pexp_float
inline float disc_exp(float x0) {
  // Also clamped below: for x0 < -104 the result is 0 (selected at the
  // end), and m then stays in [-150, 128] for the two-factor ldexp.
  const float x = disc_pmax(disc_pmin(x0, 88.723f), -104.0f);
  const float m = disc_floor_small(disc_madd(x, 1.44269504088896341f, 0.5f));
  float r = disc_madd(m, -0.693359375f, x);
  r = disc_madd(m, 2.12194440e-4f, r);
  const float r2 = r * r;
  float p_even = disc_madd(r2, 1.37449637986719608306884765625e-3f, 4.166965186595916748046875e-2f);
  const float p_odd = disc_madd(r2, 8.36894474923610687255859375e-3f, 0.16666518151760101318359375f);
  p_even = disc_madd(r2, p_even, 0.49999988079071044921875f);
  const float p_low = r + 1.0f;
  float y = disc_madd(r, p_odd, p_even);
  y = disc_madd(r2, y, p_low);
  // y * 2^m rounded once, as pldexp_generic: exact 2^h, then 2^(m-h)
  // (both normal for m in [-150, 128]); equal bits for all 2^32 inputs.
  const int32_t mi = int32_t(m);
  const int32_t h = mi >> 1;
  const float res = disc_pmax((y * disc_bits<float>(uint32_t(h + 127) << 23)) *
                              disc_bits<float>(uint32_t(mi - h + 127) << 23), x0);
  return x0 < -104.0f ? 0.0f : res;
}
// Softmax's exp (TF's f32 Softmax runs oneDNN's FMA exp, not Eigen's, so
// only its accuracy is owed): n = rint(x / ln2) by the 1.5*2^23 shifter
// (n is then in the low bits: no rint, no float->int conversion),
// r = x - n*ln2 with a two-constant split through fma, exp(r) as
// 1 + r + r^2 * P(r) with P a degree-4 minimax fit of (exp(r) - 1 - r) / r^2
// on |r| <= ln2/2 (relative error 3.7e-9 with float coefficients; one fma
// less than Sleef's degree-5 P), then (2y) * 2^(n-1),
// one exponent-field scale as oneDNN's.  Error <= 1.01 ulp over every 8th
// float of [-86.98, 88.72] (Sleef's P: 0.98), <= 1.5 ulp tested down to x =
// -86.98 (tests/compiler/test_fast_exp.py); below (results under 2^-125.5,
// -inf too) it gives 0, as oneDNN flushes (n = -126 makes the scale's
// exponent field 0).
// exp(0) = 1 exactly, NaN stays NaN (it passes the clamps), x > ln(FLT_MAX)
// gives +inf.  disc_exp_fast_core takes x already clamped to [-87, 89].
// exp(x) = (1 + q) * 2^n (q = exp(r) - 1, |r| <= ln2/2, n = rint(x / ln2)
// returned as an int) for x in [-150, 89].
inline float disc_exp_fast_q(float x, int32_t& n_int) {
  const float t = __builtin_fmaf(x, 0x1.715476p+0f, 0x1.8p23f);
  const float n = t - 0x1.8p23f;
  float r = __builtin_fmaf(n, -0x1.62e43p-1f, x);
  r = __builtin_fmaf(n, 0x1.05c61p-29f, r);
  float u = 0x1.6a23bcp-10f;
  u = __builtin_fmaf(u, r, 0x1.123a1ep-7f);
  u = __builtin_fmaf(u, r, 0x1.5558f4p-5f);
  u = __builtin_fmaf(u, r, 0x1.555492p-3f);
  u = __builtin_fmaf(u, r, 0x1.fffffcp-2f);
  n_int = disc_bits<int32_t>(t) - disc_bits<int32_t>(0x1.8p23f);
  return __builtin_fmaf(r * r, u, r);
}
// exp(x) = y * 2^n, y = exp(r) (see disc_exp_fast_q).
inline float disc_exp_fast_reduced(float x, int32_t& n_int) {
  return 1.0f + disc_exp_fast_q(x, n_int);
}
inline float disc_exp_fast_core(float x) {
  int32_t n;
  const float y = disc_exp_fast_reduced(x, n);
  // n in [-126, 128]: the field n - 1 + 127 is in [0, 254] (0: the scale is 0)
  return (y + y) * disc_bits<float>(uint32_t(n + 126) << 23);
}
inline float disc_exp_fast(float x0) {
  return disc_exp_fast_core(disc_pmax(disc_pmin(x0, 89.0f), -87.0f));
}
// Softmax's exp(x - rowmax(x)): the argument is <= 0 or NaN, so the upper
// clamp (compares and blends: a fifth of the exp loop) is left out, and
// n <= 0 lets the scale be 2^n itself (field n + 127, no y + y): the result
// is fma(q, 2^n, 2^n), (1 + q) 2^n rounded once, the same bits as
// disc_exp_fast wherever that is normal.  x is clamped at -88 (n = -127,
// field 0: the scale and the result are 0, so -inf and huge negatives give
// 0); exp(x) for x in (-87.68, -87.34) comes out subnormal (oneDNN and
// disc_exp_fast give 0 below -86.99, both 1e-38 from the truth).
inline float disc_exp_fast_nonpos_core(float x) {
  int32_t n;
  const float q = disc_exp_fast_q(x, n);
  const float s = disc_bits<float>(uint32_t(n + 127) << 23);
  return __builtin_fmaf(q, s, s);
}
inline float disc_exp_fast_nonpos(float x0) {
  return disc_exp_fast_nonpos_core(disc_pmax(x0, -88.0f));
}
// disc_exp_fast_nonpos for a caller that replaces the result of every NaN x
// (softmax's select(is_nan(x), inf, exp(x))): the clamp at -88 is one
// unsigned integer min of the bits (x <= 0: -0 .. -88 are the smaller
// patterns, -88 .. -inf the larger; +0 and positive NaN are smaller still
// and pass, a negative NaN becomes -88), instead of a float compare and
// blend on the FMA ports.
inline float disc_exp_fast_nonpos_nan_free(float x0) {
  const uint32_t b = disc_bits<uint32_t>(x0), c = disc_bits<uint32_t>(-88.0f);
  return disc_exp_fast_nonpos_core(disc_bits<float>(b < c ? b : c));
}
// pexp_double
inline double disc_exp(double x0) {
  const double x = disc_pmin(x0, 709.784);
  const double fx = disc_floor_small(disc_madd(1.4426950408889634073599, x, 0.5));
  double g = x - fx * 0.693145751953125;
  g = g - fx * 1.42860682030941723212e-6;
  const double x2 = g * g;
  double px = 1.26177193074810590878e-4;
  px = disc_madd(px, x2, 3.02994407707441961300e-2);
  px = disc_madd(px, x2, 9.99999999999999999910e-1);
  px = px * g;
  double qx = 3.00198505138664455042e-6;
  qx = disc_madd(qx, x2, 2.52448340349684104192e-3);
  qx = disc_madd(qx, x2, 2.27265548208155028766e-1);
  qx = disc_madd(qx, x2, 2.00000000000000000009e0);
  double y = px / (qx - px);
  y = disc_madd(2.0, y, 1.0);
  const double res = disc_pmax(disc_ldexp_d(y, fx), x0);
  return x0 < -745.519 ? 0.0 : res;
}

// pfrexp_generic (float): mantissa in [0.5,1) and exponent.
inline float disc_frexp_f(float a, float& e) {
  const bool denorm = __builtin_fabsf(a) < 1.17549435e-38f;
  const float na = denorm ? a * 16777216.0f : a;
  const float off = denorm ? -150.0f : -126.0f;
  const float be = float(int32_t((disc_bits<uint32_t>(na) & 0x7fffffffu) >> 23));
  // a == 0, inf or NaN, as one unsigned compare: `a == 0 || be == 255` is a
  // select of two masks after exp (expm1, softplus), which GCC 12 cannot
  // vectorize (the whole loop then ran scalar, 14 ns per element).
  const bool special = (disc_bits<uint32_t>(a) & 0x7fffffffu) - 1u >= 0x7f7fffffu;
  const float m = disc_bits<float>((disc_bits<uint32_t>(na) & 0x807fffffu) | 0x3f000000u);
  e = special ? 0.0f : be + off;
  return special ? a : m;
}
inline double disc_frexp_d(double a, double& e) {
  const bool denorm = __builtin_fabs(a) < 2.2250738585072014e-308;
  const double na = denorm ? a * 9007199254740992.0 : a;
  const double off = denorm ? -1075.0 : -1022.0;
  const double be = disc_small_f64((disc_bits<uint64_t>(na) & 0x7fffffffffffffffull) >> 52);
  const bool special = (disc_bits<uint64_t>(a) & 0x7fffffffffffffffull) - 1u >=
                       0x7fefffffffffffffull;   // as disc_frexp_f
  const double m = disc_bits<double>((disc_bits<uint64_t>(na) & 0x800fffffffffffffull) |
                                     0x3fe0000000000000ull);
  e = special ? 0.0 : be + off;
  return special ? a : m;
}

// plog_float
inline float disc_log(float x0) {
  float e;
  float x = disc_frexp_f(x0, e);
  const bool lt = x < 0.707106781186547524f;
  const float tmp = lt ? x : 0.0f;
  x = x - 1.0f;
  e = e - (lt ? 1.0f : 0.0f);
  x = x + tmp;
  float p = disc_madd(disc_madd(0.18256296349849254f, x, 1.0000000190281063f), x, 1.0000000190281136f);
  p = x * p;
  const float q = disc_madd(disc_madd(disc_madd(0.049616247954120038f, x, 0.59923249590823520f), x,
                                      1.4999999999999927f), x, 1.0f);
  x = p / q;
  x = disc_madd(e, 0.693147180559945309417f, x);
  if (!(x0 >= 0.0f)) x = disc_bits<float>(0xffffffffu);
  if (x0 == __builtin_inff()) x = x0;
  if (x0 == 0.0f) x = -__builtin_inff();
  return x;
}
// plog_double
inline double disc_log(double x0) {
  double e;
  double x = disc_frexp_d(x0, e);
  const bool lt = x < 0.70710678118654752440E0;
  const double tmp = lt ? x : 0.0;
  x = x - 1.0;
  e = e - (lt ? 1.0 : 0.0);
  x = x + tmp;
  const double x2 = x * x, x3 = x2 * x;
  double y = disc_madd(1.01875663804580931796E-4, x, 4.97494994976747001425E-1);
  double y1 = disc_madd(1.44989225341610930846E1, x, 1.79368678507819816313E1);
  y = disc_madd(y, x, 4.70579119878881725854E0);
  y1 = disc_madd(y1, x, 7.70838733755885391666E0);
  double y_ = disc_madd(y, x3, y1);
  y = disc_madd(1.0, x, 1.12873587189167450590E1);
  y1 = disc_madd(8.29875266912776603211E1, x, 7.11544750618563894466E1);
  y = disc_madd(y, x, 4.52279145837532221105E1);
  y1 = disc_madd(y1, x, 2.31251620126765340583E1);
  y = disc_madd(y, x3, y1);
  y_ = y_ * x3;
  y = y_ / y;
  y = disc_madd(-0.5, x2, y);
  x = x + y;
  x = disc_madd(e, 0.693147180559945309417, x);
  if (!(x0 >= 0.0)) x = disc_bits<double>(0xffffffffffffffffull);
  if (x0 == __builtin_inf()) x = x0;
  if (x0 == 0.0) x = -__builtin_inf();
  return x;
}

// generic_log1p / generic_expm1 (Kahan)
template <class T> inline T disc_log1p(T x) {
  const T xp1 = x + T(1);
  const T log1 = disc_log(xp1);
  const T large = x * (log1 / (xp1 - T(1)));
  // two selects, not a select on `a || b` (a mask of masks GCC 12 does not
  // vectorize inside softplus)
  const T r = xp1 == log1 ? x : large;
  return xp1 == T(1) ? x : r;
}
template <class T> inline T disc_expm1(T x) {
  const T u = disc_exp(x);
  const T um1 = u - T(1);
  const T logu = disc_log(u);
  T r = um1 * (x / logu);
  r = logu == u ? u : r;
  r = um1 == T(-1) ? T(-1) : r;
  return u == T(1) ? x : r;
}

// ptanh_float / ptanh_double: odd/even rational approximations, the float
// one bit for bit TF's (its non-FMA build rounds twice per Horner step): the
// fused form (0.445 -> 0.390 ns per element of a bias-add+tanh loop) changed
// values by an ulp, which top_k of tanh and exact comparisons with TF see.
inline float disc_tanh(float a) {
  // |a| clamped to c = 7.90738964f (the non-FMA clamp) by one unsigned min of
  // its bits, NaN selected back at the end: a float min/max pair is
  // compares, blends and masked moves in GCC's vector code (tanh-GELU's loop
  // 0.54 -> 0.45 ns per element, one thread, in L1, measured with the fused
  // steps); the same value for every float.
  const uint32_t b = disc_bits<uint32_t>(a), m = b & 0x7fffffffu;
  const uint32_t c = 0x40fd0956u;
  const float x = disc_bits<float>((m < c ? m : c) | (b & 0x80000000u));
  const float x2 = x * x, x3 = x2 * x;
  float p = disc_madd(disc_madd(disc_madd(1.394553628e-8f, x2, 2.102733560e-5f), x2, 3.520756727e-3f),
                      x2, 1.340216100e-1f);
  float q = disc_madd(disc_madd(disc_madd(disc_madd(8.015776984e-7f, x2, 3.326951409e-4f), x2,
                                          2.597254514e-2f), x2, 4.673548340e-1f), x2, 1.0f);
  p = disc_madd(x3, p, x);
  return a != a ? a : p / q;
}
inline double disc_tanh(double a) {
  const double c = 17.714196154005176;  // the non-FMA clamp
  static constexpr double al[] = {2.6158007860482230e-23, 7.6534862268749319e-19, 3.1309488231386680e-15,
                                  4.2303918148209176e-12, 2.4618379131293676e-09, 6.8644367682497074e-07,
                                  9.3839087674268880e-05, 5.9809711724441161e-03, 1.5184719640284322e-01};
  static constexpr double be[] = {6.463747022670968018e-21, 5.782506856739003571e-17,
                                  1.293019623712687916e-13, 1.123643448069621992e-10,
                                  4.492975677839633985e-08, 8.785185266237658698e-06,
                                  8.295161192716231542e-04, 3.437448108450402717e-02,
                                  4.851805297361760360e-01, 1.0};
  const double x = disc_pmax(disc_pmin(a, c), -c);
  const double x2 = x * x, x3 = x2 * x;
  double p = al[0], q = be[0];
  for (int i = 1; i < 9; ++i) p = disc_madd(p, x2, al[i]);
  for (int i = 1; i < 10; ++i) q = disc_madd(q, x2, be[i]);
  p = disc_madd(x3, p, x);
  return p / q;
}

// scalar_logistic_op<float>::packetOp
inline float disc_logistic(float x0) {
  float x = disc_pmin(x0, 16.6355324f);
  x = x * 0.5f;
  const float m = disc_floor_small(disc_madd(x, 1.44269504088896341f, 0.5f));
  float r = disc_madd(m, -0.693359375f, x);
  r = disc_madd(m, 2.12194440e-4f, r);
  const float r2 = r * r;
  const float p_even = disc_madd(r2, 4.1898667812347412109375e-2f, 0.49999141693115234375f);
  const float p_odd = disc_madd(r2, 8.33471305668354034423828125e-3f, 0.16666877269744873046875f);
  float p = disc_madd(r, p_odd, p_even);
  p = disc_madd(r2, p, r + 1.0f);
  // pldexp_fast: biased exponent clamped to [0, 255].
  const int32_t be = int32_t(disc_pmin(disc_pmax(m + 127.0f, 0.0f), 255.0f));
  float e = p * disc_bits<float>(uint32_t(be) << 23);
  e = e * e;
  return x0 < -104.0f ? 0.0f : e / (1.0f + e);
}
// scalar_logistic_op_impl (double)
inline double disc_logistic(double x) {
  const double e = disc_exp(x);
  return e == __builtin_inf() ? 1.0 : e / (1.0 + e);
}

// generic_fast_erf<float>, its Horner steps fused (Eigen's FMA build) and
// x clamped to +-c, the smallest float whose fused quotient is exactly 1
// (none below it exceeds 1), instead of clamping x^2 to 16 and the quotient
// to [-1, 1]: GELU's bias + x/2 (1 + erf(x/sqrt2)) loop 0.568 -> 0.355 ns
// per element in L1, one thread (0.473 with the fused steps alone, 0.41
// with float min/max clamps, which GCC makes compares, blends and masked
// moves).  The clamp is one unsigned min of |x|'s bits (NaN would become c,
// so NaN is selected back at the end).  Equal to the fused form below c;
// error vs float64 erf over every float 5.5 ulp, 3.3e-7 absolute at most
// (unfused: 7.4 ulp, 4.4e-7), |erf| <= 1, odd, erf(+-inf) = +-1, NaN stays
// NaN (tests/compiler/test_erf_tanh_accuracy.py).  The quotient stays a
// division: GCC vectorizes no rcp14 + Newton step without -ffast-math, and
// the divider overlaps the FMAs (a product in its place saves 0.03 ns).
inline float disc_erf(float x0) {
  const uint32_t b = disc_bits<uint32_t>(x0), a = b & 0x7fffffffu;
  const uint32_t c = 0x4067f6f6u;   // 3.62444830f
  const float x = disc_bits<float>((a < c ? a : c) | (b & 0x80000000u));
  const float x2 = x * x;
  float p = 2.123732201653183437883853912353515625e-06f;
  p = __builtin_fmaf(p, x2, 2.861979592125862836837768554687500000e-04f);
  p = __builtin_fmaf(p, x2, 3.658048342913389205932617187500000000e-03f);
  p = __builtin_fmaf(p, x2, 5.243302136659622192382812500000000000e-02f);
  p = __builtin_fmaf(p, x2, 1.874160766601562500000000000000000000e-01f);
  p = __builtin_fmaf(p, x2, 1.128379106521606445312500000000000000e+00f);
  p = x * p;
  float q = 3.89185734093189239501953125000e-05f;
  q = __builtin_fmaf(q, x2, 1.14329601638019084930419921875e-03f);
  q = __builtin_fmaf(q, x2, 1.47520881146192550659179687500e-02f);
  q = __builtin_fmaf(q, x2, 1.12945675849914550781250000000e-01f);
  q = __builtin_fmaf(q, x2, 4.99425798654556274414062500000e-01f);
  q = __builtin_fmaf(q, x2, 1.0f);
  return x0 != x0 ? x0 : p / q;
}

// erfc(float), one branch for every x (TF runs Eigen's generic_fast_erfc,
// which computes a polynomial and a rational branch, two divisions and
// Eigen's non-FMA exp, and selects: 1.27 ns per element of GELU's
// 0.5 x erfc(-x/sqrt2) against 0.82 here, single thread, data in L1).
// For a = |x|: q = (a - 2)/(a + 2) maps [0, 10.05] onto [-1, 0.67], where
// (1 + 2a) exp(a^2) erfc(a) = 1 + P(q), P a degree-9 least-squares fit
// (float coefficients: relative error 3e-8); then erfc(a) = (1 + P) /
// (1 + 2a) * exp(-a^2), with exp(-a^2) = exp(-s) (1 - (a^2 - s)) for s =
// a*a rounded, and 2^n applied as two normal factors so that results down
// to 2^-149 are gradual (erfc(10.0546875) rounds to 0, hence the clamp).
// x < 0: 2 - erfc(-x).  Error vs float64 erfc <= 4.1 ulp over [-11, 10.05]
// (tf.math.erfc itself: 65 near x = 8.8, and 0 from 9.19 on),
// tests/compiler/test_erfc_accuracy.py.
inline float disc_erfc(float x) {
  const float a = disc_pmin(__builtin_fabsf(x), 10.0546875f);
  const float q = (a - 2.0f) / (a + 2.0f);
  float p = -0x1.ae5c10p-12f;
  p = __builtin_fmaf(p, q, -0x1.469a5cp-10f);
  p = __builtin_fmaf(p, q, 0x1.591750p-10f);
  p = __builtin_fmaf(p, q, 0x1.1b49f8p-7f);
  p = __builtin_fmaf(p, q, -0x1.080aecp-7f);
  p = __builtin_fmaf(p, q, -0x1.bc123cp-5f);
  p = __builtin_fmaf(p, q, 0x1.4ffbe0p-3f);
  p = __builtin_fmaf(p, q, -0x1.540820p-3f);
  p = __builtin_fmaf(p, q, -0x1.7bf608p-4f);
  p = __builtin_fmaf(p, q, 0x1.1ba03ap-2f);
  const float w = __builtin_fmaf(p, 0.5f, 0.5f) / (a + 0.5f);
  const float s = a * a;
  const float lo = __builtin_fmaf(-a, a, s);   // a^2 - s, negated
  int32_t ni;   // exp(-s) = y 2^ni, ni in [-146, 0]
  const float y = disc_exp_fast_reduced(-s, ni);
  const int32_t n1 = ni >> 1;
  const float wy = w * y;
  const float res = (__builtin_fmaf(wy, lo, wy) * disc_bits<float>(uint32_t(n1 + 127) << 23)) *
                    disc_bits<float>(uint32_t(ni - n1 + 127) << 23);
  return x < 0.0f ? 2.0f - res : res;
}

// generic_fast_erf<double> / generic_fast_erfc<double> (TF's double kernels;
// glibc's erf differs: erf(-5.9) is -0.9999999999999999, Eigen's -1).
inline double disc_horner_d(double x, const double* c, int n) {
  double p = c[0];
  for (int i = 1; i < n; ++i) p = disc_madd(p, x, c[i]);
  return p;
}
// erf(x)/x for x^2 <= 1 (erf_over_x_double_small).
inline double disc_erf_small_d(double x2) {
  static constexpr double a[] = {
      1.9493725660006057018823477644531294572516344487667083740234375e-04,
      1.8272566210022942682217328425053892715368419885635375976562500e-03,
      4.5303363351690106863856044583371840417385101318359375000000000e-02,
      1.4215015503619179981775744181504705920815467834472656250000000e-01,
      1.1283791670955125585606992899556644260883331298828125000000000e+00};
  static constexpr double b[] = {
      2.0294484101083099089526257108317963684385176748037338256835938e-05,
      6.8117805899186819641732970609382391558028757572174072265625000e-04,
      1.0582026056098614921752165685120417037978768348693847656250000e-02,
      9.3252603143757495374188692949246615171432495117187500000000000e-02,
      4.5931062818368939559832142549566924571990966796875000000000000e-01, 1.0};
  return disc_horner_d(x2, a, 5) / disc_horner_d(x2, b, 6);
}
// erfc(x) for 1 < |x| < 28 (erfc_double_large); x2 = x * x.
inline double disc_erfc_large_d(double x, double x2) {
  static constexpr double g[] = {
      1.5252844933226974316088642158462107545346952974796295166015625e-04,
      1.0909912393738931124520519233556115068495273590087890625000000e-02,
      1.0628604636755033252537572252549580298364162445068359375000000e-01,
      3.3492472973137982217295416376146022230386734008789062500000000e-01,
      4.5065776215933289750026347064704168587923049926757812500000000e-01,
      2.9433039130294824659017649537418037652969360351562500000000000e-01,
      9.8792676360600226170838311645638896152377128601074218750000000e-02,
      1.7095935395503719655962981960328761488199234008789062500000000e-02,
      1.4249109729504577659398023570247460156679153442382812500000000e-03,
      4.4567378313647954771875570045835956989321857690811157226562500e-05};
  static constexpr double d[] = {
      2.041985103115789845773520028160419315099716186523437500000000e-03,
      5.316030659946043707142493417450168635696172714233398437500000e-02,
      3.426242193784684864077405563875799998641014099121093750000000e-01,
      8.565637124308049799026321124983951449394226074218750000000000e-01, 1.0,
      5.968805280570776972126623149961233139038085937500000000000000e-01,
      1.890922854723317836356244470152887515723705291748046875000000e-01,
      3.152505418656005586885981983868987299501895904541015625000000e-02,
      2.565085751861882583380047861965067568235099315643310546875000e-03,
      7.899362131678837697403017248376499992446042597293853759765625e-05};
  const double x2_lo = std::fma(x, x, -x2);  // exact, as Eigen's twoprod_low
  const double e = disc_exp(-x2);
  const double z = e - e * x2_lo;
  const double q2 = 1.0 / x2;
  const double r = disc_horner_d(q2, g, 10) / (x * disc_horner_d(q2, d, 10));
  return disc_madd(z, r, x < 0.0 ? 2.0 : 0.0);
}
inline double disc_erf(double x) {
  const double x2 = x * x;
  return 1.0 < x2 ? 1.0 - disc_erfc_large_d(x, x2) : x * disc_erf_small_d(x2);
}
inline double disc_erfc(double x_in) {
  const double x = disc_pmin(disc_pmax(x_in, -28.0), 28.0);
  const double x2 = x * x;
  return 1.0 < x2 ? disc_erfc_large_d(x, x2) : 1.0 - x * disc_erf_small_d(x2);
}

template <class T> inline T disc_elu(T x) { return x < T(0) ? T(disc_exp(x) - T(1)) : x; }
template <class T> inline T disc_selu(T x) {
  const T scale = T(1.0507009873554804934193349852946);
  const T scale_alpha = T(1.7580993408473768599402175208123);
  return x < T(0) ? T(scale_alpha * (disc_exp(x) - T(1))) : T(scale * x);
}
template <class T> inline T disc_softplus(T x) {
  const T threshold = T(std::log(std::numeric_limits<T>::epsilon()) + T(2));
  const T e = disc_exp(x);
  const T mid = disc_log1p(e);  // as TF: log1p keeps precision for e << 1
  const T r = x < threshold ? e : mid;   // sequential selects: vectorizes
  return x > -threshold ? x : r;
}
}  // namespace

#endif  // TF_DISC_RUNTIME_CPU_PRELUDE_DISC_MATH_H_
