#include "tf_disc/runtime/cpu/cpu_isa.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "tensorflow/core/platform/logging.h"
#include "tf_disc/runtime/environment.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tf_disc {
namespace {

struct TierName {
  const char* name;
  CpuTier tier;
};

// Canonical names first (CpuTierName), then aliases.
constexpr TierName kNames[] = {
    {"x86-64-v2", CpuTier::kX86_64_V2},     {"avx2", CpuTier::kAvx2},
    {"avx512", CpuTier::kAvx512},           {"avx512_bf16", CpuTier::kAvx512Bf16},
    {"v2", CpuTier::kX86_64_V2},            {"sse4", CpuTier::kX86_64_V2},
    {"sse41", CpuTier::kX86_64_V2},         {"v3", CpuTier::kAvx2},
    {"x86-64-v3", CpuTier::kAvx2},          {"v4", CpuTier::kAvx512},
    {"x86-64-v4", CpuTier::kAvx512},        {"avx512_core", CpuTier::kAvx512},
    {"avx512_amx", CpuTier::kAvx512Amx},    {"avx512_core_bf16", CpuTier::kAvx512Bf16},
    {"avx512_core_amx", CpuTier::kAvx512Amx}, {"avx10_1_512_amx", CpuTier::kAvx512Amx},
};

// The lowest tier including each /proc/cpuinfo feature a tier's -march
// enables (x86-64 psABI levels; compiler/build/isa.py holds the flags).
struct FeatureTier {
  const char* feature;
  CpuTier tier;
};
constexpr FeatureTier kFeatures[] = {
    {"sse", CpuTier::kX86_64_V2},         {"sse2", CpuTier::kX86_64_V2},
    {"pni", CpuTier::kX86_64_V2},         {"ssse3", CpuTier::kX86_64_V2},
    {"sse4_1", CpuTier::kX86_64_V2},      {"sse4_2", CpuTier::kX86_64_V2},
    {"popcnt", CpuTier::kX86_64_V2},      {"cx16", CpuTier::kX86_64_V2},
    {"lahf_lm", CpuTier::kX86_64_V2},     {"avx", CpuTier::kAvx2},
    {"avx2", CpuTier::kAvx2},             {"fma", CpuTier::kAvx2},
    {"f16c", CpuTier::kAvx2},             {"bmi1", CpuTier::kAvx2},
    {"bmi2", CpuTier::kAvx2},             {"abm", CpuTier::kAvx2},
    {"movbe", CpuTier::kAvx2},            {"avx512f", CpuTier::kAvx512},
    {"avx512bw", CpuTier::kAvx512},       {"avx512cd", CpuTier::kAvx512},
    {"avx512dq", CpuTier::kAvx512},       {"avx512vl", CpuTier::kAvx512},
    {"avx512_bf16", CpuTier::kAvx512Bf16}, {"avx512_vnni", CpuTier::kAvx512Bf16},
    {"amx_tile", CpuTier::kAvx512Amx},     {"amx_bf16", CpuTier::kAvx512Amx},
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

#if defined(__x86_64__)
// Linux's per-process permission to use AMX tile data (kernel >= 5.16;
// docs.kernel.org/arch/x86/xstate.html): request it, then read it back.
bool RequestAmxPermission() {
  constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
  constexpr unsigned long kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0) return false;
  return (permitted >> kXfeatureXtiledata) & 1;
}
#endif

CpuTier Detect() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return CpuTier::kX86_64_V2;
  // The lowest tier needs SSE4.2 and POPCNT, which every CPU TF's wheel
  // runs on has (it needs AVX).
  const bool fma = c & bit_FMA, f16c = c & bit_F16C, movbe = c & bit_MOVBE,
             osxsave = c & bit_OSXSAVE, avx = c & bit_AVX;
  if (!osxsave || !avx) return CpuTier::kX86_64_V2;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0x6) != 0x6) return CpuTier::kX86_64_V2;  // the OS saves SSE and AVX state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return CpuTier::kX86_64_V2;
  const bool avx2 = b & bit_AVX2, bmi1 = b & bit_BMI, bmi2 = b & bit_BMI2;
  const bool vnni = c & bit_AVX512VNNI;
  const bool amx = (d & (1u << 24)) && (d & (1u << 22));  // AMX-TILE, AMX-BF16
  const bool avx512 = (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512CD) &&
                      (b & bit_AVX512DQ) && (b & bit_AVX512VL);
  unsigned a1 = 0, b1, c1, d1;
  const bool bf16 = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 5));
  if (!(avx2 && fma && f16c && bmi1 && bmi2 && movbe)) return CpuTier::kX86_64_V2;
  // ZMM state: opmask, upper ZMM0-15, ZMM16-31 (XCR0 bits 5-7) besides SSE/AVX.
  if (!avx512 || (lo & 0xE6) != 0xE6) return CpuTier::kAvx2;
  if (!(bf16 && vnni)) return CpuTier::kAvx512;
  // Tile config and tile data state (XCR0 bits 17, 18), then the permission.
  if (!amx || (lo & 0x60000) != 0x60000 || !RequestAmxPermission()) return CpuTier::kAvx512Bf16;
  return CpuTier::kAvx512Amx;
