// Process-wide options set from Python through DiscSetOptions.
#ifndef TF_DISC_OPS_OPTIONS_H_
#define TF_DISC_OPS_OPTIONS_H_

#include <string>

namespace tf_disc {

struct Options {
  bool enabled = false;         // plugin optimizer clusters
  int min_cluster_size = 2;
  std::string dump_dir;         // "" = no graph dumps
  bool async_compile = false;   // fall back to TF while a key compiles
  double compile_timeout_s = 600;
  std::string fast_math;        // "" (exact fp32) or "bf16": part of every cache key
};

// A copy of the current options (cheap; taken under a mutex).
Options GetOptions();

// Options().fast_math without the copy (read on every DiscLaunch call).
bool FastMathBf16();

// Applies a JSON object; missing keys keep their value.  Returns false and
// leaves the options unchanged on malformed JSON or wrongly typed values.
bool UpdateOptionsFromJson(const std::string& json, std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_OPS_OPTIONS_H_
