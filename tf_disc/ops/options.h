// Process-wide options set from Python through DiscSetOptions.
#ifndef TF_DISC_OPS_OPTIONS_H_
#define TF_DISC_OPS_OPTIONS_H_

#include <string>

#include "tf_disc/runtime/cpu/cpu_isa.h"

namespace tf_disc {

struct Options {
  bool enabled = false;         // plugin optimizer clusters
  int min_cluster_size = 2;
  std::string dump_dir;         // "" = no graph dumps
  // Fall back to TF while a key compiles (Python pushes its default, on).
  bool async_compile = false;
  double compile_timeout_s = 600;
  // Route a cluster's calls to TF's own ops where they measure faster
  // (self_guard.h).  Before Python pushes options: DISC_SELF_GUARD, else on.
  bool self_guard = true;
  std::string fast_math;        // "" (exact fp32) or "bf16": part of every cache key
  // "" (the selected CPU tier) or a lower tier for generated code
  // (runtime/cpu/cpu_isa.h names); changing it clears the executable cache.
  std::string target_isa;
  // "cpu" or "gpu": the optimizer also clusters GPU-placed nodes
  // (grappler/device_policy.h).
  std::string device = "cpu";
};

// A copy of the current options (cheap; taken under a mutex).
Options GetOptions();

// Options().fast_math without the copy (read on every DiscLaunch call).
bool FastMathBf16();

// Options().self_guard without the copy (read on every DiscLaunch call).
bool SelfGuardOn();

// The ISA tier generated code is compiled for: SelectedCpuTier() lowered to
// the target_isa option (read on every compile request).
CpuTier CodegenCpuTier();

// Applies a JSON object; missing keys keep their value.  Returns false and
// leaves the options unchanged on malformed JSON or wrongly typed values.
bool UpdateOptionsFromJson(const std::string& json, std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_OPS_OPTIONS_H_
