// The process environment, read in one place for the C++ layer: the
// settings a user or test fixes for the whole process (README "Options").
// The runtime kernels' policy is not among them (kernel_policy.h).
#ifndef TF_DISC_RUNTIME_ENVIRONMENT_H_
#define TF_DISC_RUNTIME_ENVIRONMENT_H_

#include <string>

namespace tf_disc {

struct ProcessEnvironment {
  // DISC_MAX_CPU_ISA (cpu_isa.h MaxCpuTier); "" when unset.  A cap for users
  // and tests, fixed for the process.
  std::string max_cpu_isa;
  // DISC_SELF_GUARD ("0", "false", "off", "no": off; else on): the
  // self_guard option's default where no Python pushes options (a C++ server).
  bool self_guard = true;
  // TMPDIR when absolute, else "/tmp": where embedded executables are
  // written before dlopen (loader.h).
  std::string tmp_dir;
};

// The environment as read on the first call (getenv walks the whole
// environment, and these settings are fixed for the process).
const ProcessEnvironment& Environment();

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_ENVIRONMENT_H_
