#include "tf_disc/ops/cluster_functions.h"

#include <mutex>
#include <unordered_map>

namespace tf_disc {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, std::string> functions;
};

Registry& GetRegistry() {
  static Registry* r = new Registry;  // never destroyed: used by kernels at exit
  return *r;
}

}  // namespace

void RegisterClusterFunction(const std::string& name, std::string serialized) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.functions.emplace(name, std::move(serialized));
}

bool LookupClusterFunction(const std::string& name, std::string* serialized) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.functions.find(name);
  if (it == r.functions.end()) return false;
  *serialized = it->second;
  return true;
}

}  // namespace tf_disc
