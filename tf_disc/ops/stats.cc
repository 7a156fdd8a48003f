#include "tf_disc/ops/stats.h"

#include <atomic>
#include <memory>
#include <set>
#include <vector>

#include "tf_disc/common/json.h"
#include "tf_disc/runtime/cpu/cpu_isa.h"
#include "tf_disc/runtime/cpu/kernel_dispatch.h"

namespace tf_disc {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<FunctionStats>> functions;
  std::atomic<int64_t> graphs_seen{0};
  std::atomic<int64_t> graphs_rewritten{0};
  std::atomic<int64_t> clusters_created{0};
  std::atomic<int64_t> nodes_clustered{0};
  std::map<std::string, int64_t> ops_left;  // under mu
  std::atomic<int64_t> loaded_executables{0};
  std::atomic<int64_t> weight_packs[2]{{0}, {0}};  // [0]: bf16, [1]: fp32
  std::atomic<int64_t> weight_bytes[2]{{0}, {0}};
  std::map<std::string, int64_t> embedded_tiers;  // under mu
  std::map<std::string, std::set<std::string>> graph_clusters;  // under mu
};

Registry& GetRegistry() {
  static Registry* r = new Registry;  // never destroyed: kernels hold pointers
  return *r;
}

void AppendField(const char* name, const std::string& value, std::string* out) {
  json::AppendQuoted(name, out);
  *out += ": ";
  *out += value;
}

// "name": count, ... of one of r's maps guarded by r.mu.
void AppendCounts(Registry& r, const std::map<std::string, int64_t>& counts, std::string* out) {
  std::lock_guard<std::mutex> lock(r.mu);
  bool first = true;
  for (const auto& kv : counts) {
    if (!first) *out += ", ";
    first = false;
    AppendField(kv.first.c_str(), std::to_string(kv.second), out);
  }
}

// ["a", "b", ...] of a set of strings.
void AppendQuotedList(const std::set<std::string>& items, std::string* out) {
  *out += "[";
  bool first = true;
  for (const std::string& item : items) {
    if (!first) *out += ", ";
    first = false;
    json::AppendQuoted(item, out);
  }
  *out += "]";
}

std::string Quoted(const std::string& s) {
  std::string out;
  json::AppendQuoted(s, &out);
  return out;
}

}  // namespace

uint64_t FunctionStats::RecordRun(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_.fetch_add(1, std::memory_order_relaxed);
  keys_.insert(key);
  return generation_.load(std::memory_order_relaxed);
}

bool FunctionStats::CountIfCurrent(std::atomic<uint64_t>* counter, uint64_t generation) {
  const uint64_t tag = Tag(generation);
  uint64_t v = counter->load(std::memory_order_relaxed);
  while ((v & ~kCountMask) == tag) {
    if (counter->compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) return true;
  }
  return false;
}

uint64_t FunctionStats::RecordMemoRun(const std::string& key, uint64_t generation) {
  if (CountIfCurrent(&runs_, generation)) return generation;
  return RecordRun(key);  // a reset forgot the key: list it again
}

void FunctionStats::RecordCacheHit(uint64_t generation) {
  CountIfCurrent(&cache_hits_, generation);
}

bool FunctionStats::RecordFallback(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++fallbacks_;
  ++fallback_reasons_[reason];
  return warned_reasons_.insert(reason).second;
}

void FunctionStats::RecordCompile(const std::string& key, bool compiled, double seconds,
                                  double codegen_seconds, int64_t calls_in_tf) {
  std::lock_guard<std::mutex> lock(mu_);
  if (compiled) {
    ++compiles_;
  } else {
    ++disk_cache_hits_;
  }
  compile_seconds_ += seconds;
  if (compile_log_.size() == kCompileLogSize) compile_log_.pop_front();
  compile_log_.push_back({key, compiled, seconds, codegen_seconds, calls_in_tf});
}

void FunctionStats::RecordGuardTfRun() {
  std::lock_guard<std::mutex> lock(mu_);
  ++guard_tf_runs_;
}

void FunctionStats::AttachGuard(const SelfGuard* guard) {
  std::lock_guard<std::mutex> lock(mu_);
  guards_.insert(guard);
}

