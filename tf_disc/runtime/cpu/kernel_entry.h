// Inside a per-tier kernel library: what the op library told it at load
// time (kernel_host.cc; a standalone driver of the kernels defines
// HostBf16Gemm itself and links kernel_policy.cc).
#ifndef TF_DISC_RUNTIME_CPU_KERNEL_ENTRY_H_
#define TF_DISC_RUNTIME_CPU_KERNEL_ENTRY_H_

#include "tf_disc/runtime/cpu/cpu_isa.h"

namespace tf_disc {

struct KernelHost;  // kernel_table.h

// Keeps the host for the calls below (kernel_entry.cc, once).
void SetKernelHost(const KernelHost* host);

// The op library's selected tier (cpu_isa.h SelectedCpuTier).
CpuTier HostCpuTier();

// Whether fast math runs the bf16 kernel by default (cpu_isa.h Bf16GemmPays).
bool HostBf16Gemm();

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_KERNEL_ENTRY_H_
