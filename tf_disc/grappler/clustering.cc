#include "tf_disc/grappler/clustering.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_set>

#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/platform/logging.h"
#include "tf_disc/grappler/loop_support.h"

namespace tf_disc {
namespace {

// lists_ok: the op may carry TensorLists (loop_support.h MayCarryList).
bool HasUnsupportedType(const tensorflow::DataTypeVector& types, bool lists_ok) {
  for (tensorflow::DataType t : types) {
    if (tensorflow::IsRefType(t) || t == tensorflow::DT_RESOURCE ||
        (t == tensorflow::DT_VARIANT && !lists_ok)) {
      return true;
    }
  }
  return false;
}

// Union-find over node ids: the representative names a cluster.
int Find(std::vector<int>& parent, int x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

// The cluster-level DAG under contraction, with a topological order kept by
// Pearce-Kelly reordering so that reachability searches only visit the rank
// window between two clusters (absl's GraphCycles::IsReachable is an
// unbounded DFS, which made large graphs quadratic).
class ClusterGraph {
 public:
  explicit ClusterGraph(const GraphIndex& index)
      : succ_(index.in_edges.size()), pred_(index.in_edges.size()),
        rank_(index.topo_position), mark_(index.in_edges.size(), 0) {
    for (size_t v = 0; v < index.out_edges.size(); ++v) {
      for (const GraphEdge& e : index.out_edges[v]) {
        if (e.back_edge || e.src == e.dst) continue;
        succ_[e.src].insert(e.dst);
        pred_[e.dst].insert(e.src);
      }
    }
  }

  // Merges b into a along the edge a -> b unless another path a ~> b exists
  // (the merged cluster would then sit on a cycle).
  bool TryContract(int a, int b) {
    if (ReachesAvoidingDirectEdge(a, b)) return false;
    std::vector<int> moved_preds;
    for (int s : succ_[b]) {
      pred_[s].erase(b);
      pred_[s].insert(a);
      succ_[a].insert(s);
    }
    for (int p : pred_[b]) {
      if (p == a) continue;
      succ_[p].erase(b);
      succ_[p].insert(a);
      pred_[a].insert(p);
      moved_preds.push_back(p);
    }
    succ_[a].erase(b);
    succ_[b].clear();
    pred_[b].clear();
    // b's successors rank above b > a; only b's predecessors can now sit
    // after a in the order.
    for (int p : moved_preds) {
      if (rank_[p] > rank_[a]) Reorder(p, a);
    }
    return true;
  }

 private:
  // DFS from a's successors other than b, within ranks below b's.
  bool ReachesAvoidingDirectEdge(int a, int b) {
    ++epoch_;
    std::vector<int> stack;
    for (int s : succ_[a]) {
      if (s != b && rank_[s] < rank_[b]) stack.push_back(s);
    }
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      if (mark_[v] == epoch_) continue;
      mark_[v] = epoch_;
      for (int s : succ_[v]) {
        if (s == b) return true;
        if (rank_[s] < rank_[b] && mark_[s] != epoch_) stack.push_back(s);
      }
    }
    return false;
  }

  // Restores the order after edge x -> y appeared with rank[x] > rank[y]
  // (Pearce-Kelly): nodes reaching x move before those reachable from y,
  // reusing their ranks.
  void Reorder(int x, int y) {
    const int lo = rank_[y], hi = rank_[x];
    std::vector<int> forward, backward;
    Collect(y, /*forward=*/true, lo, hi, &forward);
    Collect(x, /*forward=*/false, lo, hi, &backward);
    auto by_rank = [this](int u, int v) { return rank_[u] < rank_[v]; };
    std::sort(forward.begin(), forward.end(), by_rank);
    std::sort(backward.begin(), backward.end(), by_rank);
    std::vector<int> ranks;
    for (int v : backward) ranks.push_back(rank_[v]);
    for (int v : forward) ranks.push_back(rank_[v]);
    std::sort(ranks.begin(), ranks.end());
    size_t i = 0;
    for (int v : backward) rank_[v] = ranks[i++];
    for (int v : forward) rank_[v] = ranks[i++];
  }

  void Collect(int start, bool forward, int lo, int hi, std::vector<int>* out) {
    ++epoch_;
    std::vector<int> stack = {start};
    mark_[start] = epoch_;
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      out->push_back(v);
      for (int w : forward ? succ_[v] : pred_[v]) {
        bool in_window = forward ? rank_[w] < hi : rank_[w] > lo;
        if (in_window && mark_[w] != epoch_) {
          mark_[w] = epoch_;
          stack.push_back(w);
        }
      }
    }
  }