void FunctionStats::DetachGuard(const SelfGuard* guard) {
  std::lock_guard<std::mutex> lock(mu_);
  guards_.erase(guard);
}

void FunctionStats::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t generation = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  runs_.store(Tag(generation), std::memory_order_release);
  cache_hits_.store(Tag(generation), std::memory_order_release);
  compiles_ = disk_cache_hits_ = fallbacks_ = 0;
  compile_seconds_ = 0;
  compile_log_.clear();
  fallback_reasons_.clear();
  keys_.clear();
  guard_tf_runs_ = 0;
}

bool FunctionStats::IsEmpty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (runs_.load() & kCountMask) == 0 && compiles_ == 0 && disk_cache_hits_ == 0 &&
         fallbacks_ == 0 && keys_.empty() && guard_tf_runs_ == 0;
}

void FunctionStats::AppendJson(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  // Hits before runs: a run counts before its hit, so the snapshot never
  // shows more hits than runs while lock-free memo hits go on.
  const uint64_t cache_hits = cache_hits_.load() & kCountMask;
  *out += "{";
  AppendField("runs", std::to_string(runs_.load() & kCountMask), out);
  *out += ", ";
  AppendField("compiles", std::to_string(compiles_), out);
  *out += ", ";
  AppendField("disk_cache_hits", std::to_string(disk_cache_hits_), out);
  *out += ", ";
  AppendField("cache_hits", std::to_string(cache_hits), out);
  *out += ", ";
  AppendField("fallbacks", std::to_string(fallbacks_), out);
  *out += ", \"fallback_reasons\": {";
  bool first = true;
  for (const auto& kv : fallback_reasons_) {
    if (!first) *out += ", ";
    first = false;
    AppendField(kv.first.c_str(), std::to_string(kv.second), out);
  }
  *out += "}, ";
  AppendField("compile_seconds", json::FormatNumber(compile_seconds_), out);
  *out += ", \"compile_log\": [";
  for (size_t i = 0; i < compile_log_.size(); ++i) {
    const CompileRecord& c = compile_log_[i];
    if (i) *out += ", ";
    *out += "{\"key\": ";
    json::AppendQuoted(c.key, out);
    *out += ", ";
    AppendField("compiled", c.compiled ? "true" : "false", out);
    *out += ", ";
    AppendField("seconds", json::FormatNumber(c.seconds), out);
    *out += ", ";
    AppendField("codegen_seconds", json::FormatNumber(c.codegen_seconds), out);
    *out += ", ";
    AppendField("calls_in_tf", std::to_string(c.calls_in_tf), out);
    *out += "}";
  }
  *out += "]";
  *out += ", \"self_guard\": {";
  AppendField("tf_runs", std::to_string(guard_tf_runs_), out);
  *out += ", \"slots\": [";
  first = true;
  std::vector<SelfGuard::SlotReport> slots;
  for (const SelfGuard* guard : guards_) {
    for (SelfGuard::SlotReport& r : guard->Reports()) slots.push_back(std::move(r));
  }
  for (const SelfGuard::SlotReport& g : slots) {
    if (!first) *out += ", ";
    first = false;
    *out += "{\"key\": ";
    json::AppendQuoted(g.key, out);
    *out += ", \"bucket\": " + std::to_string(g.bucket) + ", \"route\": ";
    *out += !g.decided ? "\"sampling\"" : g.route == SelfGuard::Route::kTf ? "\"tf\"" : "\"disc\"";
    *out += ", ";
    AppendField("executable_ms", json::FormatNumber(g.executable_s * 1e3), out);
    *out += ", ";
    AppendField("tf_ms", json::FormatNumber(g.tf_s * 1e3), out);
    *out += ", ";
    AppendField("tf_runs", std::to_string(g.tf_runs), out);
    *out += ", ";
    AppendField("switches", std::to_string(g.switches), out);
    *out += "}";
  }
  *out += "]}, \"keys\": ";
  AppendQuotedList(keys_, out);
  *out += "}";
}

FunctionStats* GetFunctionStats(const std::string& function) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& slot = r.functions[function];
  if (!slot) slot.reset(new FunctionStats);
  return slot.get();
}

void RecordGraphSeen() { ++GetRegistry().graphs_seen; }

