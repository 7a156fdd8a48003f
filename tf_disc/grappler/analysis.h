// The clustering decision for one graph, shared by DiscOptimizer (which
// then rewrites the clusters) and disc.explain() (which reports it), so
// that the reasons explain() gives are the optimizer's own.
#ifndef TF_DISC_GRAPPLER_ANALYSIS_H_
#define TF_DISC_GRAPPLER_ANALYSIS_H_

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "tensorflow/core/framework/graph.pb.h"
#include "tf_disc/grappler/call_inlining.h"
#include "tf_disc/grappler/control_flow_info.h"
#include "tf_disc/grappler/device_policy.h"
#include "tf_disc/grappler/legacy_frames.h"
#include "tf_disc/grappler/static_facts.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

struct GraphAnalysis {
  // The analysed graph: the input, or a rewritten copy (legacy frames
  // functionalized, compilable calls inlined, fused ops expanded, static
  // facts applied) held in `copy`.
  const tensorflow::GraphDef* graph = nullptr;
  tensorflow::GraphDef copy;
  LegacyFrames frames;
  CallInlining calls;
  GraphIndex index;
  std::vector<const OpSupport*> clusterable;  // per node
  std::vector<std::vector<int>> clusters;
  std::vector<std::string> reasons;  // per node, "" when clustered; if asked

  // Shape inference's output dims for *graph, run at most once per graph
  // (by AnalyzeGraph when static facts need it, else on first call here by
  // the cluster rewrite: it is the costliest step of the optimizer).
  const StaticDims& InferredDims();

  GraphAnalysis() = default;
  GraphAnalysis(const GraphAnalysis&) = delete;
  GraphAnalysis& operator=(const GraphAnalysis&) = delete;

 private:
  std::unique_ptr<StaticDims> dims_;
};

// Fills *out (graph must outlive it).  calls: how function calls are
// inlined (call_inlining.h).  Fails when the graph cannot be indexed
// (dangling inputs, a cycle that is not a loop).
// devices: which devices' nodes may be clustered (device_policy.h).
absl::Status AnalyzeGraph(const tensorflow::GraphDef& graph, const SupportTable& table,
                          const std::unordered_set<std::string>& fed_nodes,
                          const CallInliningOptions& calls, int min_cluster_size,
                          const DevicePolicy& devices, bool want_reasons, GraphAnalysis* out);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_ANALYSIS_H_