  std::vector<std::unordered_set<int>> succ_, pred_;
  std::vector<int> rank_;
  std::vector<uint32_t> mark_;
  uint32_t epoch_ = 0;
};

std::string Reason(const char* kind, const std::string& detail) {
  return std::string(kind) + ": " + detail;
}

// On a GPU, const and value inputs are read on the host, and only int32
// tensors live in host memory there (disc_abi.h; TF's own function
// arguments alike, which a fallback passes them to): "" when every such
// input of a node is int32, else which one is not.
std::string NonInt32HostInput(const OpSupport& support, const tensorflow::DataTypeVector& in) {
  for (const std::set<int>* ports : {&support.const_inputs, &support.value_inputs}) {
    for (int p : *ports) {
      const int port = OpSupport::InputIndex(p, static_cast<int>(in.size()));
      if (port >= 0 && port < static_cast<int>(in.size()) &&
          tensorflow::BaseType(in[port]) != tensorflow::DT_INT32) {
        return "a " + tensorflow::DataTypeString(in[port]) + " shape or value input " +
               std::to_string(port);
      }
    }
  }
  return "";
}

// "" and *support set when node may be clustered, else why not.  Checks
// that concern the node wherever it runs (device, state) come before the
// support table, so that explain() names the deeper cause.
std::string RejectReason(const tensorflow::NodeDef& node, const SupportTable& table,
                         const std::unordered_set<std::string>& fed_nodes,
                         const std::unordered_map<std::string, std::string>& undecidable,
                         const FunctionLookup& functions, const DevicePolicy& devices,
                         const OpSupport** support) {
  if (fed_nodes.count(node.name())) return Reason(kReasonFed, "fed by the caller");
  const DeviceKind device = KindOfDevice(node.device());
  if (device == DeviceKind::kOther || (device == DeviceKind::kGpu && !devices.gpu)) {
    return Reason(kReasonDevice, node.device());
  }
  if (device == DeviceKind::kGpu && !GpuAllowsOp(node.op())) {
    return Reason(kReasonUnsupportedOp, node.op() + " on a GPU");
  }
  if (IsFunctionalControlFlow(node.op())) {  // compiled whole, or left in TF
    std::string why = ControlFlowRejectReason(node, functions, table);
    if (!why.empty()) return Reason(kReasonUnsupportedOp, node.op() + " " + why);
  }
  const tensorflow::OpDef* op_def = nullptr;
  if (!tensorflow::OpRegistry::Global()->LookUpOpDef(node.op(), &op_def).ok()) {
    return Reason(kReasonUnsupportedOp, node.op() + " (a function call)");
  }
  if (op_def->is_stateful() && !IsFunctionalControlFlow(node.op())) {
    return Reason(kReasonStateful, node.op() + " is stateful");
  }
  tensorflow::DataTypeVector in, out;
  if (!tensorflow::InOutTypesForNode(node, *op_def, &in, &out).ok()) {
    return Reason(kReasonDtypeOrAttr, "input/output types not computable");
  }
  const bool lists_ok = MayCarryList(node.op(), table);
  if (HasUnsupportedType(in, lists_ok) || HasUnsupportedType(out, lists_ok)) {
    return Reason(kReasonStateful, "resource, variant or reference tensor");
  }
  if (!table.HasOp(node.op())) return Reason(kReasonUnsupportedOp, node.op());
  std::string refused;
  *support = table.Match(node, *op_def, &refused);
  if (*support == nullptr) return Reason(kReasonDtypeOrAttr, node.op() + " with " + refused);
  if (device == DeviceKind::kGpu) {
    std::string why = NonInt32HostInput(**support, in);
    if (!why.empty()) {
      *support = nullptr;
      return Reason(kReasonDtypeOrAttr, node.op() + " with " + why + " on a GPU");
    }
  }
  auto it = undecidable.find(node.name());
  if (it != undecidable.end()) {
    *support = nullptr;
    return Reason(kReasonShape, it->second);
  }
  return "";
}

// Why v's cluster (of `size` nodes) stayed small: a clusterable neighbour
// kept apart by frame/deadness or device, else just too few nodes.
std::string TooSmallReason(const GraphIndex& index,
                           const std::vector<const OpSupport*>& clusterable, int v,
                           size_t size, int min_cluster_size) {
  const tensorflow::GraphDef& graph = *index.graph;
  for (const auto* edges : {&index.in_edges[v], &index.out_edges[v]}) {
    for (const GraphEdge& e : *edges) {
      int w = e.src == v ? e.dst : e.src;
      if (w == v || clusterable[w] == nullptr) continue;
      if (index.frame[w] != index.frame[v] || index.deadness[w] != index.deadness[v]) {
        return Reason(kReasonFrame, "neighbour " + graph.node(w).name() +
                                        " is in another frame or branch");
      }
      if (graph.node(w).device() != graph.node(v).device()) {
        return Reason(kReasonDevice, "neighbour " + graph.node(w).name() +
                                         " is on device '" + graph.node(w).device() + "'");
      }
    }
  }
  return Reason(kReasonMinSize, std::to_string(size) + " < " +
                                    std::to_string(min_cluster_size) + " node(s)");
}

}  // namespace

