// The self-guard: a compiled cluster that runs slower than TF's own ops on
// this machine is switched back to them.  Per DiscLaunch kernel, per cache
// key and per size bucket (the bit length of the call's activation element
// count), calls alternate between the executable and the original function
// until each side has a few timed runs (the first run of each side is a
// warm-up and not counted: it loads, instantiates or packs); the faster
// median then takes the calls.  The other side is probed again now and then
// (one call after 16 calls, the interval doubling while the choice holds, up
// to every 1024th call), so a choice made under load is revisited.  No call
// runs both sides.  Pure policy: the caller times the runs.
#ifndef TF_DISC_OPS_SELF_GUARD_H_
#define TF_DISC_OPS_SELF_GUARD_H_

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tf_disc {

class SelfGuard {
 public:
  enum class Route : uint8_t { kExecutable = 0, kTf = 1 };

  // Timed runs per side before the first choice; the medians use the last
  // kRing.  TF must be kTfMargin faster to take the calls (ties stay ours).
  static constexpr int kSamples = 3;
  static constexpr int kRing = 5;
  static constexpr double kTfMargin = 0.03;
  static constexpr int64_t kFirstProbe = 16;
  static constexpr int64_t kMaxProbe = 1024;
  // Keys x buckets tracked per kernel; calls of further slots run ours, untimed.
  static constexpr size_t kMaxSlots = 64;

  // What one call runs; slot < 0: untracked (nothing to record).
  struct Ticket {
    Route route = Route::kExecutable;
    int slot = -1;
  };

  // One slot as disc.stats() shows it.
  struct SlotReport {
    std::string key;
    int bucket = 0;
    bool decided = false;
    Route route = Route::kExecutable;
    double executable_s = 0;  // medians; 0 before the first timed run
    double tf_s = 0;
    int64_t tf_runs = 0;      // calls this slot ran in TF (samples, probes and routed)
    int64_t switches = 0;     // times the choice changed after the first
  };

  // The size bucket of a call whose activations hold `elements` elements.
  static int Bucket(int64_t elements);

  Ticket Choose(std::string_view key, int bucket);
  // The run `ticket` chose took `seconds` (only runs that completed OK).
  // Returns true when the slot's choice was made or changed by it.
  bool Record(const Ticket& ticket, double seconds);
  SlotReport Report(int slot) const;
  std::vector<SlotReport> Reports() const;  // every slot

 private:
  struct Side {
    std::array<double, kRing> ring{};
    int64_t taken = 0;   // runs chosen (warm-up included)
    int64_t counted = 0; // timed runs kept
    bool warmed = false;  // the warm-up run ended
    double Median() const;
  };
  struct Slot {
    std::string key;
    int bucket = 0;
    std::array<Side, 2> sides;
    bool decided = false;
    Route route = Route::kExecutable;
    int64_t calls_since_probe = 0;
    int64_t probe_interval = kFirstProbe;
    int64_t switches = 0;
  };
  static Route Faster(const Slot& s);
  static SlotReport ReportLocked(const Slot& s);

  mutable std::mutex mu_;
  std::vector<Slot> slots_;
};

}  // namespace tf_disc

#endif  // TF_DISC_OPS_SELF_GUARD_H_
