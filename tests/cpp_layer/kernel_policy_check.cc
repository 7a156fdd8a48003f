// Checks the kernel policy's packed word (tf_disc/runtime/cpu/kernel_policy.h)
// and the environment unit (runtime/environment.h): every field value
// survives the word both libraries read, out-of-range values are refused
// with the field named, and the variables the op library keeps are read.
// test_kernel_policy_word.py compiles and runs it with a chosen environment.
#include <cstdio>
#include <cstring>
#include <string>

#include "tests/cpp_layer/expect.h"
#include "tf_disc/runtime/environment.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"

using check::Expect;
using tf_disc::KernelPolicy;
using tf_disc::PathChoice;
using tf_disc::SkinnyGemm;

namespace {

bool Same(const KernelPolicy& a, const KernelPolicy& b) {
  return a.skinny_gemm == b.skinny_gemm && a.gemm_epilogue_fusion == b.gemm_epilogue_fusion &&
         a.direct_conv == b.direct_conv && a.conv_transpose_col2im == b.conv_transpose_col2im &&
         a.packed_gemm == b.packed_gemm && a.prepack_weights == b.prepack_weights &&
         a.multi_gemm == b.multi_gemm && a.bf16_gemm == b.bf16_gemm &&
         a.kernel_threads == b.kernel_threads;
}

// Sets `p`, expects it read back through the word the kernel libraries get.
void SetAndRead(const KernelPolicy& p, const std::string& what) {
  std::string error;
  Expect(tf_disc::SetKernelPolicy(p, &error), what + ": set (" + error + ")");
  Expect(Same(tf_disc::CurrentKernelPolicy(), p), what + ": CurrentKernelPolicy");
  const uint64_t word = tf_disc::KernelPolicyWord()->load();
  Expect(Same(tf_disc::UnpackKernelPolicy(word), p), what + ": the kernel libraries' word");
}

void EveryValueRoundTrips() {
  Expect(Same(tf_disc::CurrentKernelPolicy(), KernelPolicy{}), "product defaults at load");
  for (int v = 0; v <= 2; ++v) {
    KernelPolicy p;
    p.skinny_gemm = static_cast<SkinnyGemm>(v);
    SetAndRead(p, "skinny_gemm " + std::to_string(v));
    p = KernelPolicy{};
    p.conv_transpose_col2im = p.packed_gemm = p.bf16_gemm = static_cast<PathChoice>(v);
    SetAndRead(p, "choices " + std::to_string(v));
  }
  KernelPolicy p;
  p.gemm_epilogue_fusion = p.direct_conv = p.prepack_weights = p.multi_gemm = false;
  p.kernel_threads = 1;
  SetAndRead(p, "flags off, one thread");
  SetAndRead(KernelPolicy{}, "back to the defaults");
}

void OutOfRangeRefused() {
  KernelPolicy bad;
  bad.packed_gemm = static_cast<PathChoice>(3);
  std::string error;
  Expect(!tf_disc::SetKernelPolicy(bad, &error), "packed_gemm 3 refused");
  Expect(error.find("packed_gemm") != std::string::npos, "the error names packed_gemm: " + error);
  bad = KernelPolicy{};
  bad.kernel_threads = 2;
  Expect(!tf_disc::SetKernelPolicy(bad, &error), "kernel_threads 2 refused");
  Expect(error.find("kernel_threads") != std::string::npos, "the error names kernel_threads");
  Expect(Same(tf_disc::CurrentKernelPolicy(), KernelPolicy{}), "a refused policy changes nothing");
}

// argv: the DISC_MAX_CPU_ISA, self_guard (0/1) and tmp_dir the parent set.
void EnvironmentRead(const char* isa, const char* self_guard, const char* tmp_dir) {
  const tf_disc::ProcessEnvironment& env = tf_disc::Environment();
  Expect(env.max_cpu_isa == isa, "DISC_MAX_CPU_ISA read: " + env.max_cpu_isa);
  Expect(env.self_guard == (std::strcmp(self_guard, "1") == 0), "DISC_SELF_GUARD read");
  Expect(env.tmp_dir == tmp_dir, "TMPDIR read: " + env.tmp_dir);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::printf("usage: kernel_policy_check ISA SELF_GUARD TMP_DIR\n");
    return 2;
  }
  EveryValueRoundTrips();
  OutOfRangeRefused();
  EnvironmentRead(argv[1], argv[2], argv[3]);
  std::printf(check::Failures() == 0 ? "ok\n" : "%d failures\n", check::Failures());
  return check::Failures() == 0 ? 0 : 1;
}
