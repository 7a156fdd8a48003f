#include "tf_disc/ops/self_guard.h"

#include <algorithm>

namespace tf_disc {

int SelfGuard::Bucket(int64_t elements) {
  int bits = 0;
  for (uint64_t e = elements > 0 ? uint64_t(elements) : 0; e != 0; e >>= 1) ++bits;
  return bits;
}

double SelfGuard::Side::Median() const {
  const int64_t n = std::min<int64_t>(counted, kRing);
  if (n == 0) return 0;
  std::array<double, kRing> v = ring;
  std::nth_element(v.begin(), v.begin() + n / 2, v.begin() + n);
  return v[n / 2];
}

SelfGuard::Route SelfGuard::Faster(const Slot& s) {
  const double exe = s.sides[0].Median(), tf = s.sides[1].Median();
  // Leaving ours needs TF kTfMargin faster; coming back needs ours faster.
  if (s.route == Route::kTf && s.decided) return exe < tf ? Route::kExecutable : Route::kTf;
  return tf * (1 + kTfMargin) < exe ? Route::kTf : Route::kExecutable;
}

SelfGuard::Ticket SelfGuard::Choose(std::string_view key, int bucket) {
  std::lock_guard<std::mutex> lock(mu_);
  int index = -1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].bucket == bucket && slots_[i].key == key) {
      index = static_cast<int>(i);
      break;
    }
  }
  if (index < 0) {
    if (slots_.size() >= kMaxSlots) return Ticket{};
    index = static_cast<int>(slots_.size());
    Slot& fresh = slots_.emplace_back();
    fresh.key = std::string(key);
    fresh.bucket = bucket;
  }
  Slot& s = slots_[index];
  Route route;
  if (!s.decided) {
    // Alternate: the side with fewer runs goes next, ours on a tie.
    route = s.sides[1].taken < s.sides[0].taken ? Route::kTf : Route::kExecutable;
  } else if (++s.calls_since_probe >= s.probe_interval) {
    s.calls_since_probe = 0;
    route = s.route == Route::kTf ? Route::kExecutable : Route::kTf;  // probe the other side
  } else {
    route = s.route;
  }
  ++s.sides[static_cast<int>(route)].taken;
  return Ticket{route, index};
}

bool SelfGuard::Record(const Ticket& ticket, double seconds) {
  if (ticket.slot < 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[ticket.slot];
  Side& side = s.sides[static_cast<int>(ticket.route)];
  if (!side.warmed) {
    side.warmed = true;  // the side's first run: its warm-up, not counted
  } else {
    side.ring[side.counted % kRing] = seconds;
    ++side.counted;
  }
  const bool probe = s.decided && ticket.route != s.route;
  if (!s.decided) {
    if (s.sides[0].counted < kSamples || s.sides[1].counted < kSamples) return false;
    s.decided = true;
    s.route = Faster(s);
    return true;
  }
  if (!probe) return false;
  const Route next = Faster(s);
  if (next == s.route) {
    s.probe_interval = std::min(s.probe_interval * 2, kMaxProbe);
    return false;
  }
  s.route = next;
  s.probe_interval = kFirstProbe;
  ++s.switches;
  return true;
}

SelfGuard::SlotReport SelfGuard::Report(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot < 0 || static_cast<size_t>(slot) >= slots_.size()) return SlotReport{};
  return ReportLocked(slots_[slot]);
}

std::vector<SelfGuard::SlotReport> SelfGuard::Reports() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SlotReport> out;
  for (const Slot& s : slots_) out.push_back(ReportLocked(s));
  return out;
}

SelfGuard::SlotReport SelfGuard::ReportLocked(const Slot& s) {
  SlotReport r;
  r.key = s.key;
  r.bucket = s.bucket;
  r.decided = s.decided;
  r.route = s.route;
  r.executable_s = s.sides[0].Median();
  r.tf_s = s.sides[1].Median();
  r.tf_runs = s.sides[1].taken;
  r.switches = s.switches;
  return r;
}

}  // namespace tf_disc
