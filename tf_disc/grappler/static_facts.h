// Static facts some lowerings need but a rank-keyed executable cannot see:
// the compiler gives every input dim its own symbol, so an op whose output
// rank depends on dim *values* (Squeeze without axes, GatherNd) compiles only when
// Grappler's shape inference has decided those dims.  Decided nodes are
// rewritten to the equivalent explicit form; the others stay in TF with a
// reason.
#ifndef TF_DISC_GRAPPLER_STATIC_FACTS_H_
#define TF_DISC_GRAPPLER_STATIC_FACTS_H_

#include <string>
#include <unordered_map>
#include <vector>

#include "tensorflow/core/framework/graph.pb.h"

namespace tf_disc {

// True when `graph` has a node ResolveStaticFacts would look at (cheap).
bool NeedsStaticFacts(const tensorflow::GraphDef& graph);

// Attr recording a GatherNd's index depth for the compiler
// (compiler/ops/gather_nd.py); cluster functions keep "_disc_" attrs.
extern const char kIndexDepthAttr[];

// Attr on a cluster function's _Arg (FunctionDef arg_attr after conversion)
// listing the input's dims that shape inference proved, -1 where unknown:
// the compiler uses them as constants instead of fresh symbols (the cache
// key has only ranks), and the executable checks them at run time.
extern const char kStaticDimsAttr[];

// Per-output dims of every node whose output rank shape inference knows
// (node name -> output port -> dims, -1 unknown); outputs of unknown rank are
// empty with `known_rank` false.  Empty map when inference fails.
struct OutputDims {
  std::vector<bool> known_rank;
  std::vector<std::vector<int64_t>> dims;
};
using StaticDims = std::unordered_map<std::string, OutputDims>;
StaticDims InferOutputDims(const tensorflow::GraphDef& graph);

// With `dims` from InferOutputDims(*graph) (one shape inference serves this
// and the cluster rewrite: the rewrites below keep every output's shape),
// records each GatherNd's index depth in kIndexDepthAttr, and rewrites each
// Squeeze without squeeze_dims whose input dims are all known into a Squeeze
// with the explicit dims that are 1 (an Identity when none is).  Returns node
// name -> why it cannot be clustered for the undecided ones.
std::unordered_map<std::string, std::string> ResolveStaticFacts(const StaticDims& dims,
                                                                tensorflow::GraphDef* graph);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_STATIC_FACTS_H_
