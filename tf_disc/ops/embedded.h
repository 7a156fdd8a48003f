// Executables embedded in a converted SavedModel (DiscLaunch's `executables`
// attr), so a serving process runs compiled clusters without a compiler.
//
// One attr string per entry, a text header of five lines then the library:
//   "DISCEXE1\n"
//   "<cache key, exactly as DiscLaunch computes it>\n"
//   "<sha256 of the library bytes, lowercase hex>\n"
//   "<required CPU features, /proc/cpuinfo flag names, comma-separated>\n"
//   "<byte count of the library>\n"
//   <the shared library bytes>
// Written by blade_disc_tf.convert (tf_disc/python/_embed.py).
#ifndef TF_DISC_OPS_EMBEDDED_H_
#define TF_DISC_OPS_EMBEDDED_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tf_disc/runtime/loader.h"

namespace tf_disc {

struct EmbeddedEntry {
  std::string key;
  std::string sha256;
  std::vector<std::string> cpu_features;
  std::string bytes;
};

// Parses one attr string.  False with *error on a malformed entry.
bool ParseEmbeddedEntry(const std::string& blob, EmbeddedEntry* entry,
                        std::string* error);

// The CPU features in `required` that this process may not use: absent on
// this machine, or above the DISC_MAX_CPU_ISA cap (runtime/cpu/cpu_isa.h
// CpuFeatureUsable).
std::vector<std::string> MissingCpuFeatures(
    const std::vector<std::string>& required);

// The ISA tier an entry was built for (runtime/cpu/cpu_isa.h CpuTierName): the
// highest tier among its features.
std::string EntryTier(const EmbeddedEntry& entry);

// The executables of one DiscLaunch node, loaded lazily per key.  A key may
// have one entry per ISA tier (convert's target_isas): the one needing the
// most features that this process may use is loaded (one INFO line, counted
// in disc.stats()["embedded_tiers"]).  A load refuses bytes whose sha256
// differs from the recorded one (one ERROR line) and, when no entry of the
// key can run here, says which CPU features are missing (one WARNING line);
// the refusal reason is then returned every time for that key.
class EmbeddedExecutables {
 public:
  // Malformed entries are logged and skipped (their keys fall back).
  EmbeddedExecutables(const std::string& function,
                      const std::vector<std::string>& blobs);

  bool empty() const { return entries_.empty(); }

  // False when no entry has this key.  Otherwise true, with *exe set or
  // *reason saying why the embedded executable cannot be used.
  bool Find(const std::string& key, std::shared_ptr<const Executable>* exe,
            std::string* reason);

 private:
  struct Slot {
    std::vector<EmbeddedEntry> entries;  // most CPU features first
    bool tried = false;
    std::shared_ptr<const Executable> exe;
    std::string reason;
  };
  // Picks and loads one of s's entries (the first try of a key).
  void Load(const std::string& key, Slot* s);

  std::string function_;
  std::mutex mu_;
  std::map<std::string, Slot> entries_;
};

}  // namespace tf_disc

#endif  // TF_DISC_OPS_EMBEDDED_H_
