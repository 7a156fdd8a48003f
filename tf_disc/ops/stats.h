// Process-wide statistics registry read by DiscGetStats.
#ifndef TF_DISC_OPS_STATS_H_
#define TF_DISC_OPS_STATS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace tf_disc {

// Counters of one cluster function.  Pointers stay valid for the process
// lifetime (kernels cache them), so a reset zeroes instead of deleting.
class FunctionStats {
 public:
  void RecordRun(const std::string& key);
  // A run whose key was recorded since generation `generation()` and that
  // hit a kernel's memo: two relaxed increments, no lock (the steady state).
  void RecordMemoHit() {
    runs_.fetch_add(1, std::memory_order_relaxed);
    cache_hits_.fetch_add(1, std::memory_order_relaxed);
  }
  void RecordCacheHit();
  // Bumped by Reset (which forgets the keys): a kernel that recorded a key
  // under an older generation records it again.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Returns true the first time this reason is seen (for warn-once logs).
  bool RecordFallback(const std::string& reason);
  // compiled: the system compiler ran (false: disk-cache hit).
  void RecordCompile(bool compiled, double seconds);

  void Reset();
  // True when nothing was recorded since the last reset (hidden from JSON).
  bool IsEmpty() const;
  void AppendJson(std::string* out) const;

 private:
  mutable std::mutex mu_;
  std::atomic<int64_t> runs_{0};
  int64_t compiles_ = 0;
  int64_t disk_cache_hits_ = 0;
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<uint64_t> generation_{0};
  int64_t fallbacks_ = 0;
  double compile_seconds_ = 0;
  std::map<std::string, int64_t> fallback_reasons_;
  std::set<std::string> keys_;
  std::set<std::string> warned_reasons_;  // survives Reset: warn once per process
};

FunctionStats* GetFunctionStats(const std::string& function);

// Optimizer counters.
void RecordGraphSeen();
void RecordGraphRewritten(int64_t clusters, int64_t nodes_clustered);

// Gauge of dlopen'ed executables still referenced (not zeroed by a reset).
void RecordExecutableLoaded(int64_t delta);

std::string StatsToJson();
void ResetStats();

}  // namespace tf_disc

#endif  // TF_DISC_OPS_STATS_H_
