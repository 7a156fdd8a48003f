// The host services the kernels of a per-tier library call (kernel_entry.h):
// the runtime switches and the selected tier live in the op library and
// reach the kernels through the KernelHost given at load time.
#include "tf_disc/runtime/kernel_entry.h"
#include "tf_disc/runtime/kernel_table.h"
#include "tf_disc/runtime/switches.h"

namespace tf_disc {
namespace {

const KernelHost* kernel_host = nullptr;

}  // namespace

void SetKernelHost(const KernelHost* host) { kernel_host = host; }

char RuntimeSwitchValue(RuntimeSwitch s) {
  return kernel_host->switch_value(static_cast<int32_t>(s));
}

CpuTier HostCpuTier() { return static_cast<CpuTier>(kernel_host->tier); }

bool HostBf16Gemm() { return kernel_host->bf16_gemm != 0; }

}  // namespace tf_disc

