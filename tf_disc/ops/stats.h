// Process-wide statistics registry read by DiscGetStats.
#ifndef TF_DISC_OPS_STATS_H_
#define TF_DISC_OPS_STATS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tf_disc/ops/self_guard.h"

namespace tf_disc {

// Counters of one cluster function.  Pointers stay valid for the process
// lifetime (kernels cache them), so a reset zeroes instead of deleting.
class FunctionStats {
 public:
  // Records a run of `key` (counted and listed together, atomically with
  // respect to Reset); returns the generation it was recorded under, which a
  // kernel's memo keeps for RecordMemoHit.
  uint64_t RecordRun(const std::string& key);
  // A run of `key` that hit a kernel's memo entry recorded under
  // `generation`: a compare-and-swap, no lock (the steady state).  It counts
  // only while no Reset intervened (the counter carries the generation);
  // after one the run is recorded again under the lock, so a run counted
  // after a reset always has its key listed.  Returns the generation the run
  // counted under, for RecordCacheHit once the executable has run (a call it
  // refuses is a fallback, not a hit).
  uint64_t RecordMemoRun(const std::string& key, uint64_t generation);
  // A cache hit of a run recorded under `generation`; dropped, like the run,
  // when a reset came in between (hits never outnumber runs).
  void RecordCacheHit(uint64_t generation);
  // Bumped by Reset (which forgets the keys).
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Returns true the first time this reason is seen (for warn-once logs).
  bool RecordFallback(const std::string& reason);
  // One finished compile of `key`: compiled (the system compiler ran;
  // false: a disk-cache hit), its seconds (codegen_seconds of them in the
  // compiler's own passes), and how many calls of the key ran
  // in TF meanwhile (async compile).  The last kCompileLogSize are listed.
  void RecordCompile(const std::string& key, bool compiled, double seconds,
                     double codegen_seconds, int64_t calls_in_tf);
  static constexpr size_t kCompileLogSize = 32;

  // The self-guard (self_guard.h) ran a call in TF.
  void RecordGuardTfRun();
  // The self-guards of this function's live kernels, whose slots
  // AppendJson shows (their state is not a counter: Reset keeps it).
  void AttachGuard(const SelfGuard* guard);
  void DetachGuard(const SelfGuard* guard);

  void Reset();
  // True when nothing was recorded since the last reset (hidden from JSON).
  bool IsEmpty() const;
  void AppendJson(std::string* out) const;

 private:
  // runs_ and cache_hits_: the count in the low kCountBits bits, the low bits
  // of the generation that counted them above.
  static constexpr int kCountBits = 48;
  static constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
  static uint64_t Tag(uint64_t generation) { return generation << kCountBits; }
  // Adds one to *counter if it still carries `generation`'s tag.
  static bool CountIfCurrent(std::atomic<uint64_t>* counter, uint64_t generation);

  mutable std::mutex mu_;
  std::atomic<uint64_t> runs_{0};
  int64_t compiles_ = 0;
  int64_t disk_cache_hits_ = 0;
  std::atomic<uint64_t> cache_hits_{0};
  std::atomic<uint64_t> generation_{0};
  int64_t fallbacks_ = 0;
  double compile_seconds_ = 0;
  struct CompileRecord {
    std::string key;
    bool compiled;
    double seconds;
    double codegen_seconds;
    int64_t calls_in_tf;
  };
  std::deque<CompileRecord> compile_log_;
  std::map<std::string, int64_t> fallback_reasons_;
  int64_t guard_tf_runs_ = 0;
  std::set<const SelfGuard*> guards_;
  std::set<std::string> keys_;
  std::set<std::string> warned_reasons_;  // survives Reset: warn once per process
};

FunctionStats* GetFunctionStats(const std::string& function);

// Optimizer counters.
void RecordGraphSeen();
void RecordGraphRewritten(int64_t clusters, int64_t nodes_clustered);
// Compute ops (op type -> count) a graph the optimizer analysed left in TF:
// not in any cluster, not data (Placeholder, Const, _Arg, ...), not a launch
// or its kept outputs.  disc.stats()["optimizer"]["ops_left_in_tf"].  Adds
// `ops` as a delta (negative when a later pass over the same graph left
// fewer); a count that reaches 0 is dropped.
void RecordOpsLeftInTf(const std::map<std::string, int64_t>& ops);

// The cluster functions (DiscLaunch "f") the optimizer put into graph
// `graph` (its Grappler item id: a tf.function's concrete function name),
// so that disc.explain can find a function's clusters among the stats.
// disc.stats()["optimizer"]["graph_clusters"]; kept across resets.
void RecordGraphClusters(const std::string& graph, const std::vector<std::string>& functions);

// Gauge of dlopen'ed executables still referenced (not zeroed by a reset).
void RecordExecutableLoaded(int64_t delta);

// Weights packed once (runtime/cpu/packed_weights.h), bf16 or fp32: packs
// (zeroed by a reset) and the bytes held now (a gauge).
void RecordWeightPacks(bool bf16, int64_t packs, int64_t bytes);

// An embedded executable of ISA tier `tier` was loaded (embedded.h).
void RecordEmbeddedTier(const std::string& tier);

std::string StatsToJson();
void ResetStats();

}  // namespace tf_disc

#endif  // TF_DISC_OPS_STATS_H_
