// The environment, read in one place for the C++ layer.  The runtime
// kernels' benchmark A/B switches (README "Benchmark switches"):
// DISC_GEMM_SKINNY, DISC_GEMM_EPILOGUE, DISC_GEMM_PACKED, DISC_GEMM_PREPACK, DISC_GEMM_MULTI,
// DISC_GEMM_BF16, DISC_CONV_DIRECT, DISC_CONV_TRANSPOSE_COL2IM, DISC_KERNEL_THREADS.  Read from the
// environment once, not on every GEMM or convolution (getenv walks the whole
// environment); DiscReloadRuntimeSwitches (disc_bridge.h) reads them again, so
// that a benchmark times both settings in one process.
#ifndef TF_DISC_RUNTIME_SWITCHES_H_
#define TF_DISC_RUNTIME_SWITCHES_H_

#include <string>

namespace tf_disc {

enum class RuntimeSwitch {
  kGemmSkinny,
  kGemmEpilogue,
  kConvDirect,
  kConvTransposeCol2Im,
  kGemmPacked,
  kGemmPrepack,
  kGemmMulti,
  kGemmBf16,
  kKernelThreads,
};

// The first character of the switch's value as last read, '\0' when unset.
char RuntimeSwitchValue(RuntimeSwitch s);

// The switch named `name` ("DISC_GEMM_SKINNY", ...); false for other names.
bool RuntimeSwitchByName(const char* name, RuntimeSwitch* s);

// Reads every switch from the environment again.
void ReloadRuntimeSwitches();

// DISC_MAX_CPU_ISA (cpu_isa.h MaxCpuTier), read once; "" when unset.  Not a
// benchmark switch: a cap for users and tests, fixed for the process.
const std::string& MaxCpuIsaSetting();

// DISC_SELF_GUARD at load ("0", "false", "off", "no": off; else on): the
// self_guard option's default where no Python pushes options (a C++ server).
bool SelfGuardSetting();

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_SWITCHES_H_
