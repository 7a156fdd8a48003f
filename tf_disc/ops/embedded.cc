#include "tf_disc/ops/embedded.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <unordered_map>

#include "tensorflow/core/platform/logging.h"
#include "tf_disc/ops/executable_cache.h"
#include "tf_disc/common/sha256.h"
#include "tf_disc/ops/stats.h"
#include "tf_disc/runtime/cpu/cpu_isa.h"

namespace tf_disc {
namespace {

constexpr char kMagic[] = "DISCEXE1";

// Splits off the next '\n'-terminated line of `blob` at *pos.
bool NextLine(const std::string& blob, size_t* pos, std::string* line) {
  size_t end = blob.find('\n', *pos);
  if (end == std::string::npos) return false;
  *line = blob.substr(*pos, end - *pos);
  *pos = end + 1;
  return true;
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Process-wide: one dlopen per distinct library, shared by every node and
// function runtime that embeds it while any of them lives (the map holds
// weak references; the kernels' slots own the library).  Expired entries are
// dropped whenever a library is loaded, so a server cycling through models
// keeps one entry per library still in use, not one per library ever loaded.
struct SharedLibraries {
  std::mutex mu;
  std::unordered_map<std::string, std::weak_ptr<const Executable>> loaded;
};

SharedLibraries& Shared() {
  static auto* shared = new SharedLibraries;
  return *shared;
}

std::shared_ptr<const Executable> LoadShared(const EmbeddedEntry& e,
                                             std::string* error) {
  SharedLibraries& shared = Shared();
  std::lock_guard<std::mutex> lock(shared.mu);
  auto it = shared.loaded.find(e.sha256);
  if (it != shared.loaded.end()) {
    if (std::shared_ptr<const Executable> exe = it->second.lock()) return exe;
  }
  for (auto p = shared.loaded.begin(); p != shared.loaded.end();) {
    p = p->second.expired() ? shared.loaded.erase(p) : std::next(p);
  }
  std::shared_ptr<const Executable> exe = OwnLoadedExecutable(
      LoadExecutableFromBytes(e.bytes, e.sha256.substr(0, 32), DISC_DEVICE_CPU, error));
  if (exe) shared.loaded[e.sha256] = exe;
  return exe;
}

}  // namespace

bool ParseEmbeddedEntry(const std::string& blob, EmbeddedEntry* entry,
                        std::string* error) {
  size_t pos = 0;
  std::string magic, features, size_text;
  if (!NextLine(blob, &pos, &magic) || magic != kMagic) {
    *error = "not an embedded executable (bad magic)";
    return false;
  }
  if (!NextLine(blob, &pos, &entry->key) ||
      !NextLine(blob, &pos, &entry->sha256) ||
      !NextLine(blob, &pos, &features) || !NextLine(blob, &pos, &size_text)) {
    *error = "truncated embedded executable header";
    return false;
  }
  char* end = nullptr;
  unsigned long long size = strtoull(size_text.c_str(), &end, 10);
  if (size_text.empty() || *end != '\0' || size != blob.size() - pos) {
    *error = "embedded executable size " + size_text + " does not match its " +
             std::to_string(blob.size() - pos) + " bytes";
    return false;
  }
  if (entry->sha256.size() != 64) {
    *error = "embedded executable has a malformed sha256";
    return false;
  }
  entry->cpu_features = SplitCommas(features);
  entry->bytes = blob.substr(pos);
  return true;
}

std::vector<std::string> MissingCpuFeatures(
    const std::vector<std::string>& required) {
  std::vector<std::string> missing;
  for (const std::string& f : required) {
    if (!CpuFeatureUsable(f)) missing.push_back(f);
  }
  return missing;
}

std::string EntryTier(const EmbeddedEntry& entry) {
  CpuTier tier = CpuTier::kX86_64_V2;
  for (const std::string& f : entry.cpu_features) {
    CpuTier t;
    if (TierOfFeature(f, &t)) tier = std::max(tier, t);
  }
  return CpuTierName(tier);
}

EmbeddedExecutables::EmbeddedExecutables(const std::string& function,
                                         const std::vector<std::string>& blobs)
    : function_(function) {
  for (const std::string& blob : blobs) {
    EmbeddedEntry entry;
    std::string error;
    if (!ParseEmbeddedEntry(blob, &entry, &error)) {
      LOG(ERROR) << "DiscLaunch: " << function_
                 << ": ignoring an embedded executable: " << error;
      continue;
    }
    std::vector<EmbeddedEntry>& same_key = entries_[entry.key].entries;
    same_key.push_back(std::move(entry));
    std::stable_sort(same_key.begin(), same_key.end(),
                     [](const EmbeddedEntry& a, const EmbeddedEntry& b) {
                       return a.cpu_features.size() > b.cpu_features.size();
                     });
  }
}

bool EmbeddedExecutables::Find(const std::string& key,
                               std::shared_ptr<const Executable>* exe,
                               std::string* reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  Slot& s = it->second;
  if (!s.tried) {
    s.tried = true;
    Load(key, &s);
    s.entries.clear();  // loaded or refused: the bytes are not needed again
    s.entries.shrink_to_fit();
  }
  *exe = s.exe;
  *reason = s.reason;
  return true;
}

void EmbeddedExecutables::Load(const std::string& key, Slot* s) {
  std::string missing_list;
  for (const EmbeddedEntry& e : s->entries) {
    std::vector<std::string> missing = MissingCpuFeatures(e.cpu_features);
    if (!missing.empty()) {
      // Reported for the last entry tried: the one needing the fewest.
      missing_list.clear();
      for (const std::string& f : missing) missing_list += (missing_list.empty() ? "" : ",") + f;
      continue;
    }
    if (Sha256Hex(e.bytes) != e.sha256) {
      s->reason = "embedded executable sha256 mismatch";
      LOG(ERROR) << "DiscLaunch: " << function_ << ": refusing the embedded "
                 << "executable for key " << key << ": its bytes do not match "
                 << "the recorded sha256 " << e.sha256
                 << " (running the original function instead)";
      return;
    }
    std::string error;
    s->exe = LoadShared(e, &error);
    if (!s->exe) {
      s->reason = "embedded executable load failed: " + error;
      LOG(ERROR) << "DiscLaunch: " << function_ << ": " << s->reason;
      return;
    }
    const std::string tier = EntryTier(e);
    RecordEmbeddedTier(tier);
    LOG(INFO) << "DiscLaunch: " << function_ << ": serving the embedded " << tier
              << " executable for key " << key << " (CPU tier "
              << CpuTierName(SelectedCpuTier()) << ", " << s->entries.size() << " embedded)";
    return;
  }
  s->reason = "embedded executable needs CPU features " + missing_list;
  LOG(WARNING) << "DiscLaunch: " << function_ << ": the embedded executable "
               << "for key " << key << " needs CPU features this machine "
               << "lacks or DISC_MAX_CPU_ISA excludes (" << missing_list
               << "); running the original function";
}

}  // namespace tf_disc

// Entries in the shared-library map (live or expired): a diagnostic for tests
// (tests/reliability/test_embedded_prune.py reads it through ctypes).
extern "C" int64_t DiscEmbeddedLibrariesTracked() {
  tf_disc::SharedLibraries& shared = tf_disc::Shared();
  std::lock_guard<std::mutex> lock(shared.mu);
  return static_cast<int64_t>(shared.loaded.size());
}
