// Keeps compilable functional control flow functional until DiscOptimizer
// sees it.  TF lowers While / StatelessWhile / If / StatelessIf / Case /
// StatelessCase marked _lower_using_switch_merge (tf.while_loop, Keras
// RNNs, tf.cond, tf.switch_case in TF2) into Switch/Merge frames in a
// PRE_PLACEMENT pass, before Grappler runs; this pass runs just before that
// one and unmarks the loops and conditionals loop_support.h can compile
// whole, so the optimizer can put each in one cluster.  One it then leaves
// in TF runs through TF's While / If / Case kernel, with the same results.
#include "tensorflow/core/common_runtime/optimization_registry.h"
#include "tensorflow/core/framework/function.h"
#include "tensorflow/core/graph/graph.h"
#include "tf_disc/grappler/loop_support.h"
#include "tf_disc/grappler/support_table.h"
#include "tf_disc/ops/options.h"

namespace tf_disc {
namespace {

constexpr char kLowerAttr[] = "_lower_using_switch_merge";

class KeepCompilableLoopsPass : public tensorflow::GraphOptimizationPass {
 public:
  absl::Status Run(const tensorflow::GraphOptimizationPassOptions& options) override {
    if (options.graph == nullptr || *options.graph == nullptr || !GetOptions().enabled) {
      return absl::OkStatus();
    }
    std::shared_ptr<const SupportTable> table = GetSupportTable();
    if (!table) return absl::OkStatus();
    tensorflow::Graph* graph = options.graph->get();
    const tensorflow::FunctionLibraryDefinition* flib =
        options.flib_def != nullptr ? options.flib_def : &graph->flib_def();
    const FunctionLookup lookup = [flib](const std::string& name) {
      return flib->Find(name);
    };
    for (tensorflow::Node* n : graph->op_nodes()) {
      if (!IsFunctionalControlFlow(n->type_string())) continue;
      bool lower = false;
      if (!tensorflow::TryGetNodeAttr(n->attrs(), kLowerAttr, &lower) || !lower) continue;
      if (!ControlFlowRejectReason(n->def(), lookup, *table).empty()) continue;
      n->ClearAttr(kLowerAttr);
      n->AddAttr(kLowerAttr, false);
    }
    return absl::OkStatus();
  }
};

// TF's LowerFunctionalOpsPass is PRE_PLACEMENT phase 10.
REGISTER_OPTIMIZATION(tensorflow::OptimizationPassRegistry::PRE_PLACEMENT, 5,
                      KeepCompilableLoopsPass);

}  // namespace
}  // namespace tf_disc