#else
  return CpuTier::kX86_64_V2;
#endif
}

// This machine's CPU flags from /proc/cpuinfo (read once).
const std::set<std::string>& CpuFlags() {
  static const std::set<std::string>* flags = [] {
    auto* set = new std::set<std::string>;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      // x86: "flags : ...", aarch64: "Features : ...".
      if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::stringstream words(line.substr(colon + 1));
      std::string w;
      while (words >> w) set->insert(w);
      break;
    }
    return set;
  }();
  return *flags;
}

}  // namespace

const char* CpuTierName(CpuTier tier) {
  for (const TierName& n : kNames) {
    if (n.tier == tier) return n.name;
  }
  return "unknown";
}

bool ParseCpuTier(const std::string& name, CpuTier* tier) {
  const std::string lower = Lower(name);
  for (const TierName& n : kNames) {
    if (lower == n.name) {
      *tier = n.tier;
      return true;
    }
  }
  return false;
}

CpuTier DetectedCpuTier() {
  static const CpuTier tier = Detect();
  return tier;
}

CpuTier MaxCpuTier() {
  static const CpuTier cap = [] {
    const std::string& value = Environment().max_cpu_isa;
    CpuTier tier = kHighestCpuTier;
    if (!value.empty() && !ParseCpuTier(value, &tier)) {
      LOG(WARNING) << "blade_disc_tf: ignoring DISC_MAX_CPU_ISA=" << value
                   << " (one of x86-64-v2, avx2, avx512, avx512_bf16, avx512_amx)";
      tier = kHighestCpuTier;
    }
    return tier;
  }();
  return cap;
}

CpuTier SelectedCpuTier() { return std::min(DetectedCpuTier(), MaxCpuTier()); }

bool Bf16GemmPays() {
  static const bool intel = [] {
#if defined(__x86_64__)
    unsigned a, b, c, d;
    // "GenuineIntel" in EBX, EDX, ECX.
    return __get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547 && d == 0x49656e69 &&
           c == 0x6c65746e;
#else
    return false;
#endif
  }();
  const CpuTier tier = SelectedCpuTier();
  return tier >= CpuTier::kAvx512Amx || (tier >= CpuTier::kAvx512Bf16 && !intel);
}

bool TierOfFeature(const std::string& name, CpuTier* tier) {
  for (const FeatureTier& f : kFeatures) {
    if (name == f.feature) {
      *tier = f.tier;
      return true;
    }
  }
  return false;
}

bool CpuFeatureUsable(const std::string& name) {
  if (!CpuFlags().count(name)) return false;
  CpuTier needs;
  if (TierOfFeature(name, &needs)) return needs <= SelectedCpuTier();
  // Beyond every tier (AMX, AVX512-FP16, VBMI, ...): only when uncapped.
  return MaxCpuTier() == kHighestCpuTier;
}

}  // namespace tf_disc
