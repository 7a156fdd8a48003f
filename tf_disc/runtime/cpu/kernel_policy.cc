#include "tf_disc/runtime/cpu/kernel_policy.h"

namespace tf_disc {
namespace {

std::atomic<uint64_t> policy_word{PackKernelPolicy(KernelPolicy{})};

// Per field (ToFields order): its name and highest value.
struct FieldRange {
  const char* name;
  int32_t highest;
};
constexpr FieldRange kRanges[kKernelPolicyFieldCount] = {
    {"skinny_gemm", 2},     {"gemm_epilogue_fusion", 1}, {"direct_conv", 1},
    {"conv_transpose_col2im", 2}, {"packed_gemm", 2},    {"prepack_weights", 1},
    {"multi_gemm", 1},      {"bf16_gemm", 2},            {"kernel_threads", 1}};

}  // namespace

KernelPolicy CurrentKernelPolicy() {
  return UnpackKernelPolicy(policy_word.load(std::memory_order_relaxed));
}

bool CheckKernelPolicyFields(const KernelPolicyFields& fields, std::string* error) {
  for (int i = 0; i < kKernelPolicyFieldCount; ++i) {
    if (fields[i] < 0 || fields[i] > kRanges[i].highest) {
      *error = std::string("kernel policy field ") + kRanges[i].name + " = " +
               std::to_string(fields[i]) + " is out of range 0.." +
               std::to_string(kRanges[i].highest);
      return false;
    }
  }
  return true;
}

bool SetKernelPolicy(const KernelPolicy& policy, std::string* error) {
  if (!CheckKernelPolicyFields(ToFields(policy), error)) return false;
  policy_word.store(PackKernelPolicy(policy), std::memory_order_relaxed);
  return true;
}

const std::atomic<uint64_t>* KernelPolicyWord() { return &policy_word; }

}  // namespace tf_disc
