// x86-64 ISA tiers: which one this CPU and OS run (cpuid + XGETBV), the cap
// a user or test sets (DISC_MAX_CPU_ISA, in the style of ONEDNN_MAX_CPU_ISA),
// and the tier the op library runs its kernels and generated code at.
//
// Tiers, each a superset of the one before:
//   x86-64-v2    SSE4.2, POPCNT (any x86-64 server CPU TF runs on)
//   avx2         x86-64-v3: AVX2, FMA, F16C, BMI1/2 (Haswell, Zen 1 and later)
//   avx512       x86-64-v4: AVX512F/BW/CD/DQ/VL with OS-enabled ZMM state
//                (Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4/5)
//   avx512_bf16  avx512 + AVX512_BF16 + AVX512_VNNI (Cooper Lake, SPR, Zen 4/5)
//   avx512_amx   avx512_bf16 + AMX-TILE + AMX-BF16 with OS-enabled tile state
//                and this process granted it (Sapphire Rapids and later)
// The portable op library runs anywhere; its hot kernels live in one library
// per tier (kernel_table.h) and generated code is compiled for the selected
// tier with explicit flags (compiler/build/isa.py), never the build
// machine's native ones.
#ifndef TF_DISC_RUNTIME_CPU_CPU_ISA_H_
#define TF_DISC_RUNTIME_CPU_CPU_ISA_H_

#include <string>

namespace tf_disc {

enum class CpuTier : int {
  kX86_64_V2 = 0,
  kAvx2 = 1,
  kAvx512 = 2,
  kAvx512Bf16 = 3,
  kAvx512Amx = 4,
};

constexpr CpuTier kHighestCpuTier = CpuTier::kAvx512Amx;

// "x86-64-v2", "avx2", "avx512", "avx512_bf16", "avx512_amx".
const char* CpuTierName(CpuTier tier);

// A tier name (as above, case-insensitive; also "v2"/"v3"/"v4",
// "x86-64-v3"/"x86-64-v4", and "avx512_core"/"avx512_core_bf16"/
// "avx512_core_amx"/"avx10_1_512_amx" as oneDNN spells them); false for
// anything else.
bool ParseCpuTier(const std::string& name, CpuTier* tier);

// The highest tier this CPU and OS support (computed once).  Asks Linux for
// the AMX tile-data permission (ARCH_REQ_XCOMP_PERM, per process) where the
// CPU has AMX: without it the first tile instruction raises SIGILL, so a
// refused request (kernel < 5.16, seccomp) leaves the tier at avx512_bf16.
CpuTier DetectedCpuTier();

// The cap from DISC_MAX_CPU_ISA (environment.h reads it), the
// highest tier when unset; an unknown value is logged once and ignored.
CpuTier MaxCpuTier();

// min(DetectedCpuTier(), MaxCpuTier()): the tier kernels and generated code
// run at in this process.
CpuTier SelectedCpuTier();

// Whether code that needs the /proc/cpuinfo feature `name` ("avx2",
// "avx512f", "avx512_bf16", "amx_tile", ...) may run here: this CPU has it
// and the selected tier includes it (features above the cap count as absent,
// so that an executable built for a higher tier is refused under the cap).
bool CpuFeatureUsable(const std::string& name);

// Whether float GEMMs under fast_math="bf16" run the bf16 kernel
// (gemm_bf16.h): the selected tier is avx512_amx (AMX tiles multiply bf16
// at 16x the FP32 FMA's rate), or avx512_bf16 on a CPU whose VDPBF16PS is
// faster than its FP32 FMA.  AMD Zen 4/5 run VDPBF16PS at twice the FMA's
// multiply-adds; Intel Xeons (Cooper Lake, Sapphire Rapids) at half their
// FP32 rate, where rounding to bf16 would cost precision for a slowdown, so
// there fast math without AMX keeps FP32 GEMMs.  The one place this choice
// is made.
bool Bf16GemmPays();

// The lowest tier that includes feature `name`; false for features no tier
// includes (AMX, AVX512-FP16, ...), which are usable only when uncapped.
bool TierOfFeature(const std::string& name, CpuTier* tier);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_CPU_ISA_H_
