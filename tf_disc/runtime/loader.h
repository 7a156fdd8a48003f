// Loads a generated shared library and checks its ABI (see disc_abi.h).
#ifndef TF_DISC_RUNTIME_LOADER_H_
#define TF_DISC_RUNTIME_LOADER_H_

#include <memory>
#include <string>

#include "tf_disc/runtime/disc_abi.h"

namespace tf_disc {

namespace cuda {
class ModuleTable;  // runtime/cuda/cuda_backend.h
}  // namespace cuda

// A loaded executable.  LoadExecutable itself never dlcloses a library it
// returns; the ops layer (OwnLoadedExecutable in tf_disc/ops/executable_cache.h)
// wraps it so the library is dlclose'd when the last reference goes, and a
// running call holds a reference, so code is never unloaded mid-call.
struct Executable {
  std::string path;
  void* handle = nullptr;
  DiscEntryFn entry = nullptr;
  // DISC_DEVICE_CUDA: the library's device code, loaded into each CUcontext
  // on its first launch there (and unloaded with the executable).
  std::shared_ptr<cuda::ModuleTable> modules;
};

// dlopen(RTLD_NOW | RTLD_LOCAL), checks disc_abi_version() == DISC_ABI_VERSION
// and disc_device() == device (a DISC_DEVICE_*: the device the caller runs
// it on), and resolves disc_entry (and, for DISC_DEVICE_CUDA, the device
// image and kernel table).  Returns nullptr with a one-line *error on
// failure.
std::shared_ptr<const Executable> LoadExecutable(const std::string& path, int32_t device,
                                                 std::string* error);

// Loads library bytes held in memory (an executable embedded in a converted
// SavedModel): writes them as a new file (O_EXCL, mode 0500) in a fresh
// private 0700 directory under $TMPDIR (or /tmp), dlopens it through
// LoadExecutable, then unlinks the file and the directory (the mapping stays),
// so no loaded file is ever overwritten or left behind.  `name` (a hash)
// names the file in logs and dladdr.
std::shared_ptr<const Executable> LoadExecutableFromBytes(
    const std::string& bytes, const std::string& name, int32_t device, std::string* error);

}  // namespace tf_disc

#endif  // TF_DISC_RUNTIME_LOADER_H_
