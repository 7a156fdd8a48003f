#include "tf_disc/runtime/cpu/kernel_dispatch.h"

#include <dlfcn.h>

#include <string>

#include "tensorflow/core/platform/logging.h"
#include "tf_disc/runtime/cpu/cpu_isa.h"
#include "tf_disc/runtime/cpu/kernel_policy.h"

namespace tf_disc {
namespace {

// The tier each kernel library is built for (sources.json "kernel_tiers"):
// avx512_bf16 and avx512_amx run the avx512 library, whose bf16 kernel
// they enable.
CpuTier LibraryTier(CpuTier tier) {
  return tier >= CpuTier::kAvx512Bf16 ? CpuTier::kAvx512 : tier;
}

// The folder this op library was loaded from.
std::string OwnDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&OwnDirectory), &info) == 0 ||
      info.dli_fname == nullptr) {
    return ".";
  }
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string& Tried() {
  static auto* tried = new std::string;
  return *tried;
}

bool Unavailable(std::string* error) {
  *error = "no kernel library could be loaded for this CPU (" + Tried() + ")";
  return false;
}

bool NoGemm(const GemmArgs&, int, void*, const GemmParallelFor&, std::string* error) {
  return Unavailable(error);
}
bool NoGemmMulti(const GemmArgs*, int, int, void*, const GemmParallelFor&, std::string* error) {
  return Unavailable(error);
}
bool NoWindow(const DiscWindowArgs&, int, void*, const GemmParallelFor&, std::string* error) {
  return Unavailable(error);
}
bool NoWindowFastBf16(const DiscWindowArgs&, const Bf16PackedB*, int, void*,
                      const GemmParallelFor&, std::string* error) {
  return Unavailable(error);
}
bool Never(const GemmArgs&) { return false; }
bool NeverConv(const DiscWindowArgs&) { return false; }
std::unique_ptr<Bf16PackedB> NoBf16Pack(const GemmArgs&, int, const GemmParallelFor&) {
  return nullptr;
}
std::unique_ptr<Fp32PackedB> NoFp32Pack(const GemmArgs&, int, const GemmParallelFor&) {
  return nullptr;
}

const KernelTable kMissing = {kKernelAbiVersion, "",         &NoGemm,     &NoGemmMulti,
                              &NoWindow,         &NoWindowFastBf16, &NeverConv,
                              &Never,            &Never,     &NoBf16Pack, &NoFp32Pack};

const KernelTable* TryLoad(const std::string& dir, CpuTier tier, const KernelHost* host) {
  const std::string path =
      dir + "/libblade_disc_tf_kernels_" + CpuTierName(LibraryTier(tier)) + ".so";
  // RTLD_LOCAL: the library's symbols stay out of the global scope (it
  // exports one anyway); never unloaded (its table is used until exit).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  std::string why;
  if (handle == nullptr) {
    const char* e = dlerror();
    why = e ? e : "dlopen failed";
  } else if (auto fn = reinterpret_cast<DiscKernelTableFn>(
                 dlsym(handle, DISC_KERNEL_TABLE_SYMBOL))) {
    const KernelTable* table = fn(host);
    if (table != nullptr && std::string(table->tier) == CpuTierName(LibraryTier(tier))) {
      return table;
    }
    why = table == nullptr ? "kernel ABI version mismatch"
                           : std::string("built for tier ") + table->tier;
  } else {
    why = "no " DISC_KERNEL_TABLE_SYMBOL;
  }
  Tried() += (Tried().empty() ? "" : "; ") + path + ": " + why;
  return nullptr;
}

const KernelTable* Load() {
  const CpuTier selected = SelectedCpuTier();
  static const KernelHost host = {kKernelAbiVersion, static_cast<int32_t>(selected),
                                  Bf16GemmPays() ? 1 : 0, KernelPolicyWord()};
  const std::string dir = OwnDirectory();
  for (int t = static_cast<int>(selected); t >= 0; --t) {
    const CpuTier tier = static_cast<CpuTier>(t);
    if (t < static_cast<int>(selected) && LibraryTier(tier) == LibraryTier(selected)) continue;
    if (const KernelTable* table = TryLoad(dir, tier, &host)) {
      LOG(INFO) << "blade_disc_tf: CPU tier " << CpuTierName(selected) << " (detected "
                << CpuTierName(DetectedCpuTier()) << ", DISC_MAX_CPU_ISA cap "
                << CpuTierName(MaxCpuTier()) << "); kernels: " << table->tier;
      return table;
    }
  }
  LOG(ERROR) << "blade_disc_tf: " << Tried()
             << "; GEMMs and convolutions in compiled clusters will fail";
  return &kMissing;
}

}  // namespace

const KernelTable& Kernels() {
  static const KernelTable* table = Load();
  return *table;
}

std::string LoadedKernelTier() { return Kernels().tier; }

bool KernelsLoaded() { return Kernels().tier[0] != '\0'; }

}  // namespace tf_disc
