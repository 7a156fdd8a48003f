#include "tf_disc/runtime/switches.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace tf_disc {
namespace {

constexpr const char* kNames[] = {"DISC_GEMM_SKINNY", "DISC_GEMM_EPILOGUE", "DISC_CONV_DIRECT",
                                  "DISC_CONV_TRANSPOSE_COL2IM", "DISC_GEMM_PACKED",
                                  "DISC_GEMM_PREPACK", "DISC_GEMM_MULTI",
                                  "DISC_GEMM_BF16", "DISC_KERNEL_THREADS"};
constexpr int kCount = sizeof(kNames) / sizeof(kNames[0]);

std::atomic<char> values[kCount];

bool Load() {
  for (int i = 0; i < kCount; ++i) {
    const char* v = std::getenv(kNames[i]);
    values[i].store(v == nullptr ? '\0' : v[0], std::memory_order_relaxed);
  }
  return true;
}

}  // namespace

char RuntimeSwitchValue(RuntimeSwitch s) {
  static const bool loaded = Load();  // once, on the first kernel that asks
  (void)loaded;
  return values[static_cast<int>(s)].load(std::memory_order_relaxed);
}

bool RuntimeSwitchByName(const char* name, RuntimeSwitch* s) {
  for (int i = 0; i < kCount; ++i) {
    if (name != nullptr && std::strcmp(name, kNames[i]) == 0) {
      *s = static_cast<RuntimeSwitch>(i);
      return true;
    }
  }
  return false;
}

const std::string& MaxCpuIsaSetting() {
  static const std::string* value = [] {
    const char* v = std::getenv("DISC_MAX_CPU_ISA");
    return new std::string(v == nullptr ? "" : v);
  }();
  return *value;
}

bool SelfGuardSetting() {
  static const bool on = [] {
    const char* v = std::getenv("DISC_SELF_GUARD");
    if (v == nullptr) return true;
    for (const char* off : {"0", "false", "off", "no", "FALSE", "OFF", "NO", "False"}) {
      if (std::strcmp(v, off) == 0) return false;
    }
    return true;
  }();
  return on;
}

void ReloadRuntimeSwitches() {
  RuntimeSwitchValue(RuntimeSwitch::kGemmSkinny);  // the first load, if not yet done
  Load();
}

}  // namespace tf_disc
