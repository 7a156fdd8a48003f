// The op library's side of kernel_table.h: loads the kernel library of the
// selected CPU tier once per process and hands out its table.
#ifndef TF_DISC_RUNTIME_CPU_KERNEL_DISPATCH_H_
#define TF_DISC_RUNTIME_CPU_KERNEL_DISPATCH_H_

#include <string>

#include "tf_disc/runtime/cpu/kernel_table.h"

namespace tf_disc {

// The kernels of the highest tier that is both selected (cpu_isa.h) and
// loadable from beside the op library: libblade_disc_tf_kernels_<tier>.so,
// trying lower tiers when one is missing or refused.  When none loads, a
// table whose functions fail with an error naming what was tried (the
// DiscLaunch call then reports it; nothing crashes).
const KernelTable& Kernels();

// The tier of the loaded kernel library ("" when none loaded).
std::string LoadedKernelTier();

// Whether a kernel library loaded (cheap: DiscLaunch asks on every call).
bool KernelsLoaded();

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_CPU_KERNEL_DISPATCH_H_
