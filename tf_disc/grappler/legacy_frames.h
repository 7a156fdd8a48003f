// Turns TF1 legacy control flow back into functional control flow before
// clustering, so that the While / If lowering compiles it whole.
//
// Graphs built with control flow v1 (tf.compat.v1.disable_control_flow_v2(),
// frozen graphs and SavedModels written by TF1) hold tf.while_loop as
// Enter / Merge / Switch / NextIteration / Exit / LoopCond frames and tf.cond
// as Switch / Merge; those ops are no cluster member, so such a graph ends up
// in many small clusters.  TF's XLA bridge rebuilds While and If nodes from
// them (FunctionalizeControlFlow, tensorflow/compiler/tf2xla); this module
// runs it on the loops and conditionals whose every op the compiler takes
// (support table) or is frame plumbing, and keeps the produced While / If
// only when loop_support.h accepts it.  Every other frame stays exactly as it
// was and the reason is reported for its frame ops.
//
// A "group" is what the functionalization must take or leave as a whole: a
// top-level loop frame with its nested frames and Exit nodes, or the nodes of
// a top-level conditional (its Switches, the nodes whose liveness follows
// their predicate, the Merges that end it); groups sharing a node are one.
#ifndef TF_DISC_GRAPPLER_LEGACY_FRAMES_H_
#define TF_DISC_GRAPPLER_LEGACY_FRAMES_H_

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "absl/status/status.h"
#include "tensorflow/core/framework/graph.pb.h"
#include "tf_disc/grappler/device_policy.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

// Names TF's functionalization gives the loop conds and bodies and the
// branches it adds.  DiscOptimizer leaves those functions alone when
// Grappler optimizes them on their own: they run in TF only where their
// loop or conditional does (a fallback, a loop left out of clusters), and a
// DiscLaunch inside a loop body that a fallback runs inline blocks the
// thread its own fallback needs.
inline constexpr char kFunctionalizedPrefix[] = "_functionalize_";

struct LegacyFrames {
  int functionalized = 0;  // While / If nodes produced and kept
  // Frame op (Enter, Exit, Switch, Merge, NextIteration, LoopCond) name ->
  // why its loop or conditional stays in TF.
  std::unordered_map<std::string, std::string> kept;
};

// True when `graph` holds v1 control-flow ops (Switch, Merge, Enter).
bool HasLegacyFrames(const tensorflow::GraphDef& graph);

// Writes `graph` with its compilable legacy loops and conditionals
// functionalized (their functions added to the library) into *out, written
// only when result->functionalized > 0.  Fails only when `graph` cannot be
// indexed; a functionalization TF refuses leaves the graph as it was, with
// TF's message as the reason.  A group holding a fed node stays; an Exit or
// Merge in keep_names (fetched, as tf.while_loop's and tf.cond's results
// are) leaves an Identity of its output 0 under its name.
absl::Status FunctionalizeLegacyFrames(const SupportTable& table,
                                       const std::unordered_set<std::string>& fed_nodes,
                                       const std::unordered_set<std::string>& keep_names,
                                       const DevicePolicy& devices,
                                       const tensorflow::GraphDef& graph,
                                       tensorflow::GraphDef* out, LegacyFrames* result);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_LEGACY_FRAMES_H_
