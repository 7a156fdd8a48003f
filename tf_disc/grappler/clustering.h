// Picks clusterable nodes and groups them into maximal clusters by greedy
// edge contraction in topological order (the idea of XLA's
// MarkForCompilation), never creating a cycle between clusters.
#ifndef TF_DISC_GRAPPLER_CLUSTERING_H_
#define TF_DISC_GRAPPLER_CLUSTERING_H_

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tf_disc/grappler/control_flow_info.h"
#include "tf_disc/grappler/device_policy.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

// Why a node stays in TF, as "<kind>: <detail>"; kind is one of the
// constants below (disc.explain() groups by it).
inline constexpr char kReasonUnsupportedOp[] = "unsupported op";
inline constexpr char kReasonDtypeOrAttr[] = "unsupported dtype/attr";
inline constexpr char kReasonStateful[] = "stateful/resource";
inline constexpr char kReasonDevice[] = "device";
inline constexpr char kReasonFrame[] = "control-flow frame";
inline constexpr char kReasonMinSize[] = "cluster below min size";
inline constexpr char kReasonFed[] = "fed";
// An Identity/IdentityN fed only by DiscLaunch outputs: the node a previous
// pass kept under a rewritten node's name (clustering it again would add a
// launch per pass).
inline constexpr char kReasonLaunchOutput[] = "kept launch output";
inline constexpr char kReasonShape[] = "undecidable shape";
// A function call whose body is not compilable whole (call_inlining.h).
inline constexpr char kReasonCall[] = "function call";

// Graph plumbing and data (placeholders, args, constants, NoOp, DiscLaunch),
// not computation: left out of coverage and "ops left in TF" counts (the one
// list; disc.explain reads it per node).
bool IsNonComputeOp(const std::string& op);

// Names of the graph's DiscLaunch nodes.
std::unordered_set<std::string> LaunchNodes(const tensorflow::GraphDef& graph);

// True for an Identity/IdentityN whose data inputs all come from DiscLaunch
// nodes, as cluster_rewrite.cc leaves under a fetched or kept node's name.
bool IsKeptLaunchOutput(const tensorflow::NodeDef& node,
                        const std::unordered_set<std::string>& launches);

// Per node: the table entry when the node may be clustered, else nullptr.
// Fed nodes stay in TF.  With reasons, each rejected node gets its reason
// (reasons[i] stays "" for clusterable ones); entries of `undecidable`
// (node name -> detail, see static_facts.h) are rejected as kReasonShape.
// Nodes on devices `devices` leaves out are rejected as kReasonDevice.
std::vector<const OpSupport*> FindClusterableNodes(
    const tensorflow::GraphDef& graph, const SupportTable& table,
    const std::unordered_set<std::string>& fed_nodes,
    const std::unordered_map<std::string, std::string>& undecidable = {},
    std::vector<std::string>* reasons = nullptr, const DevicePolicy& devices = {});

// Clusters of at least min_cluster_size nodes, each in topological order;
// clusters ordered by their first node.  Members of one cluster share
// device, frame and deadness signature.  With reasons, members of clusters
// that came out too small get kReasonFrame when a clusterable neighbour was
// kept apart by frame/deadness, kReasonDevice by device, else kReasonMinSize.
std::vector<std::vector<int>> FormClusters(
    const GraphIndex& index, const std::vector<const OpSupport*>& clusterable,
    int min_cluster_size, std::vector<std::string>* reasons = nullptr);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_CLUSTERING_H_
