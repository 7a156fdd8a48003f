// The extern "C" API of disc_bridge.h, called from Python through ctypes.
#include "tf_disc/bridge/disc_bridge.h"

#include <cstring>
#include <string>

#include "tensorflow/core/platform/logging.h"
#include "tf_disc/grappler/support_table.h"
#include "tf_disc/ops/cluster_functions.h"
#include "tf_disc/ops/compile_service.h"
#include "tf_disc/ops/executable_cache.h"
#include "tf_disc/ops/options.h"
#include "tf_disc/ops/stats.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"

extern "C" {

void DiscSetCompileCallback(DiscCompileCallback cb) {
  tf_disc::SetCompileCallback(cb);
}

int32_t DiscSetSupportTable(const char* json) {
  if (json == nullptr) return -1;
  std::string error;
  if (!tf_disc::SetSupportTableFromJson(json, &error)) {
    LOG(ERROR) << "DiscSetSupportTable: " << error;
    return -1;
  }
  return 0;
}

int32_t DiscSetOptions(const char* json) {
  if (json == nullptr) return -1;
  std::string error;
  if (!tf_disc::UpdateOptionsFromJson(json, &error)) {
    LOG(ERROR) << "DiscSetOptions: " << error;
    return -1;
  }
  return 0;
}

int64_t DiscGetStats(char* buf, int64_t cap) {
  std::string s = tf_disc::StatsToJson();
  if (buf != nullptr && cap > 0) {
    size_t n = std::min<size_t>(s.size(), static_cast<size_t>(cap - 1));
    memcpy(buf, s.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int64_t>(s.size());
}

int64_t DiscGetClusterFunction(const char* name, char* buf, int64_t cap) {
  std::string fdef;
  if (name == nullptr || !tf_disc::LookupClusterFunction(name, &fdef)) return -1;
  if (buf != nullptr && cap > 0) {
    memcpy(buf, fdef.data(), std::min<size_t>(fdef.size(), static_cast<size_t>(cap)));
  }
  return static_cast<int64_t>(fdef.size());
}

int64_t DiscCompilesInFlight(void) { return tf_disc::CompilesInFlight(); }

void DiscResetStats(void) { tf_disc::ResetStats(); }

void DiscClearExecutableCache(void) { tf_disc::ClearExecutableCache(); }

static_assert(sizeof(DiscKernelPolicy) == sizeof(tf_disc::KernelPolicyFields),
              "DiscKernelPolicy holds the fields of runtime/cpu/kernel_policy.h ToFields, in order");

int32_t DiscSetKernelPolicy(const DiscKernelPolicy* policy) {
  if (policy == nullptr) return -1;
  tf_disc::KernelPolicyFields fields;
  memcpy(fields.data(), policy, sizeof(fields));
  std::string error;
  if (!tf_disc::CheckKernelPolicyFields(fields, &error) ||
      !tf_disc::SetKernelPolicy(tf_disc::FromFields(fields), &error)) {
    LOG(ERROR) << "DiscSetKernelPolicy: " << error;
    return -1;
  }
  return 0;
}

void DiscGetKernelPolicy(DiscKernelPolicy* policy) {
  if (policy == nullptr) return;
  const tf_disc::KernelPolicyFields fields = tf_disc::ToFields(tf_disc::CurrentKernelPolicy());
  memcpy(policy, fields.data(), sizeof(fields));
}

}  // extern "C"
