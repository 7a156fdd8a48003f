#include "tf_disc/runtime/loader.h"

#include <dlfcn.h>

namespace tf_disc {

std::shared_ptr<const Executable> LoadExecutable(const std::string& path,
                                                 std::string* error) {
  if (path.empty() || path[0] != '/') {
    *error = "executable path is not absolute: '" + path + "'";
    return nullptr;
  }
  dlerror();  // clear stale state
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* msg = dlerror();
    *error = std::string("dlopen failed: ") + (msg ? msg : "unknown error");
    return nullptr;
  }
  auto version = reinterpret_cast<DiscAbiVersionFn>(
      dlsym(handle, "disc_abi_version"));
  if (version == nullptr) {
    *error = "library lacks disc_abi_version: " + path;
    return nullptr;  // handle leaks on purpose: dlclose of foreign code is unsafe
  }
  int32_t v = version();
  if (v != DISC_ABI_VERSION) {
    *error = "ABI version mismatch: library has " + std::to_string(v) +
             ", runtime expects " + std::to_string(DISC_ABI_VERSION);
    return nullptr;
  }
  auto entry = reinterpret_cast<DiscEntryFn>(dlsym(handle, "disc_entry"));
  if (entry == nullptr) {
    *error = "library lacks disc_entry: " + path;
    return nullptr;
  }
  auto exe = std::make_shared<Executable>();
  exe->path = path;
  exe->handle = handle;
  exe->entry = entry;
  return exe;
}

}  // namespace tf_disc
