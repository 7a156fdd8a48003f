#include "tf_disc/runtime/environment.h"

#include <cstdlib>
#include <cstring>

namespace tf_disc {
namespace {

bool FlagOn(const char* value) {
  if (value == nullptr) return true;
  for (const char* off : {"0", "false", "off", "no", "FALSE", "OFF", "NO", "False"}) {
    if (std::strcmp(value, off) == 0) return false;
  }
  return true;
}

ProcessEnvironment Read() {
  ProcessEnvironment env;
  const char* isa = std::getenv("DISC_MAX_CPU_ISA");
  env.max_cpu_isa = isa == nullptr ? "" : isa;
  env.self_guard = FlagOn(std::getenv("DISC_SELF_GUARD"));
  const char* tmp = std::getenv("TMPDIR");
  env.tmp_dir = (tmp != nullptr && tmp[0] == '/') ? tmp : "/tmp";
  return env;
}

}  // namespace

const ProcessEnvironment& Environment() {
  static const ProcessEnvironment* env = new ProcessEnvironment(Read());  // used at exit too
  return *env;
}

}  // namespace tf_disc
