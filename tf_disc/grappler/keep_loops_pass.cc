// Keeps compilable functional control flow functional until DiscOptimizer
// sees it.  TF lowers While / StatelessWhile / If / StatelessIf / Case /
// StatelessCase marked _lower_using_switch_merge (tf.while_loop, Keras
// RNNs, tf.cond, tf.switch_case in TF2) into Switch/Merge frames in a
// PRE_PLACEMENT pass, before Grappler runs; this pass runs just before that
// one and unmarks the loops and conditionals loop_support.h can compile
// whole, so the optimizer can put each in one cluster.  One it then leaves
// in TF runs through TF's While / If / Case kernel, with the same results.
// A loop passing TensorLists to or from one TF lowers (a gradient's forward
// and backward loops) is lowered too: the optimizer could not cluster it (a
// list never crosses a cluster's boundary), and a functional loop left in
// TF runs its body without the rewrites TF gives lowered ones (oneDNN's).
#include <set>
#include <vector>

#include "tensorflow/core/common_runtime/optimization_registry.h"
#include "tensorflow/core/framework/function.h"
#include "tensorflow/core/graph/graph.h"
#include "tensorflow/core/platform/logging.h"
#include "tf_disc/grappler/loop_support.h"
#include "tf_disc/grappler/support_table.h"
#include "tf_disc/ops/options.h"

namespace tf_disc {
namespace {

constexpr char kLowerAttr[] = "_lower_using_switch_merge";

bool PassesListOn(const tensorflow::Node* n) {
  return n->type_string() == "Identity" || n->type_string() == "IdentityN";
}

// Whether a TensorList edge of `n` (either way, through Identity nodes)
// reaches a node in `lowered`.
bool ListTouches(const tensorflow::Node* n, const std::set<const tensorflow::Node*>& lowered) {
  std::vector<const tensorflow::Node*> stack{n};
  std::set<const tensorflow::Node*> seen{n};
  while (!stack.empty()) {
    const tensorflow::Node* v = stack.back();
    stack.pop_back();
    for (const tensorflow::Edge* e : v->in_edges()) {
      if (e->IsControlEdge() || e->src()->output_type(e->src_output()) != tensorflow::DT_VARIANT) {
        continue;
      }
      if (lowered.count(e->src())) return true;
      if (PassesListOn(e->src()) && seen.insert(e->src()).second) stack.push_back(e->src());
    }
    for (const tensorflow::Edge* e : v->out_edges()) {
      if (e->IsControlEdge() || v->output_type(e->src_output()) != tensorflow::DT_VARIANT) {
        continue;
      }
      if (lowered.count(e->dst())) return true;
      if (PassesListOn(e->dst()) && seen.insert(e->dst()).second) stack.push_back(e->dst());
    }
  }
  return false;
}

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
    std::set<const tensorflow::Node*> lowered;
    std::vector<tensorflow::Node*> kept;
    for (tensorflow::Node* n : graph->op_nodes()) {
      if (!IsFunctionalControlFlow(n->type_string())) continue;
      bool lower = false;
      if (!tensorflow::TryGetNodeAttr(n->attrs(), kLowerAttr, &lower) || !lower) continue;
      if (!ControlFlowRejectReason(n->def(), lookup, *table).empty()) {
        lowered.insert(n);
      } else {
        kept.push_back(n);
      }
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (tensorflow::Node* n : kept) {
        if (!lowered.count(n) && ListTouches(n, lowered)) {
          lowered.insert(n);
          changed = true;
        }
      }
    }
    for (tensorflow::Node* n : kept) {
      VLOG(1) << "DiscKeepLoops: " << n->name() << (lowered.count(n) ? " lowered" : " kept");
      if (lowered.count(n)) continue;
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
