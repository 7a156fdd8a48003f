// Picks clusterable nodes and groups them into maximal clusters by greedy
// edge contraction in topological order (the idea of XLA's
// MarkForCompilation), never creating a cycle between clusters.
#ifndef TF_DISC_GRAPPLER_CLUSTERING_H_
#define TF_DISC_GRAPPLER_CLUSTERING_H_

#include <string>
#include <unordered_set>
#include <vector>

#include "tf_disc/grappler/control_flow_info.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

// Per node: the table entry when the node may be clustered, else nullptr.
// Fed nodes stay in TF.
std::vector<const OpSupport*> FindClusterableNodes(
    const tensorflow::GraphDef& graph, const SupportTable& table,
    const std::unordered_set<std::string>& fed_nodes);

// Clusters of at least min_cluster_size nodes, each in topological order;
// clusters ordered by their first node.  Members of one cluster share
// device, frame and deadness signature.
std::vector<std::vector<int>> FormClusters(
    const GraphIndex& index, const std::vector<const OpSupport*>& clusterable,
    int min_cluster_size);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_CLUSTERING_H_
