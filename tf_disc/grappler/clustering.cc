#include "tf_disc/grappler/clustering.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_set>

#include "absl/synchronization/internal/graphcycles.h"
#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/platform/logging.h"
#include "tensorflow/core/util/device_name_utils.h"

namespace tf_disc {
namespace {

using GraphCycles = absl::synchronization_internal::GraphCycles;
using GraphId = absl::synchronization_internal::GraphId;

bool IsCpuDevice(const std::string& device) {
  if (device.empty()) return true;
  tensorflow::DeviceNameUtils::ParsedName parsed;
  if (!tensorflow::DeviceNameUtils::ParseFullName(device, &parsed)) {
    return false;
  }
  return !parsed.has_type || parsed.type == "CPU";
}

bool HasUnsupportedType(const tensorflow::DataTypeVector& types) {
  for (tensorflow::DataType t : types) {
    if (tensorflow::IsRefType(t) || t == tensorflow::DT_RESOURCE ||
        t == tensorflow::DT_VARIANT) {
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

void* Ptr(int cluster) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(cluster) + 1);
}

}  // namespace

std::vector<const OpSupport*> FindClusterableNodes(
    const tensorflow::GraphDef& graph, const SupportTable& table,
    const std::unordered_set<std::string>& fed_nodes) {
  std::vector<const OpSupport*> result(graph.node_size(), nullptr);
  for (int i = 0; i < graph.node_size(); ++i) {
    const tensorflow::NodeDef& node = graph.node(i);
    if (!table.HasOp(node.op())) continue;
    if (fed_nodes.count(node.name()) || !IsCpuDevice(node.device())) continue;
    const tensorflow::OpDef* op_def = nullptr;
    if (!tensorflow::OpRegistry::Global()->LookUpOpDef(node.op(), &op_def).ok()) {
      continue;  // a library function call: never clustered
    }
    if (op_def->is_stateful()) continue;
    tensorflow::DataTypeVector in, out;
    if (!tensorflow::InOutTypesForNode(node, *op_def, &in, &out).ok()) continue;
    if (HasUnsupportedType(in) || HasUnsupportedType(out)) continue;
    result[i] = table.Match(node, *op_def);
  }
  return result;
}

std::vector<std::vector<int>> FormClusters(
    const GraphIndex& index, const std::vector<const OpSupport*>& clusterable,
    int min_cluster_size) {
  const tensorflow::GraphDef& graph = *index.graph;
  const int n = graph.node_size();
  std::vector<int> parent(n);
  for (int i = 0; i < n; ++i) parent[i] = i;

  // Cluster-level DAG: our own successor/predecessor sets (to move edges on
  // contraction) mirrored in GraphCycles (incremental topological order, so
  // reachability queries stay local).
  GraphCycles cycles;
  std::vector<std::unordered_set<int>> succ(n), pred(n);
  std::vector<GraphId> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = cycles.GetId(Ptr(i));
  for (int v = 0; v < n; ++v) {
    for (const GraphEdge& e : index.out_edges[v]) {
      if (e.back_edge || e.src == e.dst) continue;
      if (succ[e.src].insert(e.dst).second) {
        pred[e.dst].insert(e.src);
        if (!cycles.InsertEdge(ids[e.src], ids[e.dst])) {
          LOG(WARNING) << "DiscOptimizer: unexpected cycle; not clustering";
          return {};
        }
      }
    }
  }

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
      // Contract a -> b only when no other path leads from a to b.
      cycles.RemoveEdge(ids[a], ids[b]);
      if (cycles.IsReachable(ids[a], ids[b])) {
        cycles.InsertEdge(ids[a], ids[b]);
        continue;
      }
      succ[a].erase(b);
      pred[b].erase(a);
      for (int s : succ[b]) {
        pred[s].erase(b);
        pred[s].insert(a);
        succ[a].insert(s);
        cycles.InsertEdge(ids[a], ids[s]);
      }
      for (int p : pred[b]) {
        succ[p].erase(b);
        succ[p].insert(a);
        pred[a].insert(p);
        cycles.InsertEdge(ids[p], ids[a]);
      }
      succ[b].clear();
      pred[b].clear();
      cycles.RemoveNode(Ptr(b));
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
    }
  }
  std::sort(clusters.begin(), clusters.end(),
            [&](const std::vector<int>& x, const std::vector<int>& y) {
              return index.topo_position[x[0]] < index.topo_position[y[0]];
            });
  return clusters;
}

}  // namespace tf_disc
