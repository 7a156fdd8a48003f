#include "tf_disc/ops/executable_cache.h"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensorflow/core/platform/logging.h"
#include "tf_disc/ops/compile_service.h"
#include "tf_disc/ops/stats.h"

namespace tf_disc {
namespace {

using Clock = std::chrono::steady_clock;

enum class State { kCompiling, kReady, kFailed };

struct Waiter {
  CacheContinuation cont;
  bool is_trigger;
};

struct Entry {
  std::string function;
  State state = State::kCompiling;
  uint64_t generation = 0;  // identifies one compile attempt
  std::shared_ptr<const Executable> exe;
  std::string error;
  std::vector<Waiter> waiters;
  int64_t calls_in_tf = 0;  // calls that ran in TF while this compiled (async)
};

class Cache {
 public:
  bool Lookup(const LookupParams& p, const RequestFactory& make_request,
              CacheOutcome* outcome, CacheContinuation cont);
  void Clear();
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  int64_t CompilesInFlight() {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t n = 0;
    for (const auto& kv : entries_) n += kv.second.state == State::kCompiling;
    return n;
  }
  void Claim(const std::string& function);
  void Unclaim(const std::string& function);

 private:
  static std::string MapKey(const std::string& fn, const std::string& key) {
    return fn + '\n' + key;
  }
  // The key part of a MapKey of function fn.
  static std::string KeyOf(const std::string& map_key, const std::string& fn) {
    return map_key.substr(fn.size() + 1);
  }
  // Resolves a finished compile attempt unless it timed out or was cleared.
  void Finish(const std::string& map_key, uint64_t generation,
              std::shared_ptr<const Executable> exe, const std::string& error);
  // device: the DISC_DEVICE_* the executable must run on (loader.h).
  void Compile(std::string map_key, uint64_t generation, std::string function,
               std::string request, std::string fdef, FunctionStats* stats, int32_t device);
  // calls_in_tf, when given and still compiling: the entry's count so far.
  bool StillCompiling(const std::string& map_key, uint64_t generation,
                      int64_t* calls_in_tf = nullptr);
  void WatchDeadline(const std::string& map_key, uint64_t generation,
                     Clock::time_point deadline, double timeout_s);
  void TimeoutLoop();

  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<std::string, int64_t> claims_;  // live kernels per function
  uint64_t next_generation_ = 1;
  std::atomic<uint64_t> epoch_{0};

  // Deadlines of in-flight compiles, watched by a lazily started thread.
  struct Deadline {
    std::string map_key;
    uint64_t generation;
    double timeout_s;
  };
  std::mutex deadline_mu_;
  std::condition_variable deadline_cv_;
  std::multimap<Clock::time_point, Deadline> deadlines_;
  bool timeout_thread_started_ = false;
};

Cache& GetCache() {
  static Cache* cache = new Cache;  // leaked: compile/timeout threads use it
  return *cache;
}

void Resolve(std::vector<Waiter> waiters,
             const std::shared_ptr<const Executable>& exe,
             const std::string& error) {
  for (Waiter& w : waiters) {
    CacheOutcome o;
    o.exe = exe;
    o.fallback_reason = exe ? "" : error;
    o.triggered_compile = w.is_trigger;
    w.cont(o);
  }
}

bool Cache::Lookup(const LookupParams& p, const RequestFactory& make_request,
                   CacheOutcome* outcome, CacheContinuation cont) {
  const std::string map_key = MapKey(*p.function, *p.key);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(map_key);
    if (it != entries_.end()) {
      Entry& e = it->second;
      switch (e.state) {
        case State::kReady:
          outcome->exe = e.exe;
          return true;
        case State::kFailed:
          outcome->fallback_reason = e.error;
          return true;
        case State::kCompiling:
          if (p.async_compile) {
            ++e.calls_in_tf;
            outcome->fallback_reason = "compiling";
            return true;
          }
          e.waiters.push_back({std::move(cont), false});
          return false;
      }
    }
    generation = next_generation_++;
    Entry& e = entries_[map_key];
    e.function = *p.function;
    e.generation = generation;
    e.calls_in_tf = p.async_compile ? 1 : 0;  // this call, if it does not wait
  }
  // This caller owns the compile of a new key.
  outcome->triggered_compile = true;
  std::string request, fdef, error;
  DiscCompileCallback cb = GetCompileCallback();
  if (cb == nullptr) {
    error = "no compiler registered";
  } else {
    absl::Status s = make_request(&request, &fdef);
    if (!s.ok()) error = "cannot build compile request: " + std::string(s.message());
  }
  if (!error.empty()) {
    Finish(map_key, generation, nullptr, error);
    outcome->fallback_reason = error;
    return true;
  }
  VLOG(1) << "DiscLaunch: compiling " << *p.function << " for key " << *p.key;
  if (!p.async_compile) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[map_key].waiters.push_back({std::move(cont), true});
  }
  WatchDeadline(map_key, generation,
                Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(p.timeout_s)),
                p.timeout_s);
  FunctionStats* stats = p.stats;
  std::string function = *p.function;
  const int32_t device = p.device;
  ScheduleOnCompileThread([this, map_key, generation, function, stats, device,
                           request = std::move(request),
                           fdef = std::move(fdef)]() mutable {
    Compile(map_key, generation, std::move(function), std::move(request),
            std::move(fdef), stats, device);
  });
  if (p.async_compile) {
    outcome->fallback_reason = "compiling";
    return true;
  }
  return false;
}

