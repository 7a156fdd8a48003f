// An indexed view of a GraphDef for clustering: edges, a topological order
// (NextIteration back edges ignored), each node's control-flow frame and its
// deadness signature (which Switch outputs its liveness depends on).
#ifndef TF_DISC_GRAPPLER_CONTROL_FLOW_INFO_H_
#define TF_DISC_GRAPPLER_CONTROL_FLOW_INFO_H_

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tensorflow/core/framework/graph.pb.h"

namespace tf_disc {

struct GraphEdge {
  int src;
  int src_port;  // -1: control edge
  int dst;
  int dst_port;  // -1: control edge
  bool back_edge;  // NextIteration -> Merge: ignored for ordering
};

struct GraphIndex {
  const tensorflow::GraphDef* graph = nullptr;
  std::unordered_map<std::string, int> node_index;
  std::vector<std::vector<GraphEdge>> in_edges;   // in input order
  std::vector<std::vector<GraphEdge>> out_edges;
  std::vector<int> topo_order;
  std::vector<int> topo_position;  // node -> index in topo_order
  std::vector<int> frame;          // node -> frame id (0 = root)
  std::vector<int> deadness;       // node -> deadness signature id (0 = none)
  // Deadness signature id -> its sorted (predicate node, predicate port * 2 +
  // Switch output port) pairs: the Switch outputs a node's liveness follows.
  std::vector<std::vector<std::pair<int, int>>> signatures;
};

// Fails (the optimizer then leaves the graph alone) on dangling inputs or a
// cycle that is not a while loop.
absl::Status BuildGraphIndex(const tensorflow::GraphDef& graph,
                             GraphIndex* index);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_CONTROL_FLOW_INFO_H_
