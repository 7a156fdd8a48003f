// The host services the kernels of a per-tier library call (kernel_entry.h):
// the kernel policy and the selected tier live in the op library and
// reach the kernels through the KernelHost given at load time.
#include "tf_disc/runtime/cpu/kernel_entry.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"
#include "tf_disc/runtime/cpu/kernel_table.h"

namespace tf_disc {
namespace {

const KernelHost* kernel_host = nullptr;

}  // namespace

void SetKernelHost(const KernelHost* host) { kernel_host = host; }

KernelPolicy CurrentKernelPolicy() {
  return UnpackKernelPolicy(kernel_host->kernel_policy->load(std::memory_order_relaxed));
}

CpuTier HostCpuTier() { return static_cast<CpuTier>(kernel_host->tier); }

bool HostBf16Gemm() { return kernel_host->bf16_gemm != 0; }

}  // namespace tf_disc

