// Functional control flow compiled whole: loops (While / StatelessWhile,
// what tf.while_loop and Keras RNNs build in TF2) and conditionals (If /
// StatelessIf / Case / StatelessCase, tf.cond and tf.switch_case): which
// ones qualify, the rewrites that let them, and the TensorList rule for
// clusters.
//
// A loop qualifies when every op of its cond and body (nested control flow
// included) is one the support table admits, a TensorList op, plumbing
// (Identity, NoOp, Const), or a ReadVariableOp of a resource the loop
// carries unchanged, which HoistInvariantReads (read_hoisting.h) moves before the loop.  A
// conditional qualifies when its predicate is a bool (If) and every op of
// every branch is admitted the same way, a resource among its inputs only
// read (ReadVariableOp, moved before it too), no TensorList among its inputs
// and outputs, and every output of a rank TF knows.
#ifndef TF_DISC_GRAPPLER_LOOP_SUPPORT_H_
#define TF_DISC_GRAPPLER_LOOP_SUPPORT_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tensorflow/core/framework/function.pb.h"
#include "tensorflow/core/framework/graph.pb.h"
#include "tensorflow/core/framework/types.pb.h"
#include "tf_disc/grappler/control_flow_info.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

using FunctionLookup = std::function<const tensorflow::FunctionDef*(const std::string&)>;

// A lookup into a GraphDef's library (valid while `library` lives).
FunctionLookup LibraryLookup(const tensorflow::FunctionDefLibrary& library);

bool IsFunctionalLoop(const std::string& op);
bool IsFunctionalConditional(const std::string& op);
bool IsFunctionalControlFlow(const std::string& op);

// "" when the loop or conditional `node` can be compiled whole, else why
// not, naming the function and the op that keeps it in TF.
std::string ControlFlowRejectReason(const tensorflow::NodeDef& node,
                                    const FunctionLookup& lookup, const SupportTable& table);

// Queries on control-flow nodes and their functions (also used by
// read_hoisting.h).
// A function attr's function name ("" when absent).
std::string FuncAttr(const tensorflow::NodeDef& node, const char* name);
// A list(type) attr's types: a loop's "T", a conditional's "Tin"/"Tout".
std::vector<tensorflow::DataType> TypesAttr(const tensorflow::NodeDef& node, const char* name);
// The nodes of f reading argument `arg` (data or control), by index.
std::vector<int> ArgReaders(const tensorflow::FunctionDef& f, const std::string& arg);
// The branch functions of a conditional; empty when one is missing.
std::vector<const tensorflow::FunctionDef*> BranchFunctions(const tensorflow::NodeDef& node,
                                                            const FunctionLookup& lookup);
// Branch argument k (Tin index) read only by ReadVariableOps in every
// branch: the dtype they read; DT_INVALID when a branch does anything else
// with it, or none reads it.
tensorflow::DataType ReadOnlyResourceType(
    const std::vector<const tensorflow::FunctionDef*>& branches, int k);

// Whether a node of this op may have DT_VARIANT inputs or outputs in a
// cluster (TensorList ops the table admits, loops, Identity, ZerosLike, AddN).
bool MayCarryList(const std::string& op, const SupportTable& table);

// Whether a loop's body returns its argument k unchanged.
bool LoopVarPassesThrough(const tensorflow::FunctionDef& body, int k);

// A TensorList op: TensorList* or EmptyTensorList.
bool IsListOp(const std::string& op);

// (src, dst) node indices of the indexed graph's DT_VARIANT data edges:
// found once per graph, then read by the two functions below every round.
using VariantEdgeList = std::vector<std::pair<int, int>>;
VariantEdgeList VariantEdges(const GraphIndex& index);

// Clears clusterable[v] (with a reason when `reasons`) for nodes joined by a
// DT_VARIANT edge to a node that is not clusterable, until none is left: a
// TensorList never crosses a cluster's boundary.  Returns how many changed.
int KeepListsInside(const tensorflow::GraphDef& graph, const VariantEdgeList& edges,
                    std::vector<const OpSupport*>* clusterable,
                    std::vector<std::string>* reasons);

// Variant edges between two different clusters (cluster_of: node ->
// cluster or -1): their endpoints, to be taken out before clustering again.
std::vector<int> ListsAcrossClusters(const VariantEdgeList& edges,
                                     const std::vector<int>& cluster_of);

// Copies into fdef's attr "_disc_nested_functions" (compiler/frontend/
// functions.py) every library function its control flow reaches, serialized.
void AttachNestedFunctions(const tensorflow::FunctionDefLibrary& library,
                           tensorflow::FunctionDef* fdef);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_LOOP_SUPPORT_H_
