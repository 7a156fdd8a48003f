#include "tf_disc/grappler/control_flow_info.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

namespace tf_disc {
namespace {

// Sorted (predicate node, predicate port * 2 + Switch output port) pairs.
using Signature = std::vector<std::pair<int, int>>;

bool IsOp(const tensorflow::NodeDef& n, const char* a, const char* b) {
  return n.op() == a || n.op() == b;
}
bool IsSwitch(const tensorflow::NodeDef& n) { return IsOp(n, "Switch", "RefSwitch"); }
bool IsMerge(const tensorflow::NodeDef& n) { return IsOp(n, "Merge", "RefMerge"); }
bool IsEnter(const tensorflow::NodeDef& n) { return IsOp(n, "Enter", "RefEnter"); }
bool IsExit(const tensorflow::NodeDef& n) { return IsOp(n, "Exit", "RefExit"); }
bool IsNextIteration(const tensorflow::NodeDef& n) {
  return IsOp(n, "NextIteration", "RefNextIteration");
}

// Splits "name:port" / "^name" / "name".
void ParseInput(const std::string& input, absl::string_view* name, int* port) {
  absl::string_view s(input);
  if (!s.empty() && s[0] == '^') {
    *name = s.substr(1);
    *port = -1;
    return;
  }
  *port = 0;
  size_t colon = s.rfind(':');
  int p;
  if (colon != absl::string_view::npos &&
      absl::SimpleAtoi(s.substr(colon + 1), &p)) {
    *name = s.substr(0, colon);
    *port = p;
  } else {
    *name = s;
  }
}

absl::Status BuildEdges(const tensorflow::GraphDef& graph, GraphIndex* index) {
  const int n = graph.node_size();
  index->in_edges.assign(n, {});
  index->out_edges.assign(n, {});
  for (int i = 0; i < n; ++i) {
    const tensorflow::NodeDef& node = graph.node(i);
    int data_port = 0;
    for (const std::string& input : node.input()) {
      absl::string_view name;
      int port;
      ParseInput(input, &name, &port);
      auto it = index->node_index.find(std::string(name));
      if (it == index->node_index.end()) {
        return absl::InvalidArgumentError("unknown input " + input + " of " +
                                          node.name());
      }
      GraphEdge e{it->second, port, i, port < 0 ? -1 : data_port++, false};
      e.back_edge = IsNextIteration(graph.node(e.src));
      index->in_edges[i].push_back(e);
      index->out_edges[e.src].push_back(e);
    }
  }
  return absl::OkStatus();
}

absl::Status TopoSort(GraphIndex* index) {
  const int n = static_cast<int>(index->in_edges.size());
  std::vector<int> pending(n, 0);
  std::vector<int> ready;
  for (int i = 0; i < n; ++i) {
    for (const GraphEdge& e : index->in_edges[i]) pending[i] += !e.back_edge;
    if (pending[i] == 0) ready.push_back(i);
  }
  // Process in ascending node order for determinism.
  std::reverse(ready.begin(), ready.end());
  index->topo_order.clear();
  while (!ready.empty()) {
    int v = ready.back();
    ready.pop_back();
    index->topo_order.push_back(v);
    for (const GraphEdge& e : index->out_edges[v]) {
      if (!e.back_edge && --pending[e.dst] == 0) ready.push_back(e.dst);
    }
  }
  if (static_cast<int>(index->topo_order.size()) != n) {
    return absl::InvalidArgumentError("graph has a cycle outside while loops");
  }
  index->topo_position.assign(n, 0);
  for (int i = 0; i < n; ++i) index->topo_position[index->topo_order[i]] = i;
  return absl::OkStatus();
}

void ComputeFrames(const tensorflow::GraphDef& graph, GraphIndex* index) {
  std::vector<int> parent = {0};  // frame id -> parent frame id
  std::map<std::pair<int, std::string>, int> frame_ids;
  index->frame.assign(graph.node_size(), 0);
  for (int v : index->topo_order) {
    const tensorflow::NodeDef& node = graph.node(v);
    // The frame of the first data input (else the first input) is the node's.
    int input_frame = 0;
    bool found = false;
    for (const GraphEdge& e : index->in_edges[v]) {
      if (e.back_edge) continue;
      if (e.src_port >= 0 || !found) input_frame = index->frame[e.src];
      if (e.src_port >= 0) break;
      found = true;
    }
    int f = input_frame;
    if (IsEnter(node)) {
      auto it = node.attr().find("frame_name");
      std::string name = it == node.attr().end() ? "" : it->second.s();
      auto key = std::make_pair(input_frame, name);
      auto fit = frame_ids.find(key);
      if (fit == frame_ids.end()) {
        fit = frame_ids.emplace(key, static_cast<int>(parent.size())).first;
        parent.push_back(input_frame);
      }
      f = fit->second;
    } else if (IsExit(node)) {
      f = parent[input_frame];
    }
    index->frame[v] = f;
  }
}

void ComputeDeadness(const tensorflow::GraphDef& graph, GraphIndex* index) {
  std::map<Signature, int> ids;
  std::vector<const Signature*> by_id;
  auto intern = [&](Signature s) {
    auto it = ids.emplace(std::move(s), static_cast<int>(by_id.size())).first;
    if (it->second == static_cast<int>(by_id.size())) by_id.push_back(&it->first);
    return it->second;
  };
  intern(Signature());  // id 0: always live
  index->deadness.assign(graph.node_size(), 0);
  for (int v : index->topo_order) {
    const tensorflow::NodeDef& node = graph.node(v);
    const bool merge = IsMerge(node);
    Signature acc;
    bool first = true;
    for (const GraphEdge& e : index->in_edges[v]) {
      if (e.back_edge) continue;
      if (merge && e.dst_port < 0) continue;  // Merge ignores control deadness
      Signature s = *by_id[index->deadness[e.src]];
      if (IsSwitch(graph.node(e.src)) && e.src_port >= 0) {
        // Keyed by the predicate tensor, not the Switch node: switches on one
        // predicate kill the same port together.  (A Switch's control output
        // is live whenever the Switch ran.)
        const GraphEdge* pred = nullptr;
        for (const GraphEdge& in : index->in_edges[e.src]) {
          if (in.dst_port == 1) pred = &in;
        }
        if (pred != nullptr) {
          s.emplace_back(pred->src, pred->src_port * 2 + e.src_port);
        } else {
          s.emplace_back(-1 - e.src, e.src_port);  // malformed: unique key
        }
        std::sort(s.begin(), s.end());
        s.erase(std::unique(s.begin(), s.end()), s.end());
      }
      Signature out;
      if (first) {
        out = std::move(s);
      } else if (merge) {
        std::set_intersection(acc.begin(), acc.end(), s.begin(), s.end(),
                              std::back_inserter(out));
      } else {
        std::set_union(acc.begin(), acc.end(), s.begin(), s.end(),
                       std::back_inserter(out));
      }
      acc = std::move(out);
      first = false;
    }
    index->deadness[v] = intern(std::move(acc));
  }
  index->signatures.clear();
  for (const Signature* s : by_id) index->signatures.push_back(*s);
}

}  // namespace

absl::Status BuildGraphIndex(const tensorflow::GraphDef& graph,
                             GraphIndex* index) {
  index->graph = &graph;
  index->node_index.clear();
  index->node_index.reserve(graph.node_size());
  for (int i = 0; i < graph.node_size(); ++i) {
    if (!index->node_index.emplace(graph.node(i).name(), i).second) {
      return absl::InvalidArgumentError("duplicate node " + graph.node(i).name());
    }
  }
  absl::Status s = BuildEdges(graph, index);
  if (!s.ok()) return s;
  s = TopoSort(index);
  if (!s.ok()) return s;
  ComputeFrames(graph, index);
  ComputeDeadness(graph, index);
  return absl::OkStatus();
}

}  // namespace tf_disc
