// Inlines function calls whose bodies the compiler takes whole, before
// clustering, so that their ops join the surrounding cluster instead of
// leaving a call in TF between two clusters.
//
// A call is a PartitionedCall, a StatefulPartitionedCall or a node whose op
// names a function of the graph's library.  TF inlines most calls before
// Grappler runs; what reaches the optimizer are the calls TF must not
// inline: functions marked _noinline, e.g. every tf.function(jit_compile=True)
// (Keras 3 wraps each grouped convolution in one, so a ConvNeXt leaves one
// call per block).  A call is inlined when every op of its body, nested calls
// included, is clusterable or is plumbing that TF runs as it would outside
// the call (arguments, constants, Identity, variable reads): its body then
// runs inside one of our executables, compiled as a unit as _noinline and
// _XlaMustCompile ask.  Inlining is TF's own (InlineFunctionBody) with the
// options of Grappler's function optimizer, so control inputs, control
// outputs (side effects), resource inputs and placement stay as TF keeps
// them.  Other calls stay in TF with the reason.
#ifndef TF_DISC_GRAPPLER_CALL_INLINING_H_
#define TF_DISC_GRAPPLER_CALL_INLINING_H_

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "absl/status/status.h"
#include "tensorflow/core/framework/graph.pb.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

struct CallInlining {
  int inlined = 0;  // call nodes inlined, nested ones included
  // Call node name -> why it stays in TF (the function and what in its body
  // stops it, or why TF's inliner refused it).
  std::unordered_map<std::string, std::string> kept;
};

struct CallInliningOptions {
  // Callers whose names must survive (fetches, preserved nodes): they leave
  // an IdentityN under their name, so that fetches, control targets and
  // control outputs naming them stay valid.
  std::unordered_set<std::string> keep_names;
  // Also inline, whatever their body, the calls TF's runtime inlines before
  // Grappler runs (no _noinline, no api_implements, not marked for XLA):
  // disc.explain() reads traced graphs, which still hold them.
  bool like_runtime = false;
};

// True when some node of `graph` may be a function call (a cheap check that
// spares the rest of the optimizer a copy of the graph).
bool HasFunctionCalls(const tensorflow::GraphDef& graph);

// Inlines the compilable calls of `graph` into *inlined, written only when
// result->inlined > 0.
absl::Status InlineCompilableCalls(const SupportTable& table,
                                   const CallInliningOptions& options,
                                   const tensorflow::GraphDef& graph,
                                   tensorflow::GraphDef* inlined, CallInlining* result);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_CALL_INLINING_H_
