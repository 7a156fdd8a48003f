#include "tf_disc/grappler/analysis.h"

#include <unordered_map>

#include "tensorflow/core/platform/logging.h"
#include "tf_disc/grappler/clustering.h"
#include "tf_disc/grappler/defuse.h"
#include "tf_disc/grappler/loop_support.h"
#include "tf_disc/grappler/read_hoisting.h"
#include "tf_disc/grappler/static_facts.h"

namespace tf_disc {
namespace {

// Re-clusterings after a TensorList edge ended between two clusters.
constexpr int kMaxListRounds = 4;

bool HasFunctionalControlFlow(const tensorflow::GraphDef& graph) {
  for (const auto& n : graph.node()) {
    if (IsFunctionalControlFlow(n.op())) return true;
  }
  return false;
}

bool HasListOps(const tensorflow::GraphDef& graph) {
  for (const auto& n : graph.node()) {
    if (IsListOp(n.op())) return true;
  }
  return false;
}

}  // namespace

const StaticDims& GraphAnalysis::InferredDims() {
  if (!dims_) dims_ = std::make_unique<StaticDims>(InferOutputDims(*graph));
  return *dims_;
}

absl::Status AnalyzeGraph(const tensorflow::GraphDef& graph, const SupportTable& table,
                          const std::unordered_set<std::string>& fed_nodes,
                          const CallInliningOptions& calls, int min_cluster_size,
                          const DevicePolicy& devices, bool want_reasons, GraphAnalysis* out) {
  out->graph = &graph;
  if (HasLegacyFrames(graph)) {
    absl::Status s =
        FunctionalizeLegacyFrames(table, fed_nodes, calls.keep_names, devices, graph,
                                  &out->copy, &out->frames);
    if (!s.ok()) {  // the frames stay as they are
      VLOG(1) << "DiscOptimizer: cannot functionalize frames: " << s;
      out->frames = LegacyFrames();
    } else if (out->frames.functionalized > 0) {
      out->graph = &out->copy;
    }
  }
  if (HasFunctionCalls(*out->graph)) {
    tensorflow::GraphDef inlined;
    absl::Status s = InlineCompilableCalls(table, calls, *out->graph, &inlined, &out->calls);
    if (!s.ok()) {  // the calls stay, with the reason
      VLOG(1) << "DiscOptimizer: cannot inline calls: " << s;
      out->calls = CallInlining();
    } else if (out->calls.inlined > 0) {
      out->copy = std::move(inlined);
      out->graph = &out->copy;
    }
  }
  const bool defuse = HasExpandableFusedOps(*out->graph, table);
  const bool facts = NeedsStaticFacts(*out->graph);
  const bool control_flow = HasFunctionalControlFlow(*out->graph);
  std::unordered_map<std::string, std::string> undecidable;
  if (defuse || facts || control_flow) {  // work on a copy only when something changes
    if (out->graph != &out->copy) out->copy = graph;
    if (control_flow) HoistInvariantReads(table, &out->copy);
    if (defuse) ExpandFusedOps(table, &out->copy);
    out->graph = &out->copy;
    // Inferred on the expanded graph before the facts rewrite it (which
    // keeps every output's shape), then shared with the cluster rewrite.
    if (facts) undecidable = ResolveStaticFacts(out->InferredDims(), &out->copy);
  }
  std::vector<std::string>* reasons = want_reasons ? &out->reasons : nullptr;
  out->clusterable =
      FindClusterableNodes(*out->graph, table, fed_nodes, undecidable, reasons, devices);
  if (reasons != nullptr) {  // a call's or a legacy frame's own reason
    for (int i = 0; i < out->graph->node_size(); ++i) {
      const std::string& name = out->graph->node(i).name();
      auto it = out->calls.kept.find(name);
      if (it != out->calls.kept.end()) (*reasons)[i] = std::string(kReasonCall) + ": " + it->second;
      it = out->frames.kept.find(name);
      if (it != out->frames.kept.end()) (*reasons)[i] = std::string(kReasonFrame) + ": " + it->second;
    }
  }
  absl::Status s = BuildGraphIndex(*out->graph, &out->index);
  if (!s.ok()) return s;
  if (!control_flow && !HasListOps(*out->graph)) {
    out->clusters = FormClusters(out->index, out->clusterable, min_cluster_size, reasons);
    return absl::OkStatus();
  }
  // A TensorList never crosses a cluster's boundary: its nodes leave the
  // clusterable set until every list edge is inside one cluster.
  const VariantEdgeList edges = VariantEdges(out->index);
  for (int round = 0; round < kMaxListRounds; ++round) {
    KeepListsInside(*out->graph, edges, &out->clusterable, reasons);
    out->clusters = FormClusters(out->index, out->clusterable, min_cluster_size, reasons);
    std::vector<int> cluster_of(out->graph->node_size(), -1);
    for (size_t c = 0; c < out->clusters.size(); ++c) {
      for (int v : out->clusters[c]) cluster_of[v] = static_cast<int>(c);
    }
    std::vector<int> across = ListsAcrossClusters(edges, cluster_of);
    if (across.empty()) return absl::OkStatus();
    for (int v : across) {
      out->clusterable[v] = nullptr;
      if (reasons != nullptr) {
        (*reasons)[v] = std::string(kReasonFrame) + ": its TensorList would cross clusters";
      }
    }
  }
  out->clusters.clear();
  return absl::OkStatus();
}

}  // namespace tf_disc
