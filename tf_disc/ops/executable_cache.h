// Process-wide cache of compiled executables keyed by (cluster function,
// cache key), with single-flight compilation: the first caller of a key
// queues one compile on the compile thread; later callers either wait (their
// continuation is parked and the synchronous DiscLaunch thread waits for it)
// or, with async_compile, fall back.
//
// Executables live as long as their graphs (issue #6): each DiscLaunch kernel
// holds a FunctionClaim on its cluster function, and when the last kernel of
// a function dies its entries are dropped; a compile finishing after that is
// discarded.  A running call holds its own reference, so the library is
// dlclose'd only after the last call using it returned.
#ifndef TF_DISC_OPS_EXECUTABLE_CACHE_H_
#define TF_DISC_OPS_EXECUTABLE_CACHE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "tf_disc/runtime/loader.h"

namespace tf_disc {

class FunctionStats;

// How a lookup resolved: an executable, or the reason to fall back.
struct CacheOutcome {
  std::shared_ptr<const Executable> exe;
  std::string fallback_reason;   // set when exe is null
  bool triggered_compile = false;  // this caller started the compile
};

// Builds the compile request (JSON and serialized FunctionDef).  Called at
// most once per compile, synchronously inside Lookup.
using RequestFactory =
    std::function<absl::Status(std::string* request_json, std::string* fdef)>;

using CacheContinuation = std::function<void(const CacheOutcome&)>;

struct LookupParams {
  const std::string* function;
  const std::string* key;
  FunctionStats* stats;   // compile counters go here
  bool async_compile;
  double timeout_s;
  int32_t device;  // DISC_DEVICE_* the executable is loaded for
};

// Returns true and fills *outcome when the lookup resolved at once.  Returns
// false when the caller waits for a compile: `cont` then runs exactly once,
// later, on the compile or timeout thread (DiscLaunch finishes its call there).
bool LookupExecutable(const LookupParams& params,
                      const RequestFactory& make_request, CacheOutcome* outcome,
                      CacheContinuation cont);

// Drops ready and failed entries (in-flight compiles keep their waiters).
void ClearExecutableCache();

// Bumped by ClearExecutableCache: kernels' per-key memos compare it to know
// their remembered executables are still the cache's.
uint64_t ExecutableCacheEpoch();

// Keys whose compile has started and not finished (async or not).
int64_t CompilesInFlight();

// Takes ownership of a freshly loaded executable: the returned pointer
// dlcloses the library when its last copy goes, and the loaded_executables
// stat counts it meanwhile.  Null stays null.
std::shared_ptr<const Executable> OwnLoadedExecutable(
    std::shared_ptr<const Executable> loaded);

// Keeps the cache entries of `function` alive while the claim lives (held
// by each DiscLaunch kernel; TF destroys kernels with their graph).
class FunctionClaim {
 public:
  explicit FunctionClaim(std::string function);
  ~FunctionClaim();
  FunctionClaim(const FunctionClaim&) = delete;
  FunctionClaim& operator=(const FunctionClaim&) = delete;

 private:
  std::string function_;
};

}  // namespace tf_disc

#endif  // TF_DISC_OPS_EXECUTABLE_CACHE_H_
