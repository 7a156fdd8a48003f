#include "tf_disc/ops/options.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "tf_disc/ops/executable_cache.h"
#include "tf_disc/common/json.h"
#include "tf_disc/runtime/environment.h"

namespace tf_disc {
namespace {

std::mutex& OptionsMutex() {
  static std::mutex* mu = new std::mutex;  // never destroyed: used at exit
  return *mu;
}

std::atomic<bool> fast_math_bf16{false};
std::atomic<bool> self_guard{Environment().self_guard};

Options& MutableOptions() {
  static Options* options = [] {
    auto* o = new Options;
    o->self_guard = Environment().self_guard;
    return o;
  }();
  return *options;
}

std::atomic<int> target_tier{static_cast<int>(kHighestCpuTier)};

}  // namespace

bool FastMathBf16() { return fast_math_bf16.load(std::memory_order_relaxed); }

bool SelfGuardOn() { return self_guard.load(std::memory_order_relaxed); }

CpuTier CodegenCpuTier() {
  return std::min(SelectedCpuTier(),
                  static_cast<CpuTier>(target_tier.load(std::memory_order_relaxed)));
}

Options GetOptions() {
  std::lock_guard<std::mutex> lock(OptionsMutex());
  return MutableOptions();
}

bool UpdateOptionsFromJson(const std::string& text, std::string* error) {
  json::Value doc;
  if (!json::Parse(text, &doc, error)) return false;
  if (!doc.is_object()) {
    *error = "options must be a JSON object";
    return false;
  }
  std::lock_guard<std::mutex> lock(OptionsMutex());
  Options next = MutableOptions();
  for (const auto& kv : doc.members()) {
    const std::string& key = kv.first;
    const json::Value& v = kv.second;
    bool ok = true;
    if (key == "enabled") {
      ok = v.is_bool();
      if (ok) next.enabled = v.as_bool();
    } else if (key == "min_cluster_size") {
      ok = v.is_integer() && v.as_int() >= 1 && v.as_int() < (1 << 30);
      if (ok) next.min_cluster_size = static_cast<int>(v.as_int());
    } else if (key == "dump_dir") {
      ok = v.is_string();
      if (ok) next.dump_dir = v.as_string();
    } else if (key == "async_compile") {
      ok = v.is_bool();
      if (ok) next.async_compile = v.as_bool();
    } else if (key == "self_guard") {
      ok = v.is_bool();
      if (ok) next.self_guard = v.as_bool();
    } else if (key == "compile_timeout_s") {
      ok = v.is_number() && v.as_number() > 0;
      if (ok) next.compile_timeout_s = v.as_number();
    } else if (key == "fast_math") {
      ok = v.is_string() && (v.as_string().empty() || v.as_string() == "bf16");
      if (ok) next.fast_math = v.as_string();
    } else if (key == "target_isa") {
      CpuTier tier;
      ok = v.is_string() && (v.as_string().empty() || ParseCpuTier(v.as_string(), &tier));
      if (ok) next.target_isa = v.as_string();
    } else if (key == "device") {
      ok = v.is_string() && (v.as_string() == "cpu" || v.as_string() == "gpu");
      if (ok) next.device = v.as_string();
    }
    // Unknown keys are ignored so that newer Python can talk to older C++.
    if (!ok) {
      *error = "bad value for option '" + key + "'";
      return false;
    }
  }
  MutableOptions() = next;
  fast_math_bf16.store(next.fast_math == "bf16", std::memory_order_relaxed);
  self_guard.store(next.self_guard, std::memory_order_relaxed);
  CpuTier tier = kHighestCpuTier;
  if (!next.target_isa.empty()) ParseCpuTier(next.target_isa, &tier);
  // Executables built for another tier must not serve the new one (the tier
  // is not in the cache key: a process normally has one).
  if (target_tier.exchange(static_cast<int>(tier)) != static_cast<int>(tier)) {
    ClearExecutableCache();
  }
  return true;
}

}  // namespace tf_disc
