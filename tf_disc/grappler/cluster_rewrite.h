// Replaces each cluster by one DiscLaunch node calling a new cluster
// function, keeping every externally visible node name alive.
#ifndef TF_DISC_GRAPPLER_CLUSTER_REWRITE_H_
#define TF_DISC_GRAPPLER_CLUSTER_REWRITE_H_

#include <string>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "tf_disc/grappler/control_flow_info.h"
#include "tf_disc/grappler/static_facts.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

// Cluster functions are named kClusterFunctionPrefix + content hash; the
// optimizer skips items with this prefix (Grappler optimizes them too).
extern const char kClusterFunctionPrefix[];

struct RewriteInput {
  const GraphIndex* index;
  const std::vector<const OpSupport*>* support;  // per node
  const std::vector<std::vector<int>>* clusters;
  // Nodes whose names must survive: fetches, preserved nodes.
  const std::unordered_set<std::string>* keep_names;
  // Shape inference's dims for index->graph (GraphAnalysis::InferredDims).
  const StaticDims* dims;
};

// Writes the rewritten graph (input library plus the cluster functions) to
// *out.  *rewritten counts the clusters actually replaced.
absl::Status RewriteClusters(const RewriteInput& in, tensorflow::GraphDef* out,
                             int* rewritten);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_CLUSTER_REWRITE_H_
