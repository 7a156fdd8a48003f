#include "tf_disc/runtime/loader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tf_disc/runtime/cuda/cuda_backend.h"
#include "tf_disc/runtime/environment.h"

namespace tf_disc {

std::shared_ptr<const Executable> LoadExecutable(const std::string& path, int32_t device,
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
  // A refused library is closed again: nothing of it is referenced (only
  // disc_abi_version and disc_device ran, and returned), so unloading it cannot leave
  // dangling code pointers behind.
  auto refuse = [&](std::string why) {
    *error = std::move(why);
    dlclose(handle);
    return nullptr;
  };
  auto version = reinterpret_cast<DiscAbiVersionFn>(
      dlsym(handle, "disc_abi_version"));
  if (version == nullptr) return refuse("library lacks disc_abi_version: " + path);
  int32_t v = version();
  if (v != DISC_ABI_VERSION) {
    return refuse("ABI version mismatch: library has " + std::to_string(v) +
                  ", runtime expects " + std::to_string(DISC_ABI_VERSION));
  }
  auto device_fn = reinterpret_cast<DiscDeviceFn>(dlsym(handle, "disc_device"));
  if (device_fn == nullptr) return refuse("library lacks disc_device: " + path);
  if (int32_t d = device_fn(); d != device) {
    return refuse("device mismatch: library runs on device " + std::to_string(d) +
                  ", caller runs device " + std::to_string(device));
  }
  auto entry = reinterpret_cast<DiscEntryFn>(dlsym(handle, "disc_entry"));
  if (entry == nullptr) return refuse("library lacks disc_entry: " + path);
  auto exe = std::make_shared<Executable>();
  if (device == DISC_DEVICE_CUDA) {
    cuda::DeviceImage image;
    std::string why;
    if (!cuda::ReadDeviceImage(handle, &image, &why)) return refuse(why + ": " + path);
    exe->modules = std::make_shared<cuda::ModuleTable>(std::move(image));
  }
  exe->path = path;
  exe->handle = handle;
  exe->entry = entry;
  return exe;
}

namespace {

std::string ErrnoText(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + strerror(errno);
}

bool WriteNewFile(const std::string& path, const std::string& bytes,
                  std::string* error) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0500);
  if (fd < 0) {
    *error = ErrnoText("cannot create", path);
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = ErrnoText("cannot write", path);
      close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) {
    *error = ErrnoText("cannot close", path);
    return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<const Executable> LoadExecutableFromBytes(
    const std::string& bytes, const std::string& name, int32_t device, std::string* error) {
  std::string templ = Environment().tmp_dir + "/blade_disc_tf_embedded_XXXXXX";
  std::vector<char> dir(templ.begin(), templ.end());
  dir.push_back('\0');
  if (mkdtemp(dir.data()) == nullptr) {  // mkdtemp creates the dir 0700
    *error = ErrnoText("cannot create a private directory", templ);
    return nullptr;
  }
  std::string file = std::string(dir.data()) + "/" + name + ".so";
  std::shared_ptr<const Executable> exe;
  if (WriteNewFile(file, bytes, error)) exe = LoadExecutable(file, device, error);
  unlink(file.c_str());
  rmdir(dir.data());
  return exe;
}

}  // namespace tf_disc