bool IsNonComputeOp(const std::string& op) {
  static const auto* kOps = new std::unordered_set<std::string>{
      "Placeholder", "PlaceholderWithDefault", "_Arg", "_Retval", "NoOp", "Const",
      "DiscLaunch"};
  return kOps->count(op) > 0;
}

std::unordered_set<std::string> LaunchNodes(const tensorflow::GraphDef& graph) {
  std::unordered_set<std::string> names;
  for (const tensorflow::NodeDef& n : graph.node()) {
    if (n.op() == "DiscLaunch") names.insert(n.name());
  }
  return names;
}

// True for an Identity/IdentityN whose data inputs all come from DiscLaunch
// nodes, as cluster_rewrite.cc leaves under a fetched or kept node's name.
bool IsKeptLaunchOutput(const tensorflow::NodeDef& node,
                        const std::unordered_set<std::string>& launches) {
  if (launches.empty() || (node.op() != "Identity" && node.op() != "IdentityN")) {
    return false;
  }
  int data_inputs = 0;
  for (const std::string& input : node.input()) {
    if (!input.empty() && input[0] == '^') continue;
    ++data_inputs;
    if (launches.count(input.substr(0, input.rfind(':'))) == 0) return false;
  }
  return data_inputs > 0;
}

std::vector<const OpSupport*> FindClusterableNodes(
    const tensorflow::GraphDef& graph, const SupportTable& table,
    const std::unordered_set<std::string>& fed_nodes,
    const std::unordered_map<std::string, std::string>& undecidable,
    std::vector<std::string>* reasons, const DevicePolicy& devices) {
  std::vector<const OpSupport*> result(graph.node_size(), nullptr);
  if (reasons != nullptr) reasons->assign(graph.node_size(), "");
  const std::unordered_set<std::string> launches = LaunchNodes(graph);
  const FunctionLookup functions = LibraryLookup(graph.library());
  for (int i = 0; i < graph.node_size(); ++i) {
    const tensorflow::NodeDef& node = graph.node(i);
    std::string why;
    if (IsKeptLaunchOutput(node, launches)) {
      why = Reason(kReasonLaunchOutput, node.name());
    } else {
      why = RejectReason(node, table, fed_nodes, undecidable, functions, devices, &result[i]);
    }
    if (reasons != nullptr) (*reasons)[i] = std::move(why);
  }
  return result;
}

std::vector<std::vector<int>> FormClusters(
    const GraphIndex& index, const std::vector<const OpSupport*>& clusterable,
    int min_cluster_size, std::vector<std::string>* reasons) {
  const tensorflow::GraphDef& graph = *index.graph;
  const int n = graph.node_size();
  std::vector<int> parent(n);
  for (int i = 0; i < n; ++i) parent[i] = i;

  ClusterGraph cluster_graph(index);

  auto compatible = [&](int a, int b) {
    const tensorflow::NodeDef& x = graph.node(a);
    const tensorflow::NodeDef& y = graph.node(b);
    return x.device() == y.device() && index.frame[a] == index.frame[b] &&
           index.deadness[a] == index.deadness[b];
  };

  for (int v : index.topo_order) {
    if (clusterable[v] == nullptr) continue;
    for (const GraphEdge& e : index.out_edges[v]) {
      if (e.back_edge || clusterable[e.dst] == nullptr) continue;
      int a = Find(parent, e.src), b = Find(parent, e.dst);
      if (a == b || !compatible(e.src, e.dst)) continue;
      if (!cluster_graph.TryContract(a, b)) continue;
      parent[b] = a;
    }
  }

  std::map<int, std::vector<int>> members;  // representative -> nodes
  for (int v : index.topo_order) {
    if (clusterable[v] != nullptr) members[Find(parent, v)].push_back(v);
  }
  std::vector<std::vector<int>> clusters;
  for (auto& kv : members) {
    if (static_cast<int>(kv.second.size()) >= min_cluster_size) {
      clusters.push_back(std::move(kv.second));
    } else if (reasons != nullptr) {
      for (int v : kv.second) {
        (*reasons)[v] = TooSmallReason(index, clusterable, v, kv.second.size(),
                                       min_cluster_size);
      }
    }
  }
  std::sort(clusters.begin(), clusters.end(),
            [&](const std::vector<int>& x, const std::vector<int>& y) {
              return index.topo_position[x[0]] < index.topo_position[y[0]];
            });
  return clusters;
}

}  // namespace tf_disc