void RecordGraphRewritten(int64_t clusters, int64_t nodes_clustered) {
  Registry& r = GetRegistry();
  ++r.graphs_rewritten;
  r.clusters_created += clusters;
  r.nodes_clustered += nodes_clustered;
}

void RecordOpsLeftInTf(const std::map<std::string, int64_t>& ops) {
  if (ops.empty()) return;
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& kv : ops) {
    if (kv.second == 0) continue;
    int64_t& n = r.ops_left[kv.first];
    n += kv.second;
    if (n <= 0) r.ops_left.erase(kv.first);
  }
}

void RecordGraphClusters(const std::string& graph, const std::vector<std::string>& functions) {
  if (functions.empty()) return;
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.graph_clusters[graph].insert(functions.begin(), functions.end());
}

void RecordExecutableLoaded(int64_t delta) {
  GetRegistry().loaded_executables += delta;
}

void RecordEmbeddedTier(const std::string& tier) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  ++r.embedded_tiers[tier];
}

void RecordWeightPacks(bool bf16, int64_t packs, int64_t bytes) {
  Registry& r = GetRegistry();
  r.weight_packs[bf16 ? 0 : 1] += packs;
  r.weight_bytes[bf16 ? 0 : 1] += bytes;
}

std::string StatsToJson() {
  Registry& r = GetRegistry();
  std::string out = "{\"clusters\": {";
  {
    std::lock_guard<std::mutex> lock(r.mu);
    bool first = true;
    for (const auto& kv : r.functions) {
      if (kv.second->IsEmpty()) continue;
      if (!first) out += ", ";
      first = false;
      json::AppendQuoted(kv.first, &out);
      out += ": ";
      kv.second->AppendJson(&out);
    }
  }
  out += "}, \"optimizer\": {";
  AppendField("graphs_seen", std::to_string(r.graphs_seen.load()), &out);
  out += ", ";
  AppendField("graphs_rewritten", std::to_string(r.graphs_rewritten.load()),
              &out);
  out += ", ";
  AppendField("clusters_created", std::to_string(r.clusters_created.load()),
              &out);
  out += ", ";
  AppendField("nodes_clustered", std::to_string(r.nodes_clustered.load()),
              &out);
  out += ", \"ops_left_in_tf\": {";
  AppendCounts(r, r.ops_left, &out);
  out += "}, \"graph_clusters\": {";
  {
    std::lock_guard<std::mutex> lock(r.mu);
    bool first_graph = true;
    for (const auto& kv : r.graph_clusters) {
      if (!first_graph) out += ", ";
      first_graph = false;
      json::AppendQuoted(kv.first, &out);
      out += ": ";
      AppendQuotedList(kv.second, &out);
    }
  }
  out += "}}, ";
  AppendField("loaded_executables",
              std::to_string(r.loaded_executables.load()), &out);
  for (int i = 0; i < 2; ++i) {
    out += i == 0 ? ", \"bf16_weights\": {" : "}, \"fp32_weights\": {";
    AppendField("packs", std::to_string(r.weight_packs[i].load()), &out);
    out += ", ";
    AppendField("bytes", std::to_string(r.weight_bytes[i].load()), &out);
  }
  out += "}, \"embedded_tiers\": {";
  AppendCounts(r, r.embedded_tiers, &out);
  // The ISA tiers (runtime/cpu/cpu_isa.h) and the kernel library loaded.
  out += "}, \"cpu\": {";
  AppendField("detected", Quoted(CpuTierName(DetectedCpuTier())), &out);
  out += ", ";
  AppendField("max", Quoted(CpuTierName(MaxCpuTier())), &out);
  out += ", ";
  AppendField("selected", Quoted(CpuTierName(SelectedCpuTier())), &out);
  out += ", ";
  AppendField("kernels", Quoted(LoadedKernelTier()), &out);
  out += ", ";
  AppendField("bf16_gemm", Bf16GemmPays() ? "true" : "false", &out);
  out += "}}";
  return out;
}

void ResetStats() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& kv : r.functions) kv.second->Reset();
  r.graphs_seen = 0;
  r.graphs_rewritten = 0;
  r.clusters_created = 0;
  r.nodes_clustered = 0;
  r.ops_left.clear();
  r.embedded_tiers.clear();
  for (auto& packs : r.weight_packs) packs = 0;
}

}  // namespace tf_disc