bool Cache::StillCompiling(const std::string& map_key, uint64_t generation,
                           int64_t* calls_in_tf) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(map_key);
  const bool compiling = it != entries_.end() && it->second.generation == generation &&
                         it->second.state == State::kCompiling;
  if (compiling && calls_in_tf != nullptr) *calls_in_tf = it->second.calls_in_tf;
  return compiling;
}

void Cache::Compile(std::string map_key, uint64_t generation,
                    std::string function, std::string request,
                    std::string fdef, FunctionStats* stats, int32_t device) {
  if (!StillCompiling(map_key, generation)) return;  // timed out in the queue
  DiscCompileCallback cb = GetCompileCallback();
  if (cb == nullptr) {
    Finish(map_key, generation, nullptr, "no compiler registered");
    return;
  }
  CompileReply reply = InvokeCompileCallback(cb, request, fdef);
  if (!reply.ok) {
    Finish(map_key, generation, nullptr, "compile failed: " + reply.error);
    return;
  }
  std::string load_error;
  std::shared_ptr<const Executable> exe =
      OwnLoadedExecutable(LoadExecutable(reply.path, device, &load_error));
  int64_t calls_in_tf = 0;
  if (!StillCompiling(map_key, generation, &calls_in_tf)) return;  // late: discard
  stats->RecordCompile(KeyOf(map_key, function), reply.compiled, reply.seconds,
                       reply.codegen_seconds, calls_in_tf);
  VLOG(1) << "DiscLaunch: " << function << (reply.compiled ? " compiled" : " disk-cache hit")
          << " in " << reply.seconds << " s (" << reply.codegen_seconds
          << " s of codegen), " << calls_in_tf
          << " call(s) ran in TF meanwhile -> " << reply.path;
  if (!exe) {
    Finish(map_key, generation, nullptr, "load failed: " + load_error);
    return;
  }
  Finish(map_key, generation, std::move(exe), "");
}

void Cache::Finish(const std::string& map_key, uint64_t generation,
                   std::shared_ptr<const Executable> exe,
                   const std::string& error) {
  std::vector<Waiter> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(map_key);
    if (it == entries_.end() || it->second.generation != generation ||
        it->second.state != State::kCompiling) {
      return;
    }
    Entry& e = it->second;
    waiters.swap(e.waiters);
    if (claims_.count(e.function) == 0) {
      entries_.erase(it);  // every kernel of the function died meanwhile
    } else {
      e.state = exe ? State::kReady : State::kFailed;
      e.exe = exe;
      e.error = error;
    }
  }
  Resolve(std::move(waiters), exe, error);
}

void Cache::WatchDeadline(const std::string& map_key, uint64_t generation,
                          Clock::time_point deadline, double timeout_s) {
  std::lock_guard<std::mutex> lock(deadline_mu_);
  deadlines_.emplace(deadline, Deadline{map_key, generation, timeout_s});
  if (!timeout_thread_started_) {
    timeout_thread_started_ = true;
    std::thread([this] { TimeoutLoop(); }).detach();
  }
  deadline_cv_.notify_one();
}

void Cache::TimeoutLoop() {
  std::unique_lock<std::mutex> lock(deadline_mu_);
  while (true) {
    if (deadlines_.empty()) {
      deadline_cv_.wait(lock);
      continue;
    }
    auto first = deadlines_.begin();
    if (Clock::now() < first->first) {
      deadline_cv_.wait_until(lock, first->first);
      continue;
    }
    Deadline d = first->second;
    deadlines_.erase(first);
    lock.unlock();
    char buf[64];
    snprintf(buf, sizeof(buf), "compile timed out after %g s", d.timeout_s);
    Finish(d.map_key, d.generation, nullptr, buf);  // no-op if it finished
    lock.lock();
  }
}

void Cache::Clear() {
  std::vector<Entry> dropped;  // dlclose outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch_.fetch_add(1, std::memory_order_acq_rel);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.state == State::kCompiling) {
        ++it;
      } else {
        dropped.push_back(std::move(it->second));
        it = entries_.erase(it);
      }
    }
  }
}

void Cache::Claim(const std::string& function) {
  std::lock_guard<std::mutex> lock(mu_);
  ++claims_[function];
}

void Cache::Unclaim(const std::string& function) {
  std::vector<Entry> dropped;  // dlclose outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto c = claims_.find(function);
    if (c == claims_.end() || --c->second > 0) return;
    claims_.erase(c);
    // In-flight compiles stay for single-flight; Finish discards them.
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.function == function &&
          it->second.state != State::kCompiling) {
        dropped.push_back(std::move(it->second));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace

bool LookupExecutable(const LookupParams& params,
                      const RequestFactory& make_request, CacheOutcome* outcome,
                      CacheContinuation cont) {
  return GetCache().Lookup(params, make_request, outcome, std::move(cont));
}

void ClearExecutableCache() { GetCache().Clear(); }

uint64_t ExecutableCacheEpoch() { return GetCache().epoch(); }

int64_t CompilesInFlight() { return GetCache().CompilesInFlight(); }

std::shared_ptr<const Executable> OwnLoadedExecutable(
    std::shared_ptr<const Executable> loaded) {
  if (!loaded) return loaded;
  RecordExecutableLoaded(1);
  const Executable* raw = loaded.get();
  return std::shared_ptr<const Executable>(
      raw, [loaded = std::move(loaded)](const Executable* exe) mutable {
        void* handle = exe->handle;
        loaded.reset();
        if (handle != nullptr) dlclose(handle);
        RecordExecutableLoaded(-1);
      });
}

FunctionClaim::FunctionClaim(std::string function)
    : function_(std::move(function)) {
  GetCache().Claim(function_);
}

FunctionClaim::~FunctionClaim() { GetCache().Unclaim(function_); }

}  // namespace tf_disc
