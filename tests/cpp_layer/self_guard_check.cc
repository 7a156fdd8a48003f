// Drives SelfGuard (tf_disc/ops/self_guard.h) with made-up run times and
// checks its routing; test_self_guard.py compiles and runs it.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "tests/cpp_layer/expect.h"
#include "tf_disc/ops/self_guard.h"

using check::Expect;
using tf_disc::SelfGuard;
using Route = SelfGuard::Route;

namespace {

// Runs `calls` calls of key "k" bucket 0; seconds(route, call) times each.
// Returns how many ran in TF.
int Drive(SelfGuard* g, int calls, const std::function<double(Route, int)>& seconds,
          int first_call = 0) {
  int tf = 0;
  for (int i = 0; i < calls; ++i) {
    SelfGuard::Ticket t = g->Choose("k", 0);
    tf += t.route == Route::kTf;
    g->Record(t, seconds(t.route, first_call + i));
  }
  return tf;
}

void OursFasterKeepsOurs() {
  SelfGuard g;
  const int warm = 2 * (SelfGuard::kSamples + 1);
  const int tf_sampled = Drive(&g, warm, [](Route r, int) { return r == Route::kTf ? 2.0 : 1.0; });
  Expect(tf_sampled == SelfGuard::kSamples + 1, "sampling alternates: half the first calls in TF");
  SelfGuard::SlotReport r = g.Report(0);
  Expect(r.decided && r.route == Route::kExecutable, "ours 2x faster: ours chosen");
  Expect(r.executable_s == 1.0 && r.tf_s == 2.0, "medians of the timed runs");
  // Probes of TF at 16, then 32, 64, ... calls: few TF runs in 1000 calls.
  const int tf_later = Drive(&g, 1000, [](Route r, int) { return r == Route::kTf ? 2.0 : 1.0; });
  Expect(tf_later >= 4 && tf_later <= 7, "probes back off: " + std::to_string(tf_later));
  Expect(g.Report(0).switches == 0, "no switch");
}

void TfFasterRoutesToTf() {
  SelfGuard g;
  Drive(&g, 8, [](Route r, int) { return r == Route::kTf ? 1.0 : 2.0; });
  Expect(g.Report(0).route == Route::kTf, "TF 2x faster: TF chosen");
  const int tf_runs = Drive(&g, 100, [](Route r, int) { return r == Route::kTf ? 1.0 : 2.0; });
  Expect(tf_runs >= 95, "routed calls run in TF: " + std::to_string(tf_runs));
}

void WarmUpNotCounted() {
  SelfGuard g;
  // Our first run (load, packing) is 100x slow; TF's too, its instantiation.
  Drive(&g, 8, [](Route r, int call) {
    if (call < 2) return 100.0;
    return r == Route::kTf ? 2.0 : 1.0;
  });
  Expect(g.Report(0).route == Route::kExecutable, "warm-up runs ignored");
}

void TieStaysOurs() {
  SelfGuard g;
  Drive(&g, 8, [](Route r, int) { return r == Route::kTf ? 0.99 : 1.0; });
  Expect(g.Report(0).route == Route::kExecutable, "TF 1% faster: within the margin, ours");
}

void ChangeIsNoticedAtAProbe() {
  SelfGuard g;
  Drive(&g, 8, [](Route r, int) { return r == Route::kTf ? 2.0 : 1.0; });
  // Ours becomes 3x slower (another process took the cores it used).
  Drive(&g, 40, [](Route r, int) { return r == Route::kTf ? 2.0 : 3.0; });
  SelfGuard::SlotReport r = g.Report(0);
  Expect(r.route == Route::kTf && r.switches == 1, "slowed ours: switched to TF at a probe");
  // And back once ours is fast again (probes of ours refill its ring).
  Drive(&g, 400, [](Route r, int) { return r == Route::kTf ? 2.0 : 1.0; });
  r = g.Report(0);
  Expect(r.route == Route::kExecutable && r.switches == 2, "ours fast again: switched back");
}

void SlotsPerKeyAndBucket() {
  SelfGuard g;
  SelfGuard::Ticket a = g.Choose("k", 3), b = g.Choose("k", 4), c = g.Choose("j", 3);
  Expect(a.slot != b.slot && a.slot != c.slot && b.slot != c.slot, "one slot per key and bucket");
  for (int i = 3; i < static_cast<int>(SelfGuard::kMaxSlots); ++i) g.Choose("k", 100 + i);
  Expect(g.Choose("z", 0).slot < 0, "slots beyond kMaxSlots untracked");
  Expect(g.Choose("z", 0).route == Route::kExecutable, "untracked calls run ours");
  Expect(SelfGuard::Bucket(0) == 0 && SelfGuard::Bucket(1) == 1 && SelfGuard::Bucket(1024) == 11,
         "buckets: bit length of the element count");
}

}  // namespace

int main() {
  OursFasterKeepsOurs();
  TfFasterRoutesToTf();
  WarmUpNotCounted();
  TieStaysOurs();
  ChangeIsNoticedAtAProbe();
  SlotsPerKeyAndBucket();
  std::printf("%s\n", check::Failures() == 0 ? "ok" : "failures");
  return check::Failures() == 0 ? 0 : 1;
}
