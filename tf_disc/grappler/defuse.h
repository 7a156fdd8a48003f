// Undoes Grappler fusions that hide supported ops from the clusterer.
// Built-in optimizers run before DiscOptimizer: the arithmetic optimizer
// folds chains of unary ops (Exp, Tanh, Neg, ...) into _UnaryOpsComposition
// and the oneDNN remapper turns x * sigmoid(x) into _MklSwish,
// x * tanh(softplus(x)) into _MklFusedMish, and MatMul +
// BiasAdd [+ Add] [+ Relu/Relu6/Elu/LeakyRelu/Tanh/Sigmoid/Gelu] into
// _FusedMatMul (Gelu comes back as tf.nn.gelu's own formula), and
// BatchMatMulV2 + Mul [+ AddV2] (attention scores) into _MklFusedBatchMatMulV2; no compiler table lists those.  When every plain op
// is supported, such nodes are expanded back into plain nodes that the
// clusterer can take.
#ifndef TF_DISC_GRAPPLER_DEFUSE_H_
#define TF_DISC_GRAPPLER_DEFUSE_H_

#include <string>

#include "tensorflow/core/framework/graph.pb.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

// True for fused op types this file may expand (for cheap pre-checks).
bool IsExpandableFusedOpType(const std::string& op);

// True when `graph` has a fused node that ExpandFusedOps would expand.
bool HasExpandableFusedOps(const tensorflow::GraphDef& graph,
                           const SupportTable& table);

// Expands such nodes in place; the last node of each chain keeps the fused
// node's name, so consumers and fetches are unchanged.  Returns how many
// fused nodes were expanded.
int ExpandFusedOps(const SupportTable& table, tensorflow::GraphDef* graph);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_DEFUSE_H_
