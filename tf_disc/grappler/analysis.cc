#include "tf_disc/grappler/analysis.h"

#include <unordered_map>

#include "tensorflow/core/platform/logging.h"
#include "tf_disc/grappler/clustering.h"
#include "tf_disc/grappler/defuse.h"
#include "tf_disc/grappler/static_facts.h"

namespace tf_disc {

const StaticDims& GraphAnalysis::InferredDims() {
  if (!dims_) dims_ = std::make_unique<StaticDims>(InferOutputDims(*graph));
  return *dims_;
}

absl::Status AnalyzeGraph(const tensorflow::GraphDef& graph, const SupportTable& table,
                          const std::unordered_set<std::string>& fed_nodes,
                          const CallInliningOptions& calls,
                          int min_cluster_size, bool want_reasons, GraphAnalysis* out) {
  out->graph = &graph;
  if (HasFunctionCalls(graph)) {
    absl::Status s = InlineCompilableCalls(table, calls, graph, &out->copy, &out->calls);
    if (!s.ok()) {  // the calls stay, with the reason
      VLOG(1) << "DiscOptimizer: cannot inline calls: " << s;
      out->calls = CallInlining();
    } else if (out->calls.inlined > 0) {
      out->graph = &out->copy;
    }
  }
  const bool defuse = HasExpandableFusedOps(*out->graph, table);
  const bool facts = NeedsStaticFacts(*out->graph);
  std::unordered_map<std::string, std::string> undecidable;
  if (defuse || facts) {  // work on a copy only when something changes
    if (out->graph != &out->copy) out->copy = graph;
    if (defuse) ExpandFusedOps(table, &out->copy);
    out->graph = &out->copy;
    // Inferred on the expanded graph before the facts rewrite it (which
    // keeps every output's shape), then shared with the cluster rewrite.
    if (facts) undecidable = ResolveStaticFacts(out->InferredDims(), &out->copy);
  }
  std::vector<std::string>* reasons = want_reasons ? &out->reasons : nullptr;
  out->clusterable =
      FindClusterableNodes(*out->graph, table, fed_nodes, undecidable, reasons);
  if (reasons != nullptr && !out->calls.kept.empty()) {  // a call's own reason
    for (int i = 0; i < out->graph->node_size(); ++i) {
      auto it = out->calls.kept.find(out->graph->node(i).name());
      if (it != out->calls.kept.end()) (*reasons)[i] = std::string(kReasonCall) + ": " + it->second;
    }
  }
  absl::Status s = BuildGraphIndex(*out->graph, &out->index);
  if (!s.ok()) return s;
  out->clusters = FormClusters(out->index, out->clusterable, min_cluster_size, reasons);
  return absl::OkStatus();
}

}  // namespace tf_disc
