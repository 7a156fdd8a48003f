// Process-wide cache of compiled executables keyed by (cluster function,
// cache key), with single-flight compilation: the first caller of a key
// queues one compile on the compile thread; later callers either wait (their
// continuation is parked, no thread blocks) or, with async_compile, fall back.
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
};

// Returns true and fills *outcome when the lookup resolved at once.  Returns
// false when the caller waits for a compile: `cont` then runs exactly once,
// later, on the compile or timeout thread (keep it short: reschedule).
bool LookupExecutable(const LookupParams& params,
                      const RequestFactory& make_request, CacheOutcome* outcome,
                      CacheContinuation cont);

// Drops ready and failed entries (in-flight compiles keep their waiters).
void ClearExecutableCache();

}  // namespace tf_disc

#endif  // TF_DISC_OPS_EXECUTABLE_CACHE_H_
