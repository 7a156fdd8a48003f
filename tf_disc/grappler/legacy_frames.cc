#include "tf_disc/grappler/legacy_frames.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tensorflow/compiler/tf2xla/functionalize_control_flow.h"
#include "tensorflow/core/common_runtime/graph_constructor.h"
#include "tensorflow/core/framework/function.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/graph/algorithm.h"
#include "tensorflow/core/graph/graph.h"
#include "tensorflow/core/platform/logging.h"
#include "tf_disc/grappler/clustering.h"
#include "tf_disc/grappler/control_flow_info.h"
#include "tf_disc/grappler/loop_support.h"

namespace tf_disc {
namespace {

// Rounds of functionalization: a produced While / If that loop_support.h
// refuses takes its group out and the next round starts from the input.
constexpr int kMaxRounds = 4;

// FunctionalizeControlFlow lives in libtensorflow_cc.so.2 (the XLA bridge),
// which TF's Python module and every C++ program running sessions load; the
// op library links only libtensorflow_framework.so.2, so it is looked up in
// the loaded library, by its mangled name.
using FunctionalizeFn = decltype(&tensorflow::FunctionalizeControlFlow);
constexpr char kFunctionalizeSymbol[] =
    "_ZN10tensorflow24FunctionalizeControlFlowEPNS_5GraphEPNS_25FunctionLibraryDefinition"
    "ERKSt8functionIFbPKNS_4NodeEEEb";

FunctionalizeFn LoadFunctionalize() {
  static const FunctionalizeFn fn = []() -> FunctionalizeFn {
    void* lib = dlopen("libtensorflow_cc.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return nullptr;
    return reinterpret_cast<FunctionalizeFn>(dlsym(lib, kFunctionalizeSymbol));
  }();
  return fn;
}

bool IsOneOf(const std::string& op, std::initializer_list<const char*> ops) {
  for (const char* o : ops) {
    if (op == o) return true;
  }
  return false;
}

bool IsFrameOp(const std::string& op) {
  return IsOneOf(op, {"Enter", "Exit", "Switch", "Merge", "NextIteration", "LoopCond"});
}

// Whether a TensorList of the functionalized loop `loop` comes from or goes
// to a frame left in TF (through Identity nodes): the optimizer could not
// cluster the loop (a list never crosses a cluster's boundary), and a
// functional loop run by TF misses the rewrites its frames get (oneDNN's).
bool ListsTouchFrames(const tensorflow::GraphDef& graph, const tensorflow::NodeDef& loop) {
  std::unordered_map<std::string, const tensorflow::NodeDef*> by_name;
  std::unordered_map<std::string, std::vector<const tensorflow::NodeDef*>> readers;
  for (const tensorflow::NodeDef& n : graph.node()) {
    by_name[n.name()] = &n;
    for (const std::string& in : n.input()) {
      if (in.empty() || in[0] == '^') continue;
      readers[in.substr(0, in.find(':'))].push_back(&n);
    }
  }
  const std::vector<tensorflow::DataType> types = TypesAttr(loop, "T");
  std::vector<const tensorflow::NodeDef*> stack;
  std::unordered_set<const tensorflow::NodeDef*> seen{&loop};
  for (size_t k = 0; k < types.size() && k < static_cast<size_t>(loop.input_size()); ++k) {
    if (types[k] != tensorflow::DT_VARIANT) continue;
    auto it = by_name.find(loop.input(k).substr(0, loop.input(k).find(':')));
    if (it != by_name.end() && seen.insert(it->second).second) stack.push_back(it->second);
  }
  if (std::count(types.begin(), types.end(), tensorflow::DT_VARIANT) > 0) {
    for (const tensorflow::NodeDef* r : readers[loop.name()]) {
      if (seen.insert(r).second) stack.push_back(r);
    }
  }
  while (!stack.empty()) {
    const tensorflow::NodeDef* n = stack.back();
    stack.pop_back();
    if (IsFrameOp(n->op())) return true;
    if (n->op() != "Identity" && n->op() != "IdentityN") continue;
    for (const std::string& in : n->input()) {
      auto it = by_name.find(in.substr(0, in.find(':')));
      if (!in.empty() && in[0] != '^' && it != by_name.end() && seen.insert(it->second).second) {
        stack.push_back(it->second);
      }
    }
    for (const tensorflow::NodeDef* r : readers[n->name()]) {
      if (seen.insert(r).second) stack.push_back(r);
    }
  }
  return false;
}

// Ops a functionalized body may hold besides clusterable ones: frame ops
// (they become the While / If) and plumbing that the bodies carry as is.
bool IsAdmittedPlumbing(const std::string& op) {
  return IsFrameOp(op) || IsOneOf(op, {"Identity", "IdentityN", "NoOp", "Const"});
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  }
  void Union(int a, int b) { parent[Find(a)] = Find(b); }
};

int DataInput(const GraphIndex& index, int v, int port) {
  for (const GraphEdge& e : index.in_edges[v]) {
    if (e.dst_port == port) return e.src;
  }
  return -1;
}

// Per node: its group's representative (see the header), -1 outside any.
std::vector<int> FindGroups(const tensorflow::GraphDef& graph, const GraphIndex& index) {
  const int n = graph.node_size();
  UnionFind uf(n);
  std::vector<int> member(n, 0);
  // Frame -> parent frame, from each frame's Enter nodes.
  std::map<int, int> parent_frame;
  for (int v = 0; v < n; ++v) {
    if (graph.node(v).op() != "Enter") continue;
    const int src = DataInput(index, v, 0);
    if (src >= 0) parent_frame[index.frame[v]] = index.frame[src];
  }
  auto top_frame = [&](int f) {
    for (int guard = 0; guard < n && f != 0; ++guard) {
      auto it = parent_frame.find(f);
      if (it == parent_frame.end() || it->second == 0) break;
      f = it->second;
    }
    return f;
  };
  std::map<int, int> frame_rep;  // top-level frame -> a node of it
  auto join_frame = [&](int v, int f) {
    auto it = frame_rep.emplace(top_frame(f), v).first;
    uf.Union(v, it->second);
    member[v] = 1;
  };
  // Top-level conditionals, by predicate tensor (node, port).
  std::map<std::pair<int, int>, int> cond_rep;
  for (int v = 0; v < n; ++v) {
    const std::string& op = graph.node(v).op();
    if (index.frame[v] != 0) {
      join_frame(v, index.frame[v]);
    } else if (op == "Exit") {
      const int src = DataInput(index, v, 0);
      if (src >= 0 && index.frame[src] != 0) join_frame(v, index.frame[src]);
    } else if (op == "Switch") {
      for (const GraphEdge& e : index.in_edges[v]) {
        if (e.dst_port != 1) continue;
        auto it = cond_rep.emplace(std::make_pair(e.src, e.src_port), v).first;
        uf.Union(v, it->second);
        member[v] = 1;
      }
    }
  }
  // A node whose liveness follows a top-level predicate, and a Merge fed by
  // one, belong to that conditional.
  auto join_signature = [&](int v, int signature) {
    for (const auto& entry : index.signatures[signature]) {
      auto it = cond_rep.find(std::make_pair(entry.first, entry.second / 2));
      if (it == cond_rep.end()) continue;
      uf.Union(v, it->second);
      member[v] = 1;
    }
  };
  for (int v = 0; v < n; ++v) {
    join_signature(v, index.deadness[v]);
    if (graph.node(v).op() != "Merge") continue;
    for (const GraphEdge& e : index.in_edges[v]) {
      if (e.dst_port >= 0) join_signature(v, index.deadness[e.src]);
    }
  }
  std::vector<int> group(n, -1);
  for (int v = 0; v < n; ++v) {
    if (member[v]) group[v] = uf.Find(v);
  }
  return group;
}

// Group representative -> "" when every op of it is admitted, else the first
// one that is not, with its reason.
std::map<int, std::string> JudgeGroups(const tensorflow::GraphDef& graph,
                                       const std::vector<int>& group,
                                       const std::vector<const OpSupport*>& clusterable,
                                       const std::vector<std::string>& reasons,
                                       const std::unordered_set<std::string>& fed_nodes) {
  std::map<int, std::string> verdict;
  for (int v = 0; v < graph.node_size(); ++v) {
    if (group[v] < 0) continue;
    std::string& why = verdict[group[v]];
    const tensorflow::NodeDef& node = graph.node(v);
    if (!why.empty()) continue;
    if (fed_nodes.count(node.name())) {
      why = node.name() + " (" + node.op() + ") is fed";
    } else if (clusterable[v] == nullptr && !IsAdmittedPlumbing(node.op())) {
      why = node.name() + " (" + node.op() + "): " + reasons[v];
    }
  }
  return verdict;
}

// The functionalization adds While / If nodes without a device; in a placed
// graph each takes the device of the LoopCond it replaces, else of its first
// placed input (TF's later passes need every node placed).
void PlaceNewNodes(const tensorflow::GraphDef& graph, tensorflow::Graph* g) {
  std::unordered_map<std::string, std::string> device;
  for (const tensorflow::NodeDef& node : graph.node()) device[node.name()] = node.device();
  for (tensorflow::Node* n : g->op_nodes()) {
    if (!n->requested_device().empty() || !n->assigned_device_name().empty()) continue;
    auto it = device.find(n->name());
    std::string placed = it != device.end() ? it->second : "";
    for (const tensorflow::Edge* e : n->in_edges()) {
      if (!placed.empty()) break;
      if (!e->src()->IsOp()) continue;
      placed = e->src()->assigned_device_name().empty() ? e->src()->requested_device()
                                                        : e->src()->assigned_device_name();
    }
    if (!placed.empty()) n->set_requested_device(placed);
  }
}

// FunctionalizeCond gives an If the output shapes it infers from its body,
// where a loop body's arguments carry no shapes: outputs come out unranked
// however the branches agree.  Such unranked entries are dropped (the attr
// is optional) in the functions the functionalization added; the compiler
// checks from the real argument ranks that the branches agree
// (compiler/ops/conditional.py).
void DropUnrankedIfShapes(const tensorflow::FunctionDefLibrary& before,
                          tensorflow::FunctionDefLibrary* library) {
  std::unordered_set<std::string> old;
  for (const tensorflow::FunctionDef& f : before.function()) old.insert(f.signature().name());
  for (tensorflow::FunctionDef& f : *library->mutable_function()) {
    if (old.count(f.signature().name())) continue;
    for (tensorflow::NodeDef& node : *f.mutable_node_def()) {
      if (node.op() != "If" && node.op() != "StatelessIf") continue;
      auto it = node.mutable_attr()->find("output_shapes");
      if (it == node.mutable_attr()->end()) continue;
      bool unranked = false;
      for (const auto& shape : it->second.list().shape()) unranked |= shape.unknown_rank();
      if (unranked) node.mutable_attr()->erase(it);
    }
  }
}

// Before the functionalization removes them: an Identity reading output 0
// of each Exit / Merge of `take` in keep_names (fetches name tf.while_loop's
// and tf.cond's results), named apart for now.  Returns (Identity, name).
std::vector<std::pair<tensorflow::Node*, std::string>> AddKeepers(
    const std::unordered_set<std::string>& take,
    const std::unordered_set<std::string>& keep_names, tensorflow::Graph* g) {
  std::vector<std::pair<tensorflow::Node*, std::string>> keepers;
  std::vector<tensorflow::Node*> kept;
  for (tensorflow::Node* n : g->op_nodes()) {
    if ((n->IsExit() || n->IsMerge()) && take.count(n->name()) && keep_names.count(n->name())) {
      kept.push_back(n);
    }
  }
  for (tensorflow::Node* n : kept) {
    tensorflow::NodeDef def;
    def.set_name(g->NewName(n->name() + "/disc_kept"));
    def.set_op("Identity");
    def.set_device(n->requested_device());
    (*def.mutable_attr())["T"].set_type(n->output_type(0));
    absl::Status s;
    tensorflow::Node* identity = g->AddNode(std::move(def), &s);
    if (!s.ok()) continue;
    identity->set_assigned_device_name(n->assigned_device_name());
    g->AddEdge(n, 0, identity, 0);
    keepers.emplace_back(identity, n->name());
  }
  return keepers;
}

// After it: each keeper whose node is gone takes its name; the others go.
void NameKeepers(const std::vector<std::pair<tensorflow::Node*, std::string>>& keepers,
                 tensorflow::Graph* g) {
  std::unordered_set<std::string> names;
  for (tensorflow::Node* n : g->op_nodes()) names.insert(n->name());
  for (const auto& [identity, name] : keepers) {
    if (names.count(name)) {
      g->RemoveNode(identity);
    } else {
      identity->set_name(name);
    }
  }
}

// One functionalization of `graph`'s groups that `take` admits, into *out.
absl::Status Functionalize(FunctionalizeFn functionalize, const tensorflow::GraphDef& graph,
                           const std::unordered_set<std::string>& take,
                           const std::unordered_set<std::string>& keep_names,
                           tensorflow::GraphDef* out) {
  tensorflow::FunctionLibraryDefinition flib(tensorflow::OpRegistry::Global(),
                                             graph.library());
  tensorflow::Graph g(flib);
  tensorflow::GraphConstructorOptions opts;
  opts.allow_internal_ops = true;
  TF_RETURN_IF_ERROR(tensorflow::ConvertGraphDefToGraph(opts, graph, &g));
  tensorflow::FixupSourceAndSinkEdges(&g);
  const tensorflow::NodeFilter filter = [&take](const tensorflow::Node* n) {
    return take.count(n->name()) > 0;
  };
  const auto keepers = AddKeepers(take, keep_names, &g);
  TF_RETURN_IF_ERROR(functionalize(&g, &flib, filter, /*include_functions=*/false));
  NameKeepers(keepers, &g);
  PlaceNewNodes(graph, &g);
  g.ToGraphDef(out);
  *out->mutable_library() = flib.ToProto();
  DropUnrankedIfShapes(graph.library(), out->mutable_library());
  return absl::OkStatus();
}

}  // namespace

bool HasLegacyFrames(const tensorflow::GraphDef& graph) {
  for (const tensorflow::NodeDef& node : graph.node()) {
    if (IsOneOf(node.op(), {"Switch", "Merge", "Enter"})) return true;
  }
  return false;
}

absl::Status FunctionalizeLegacyFrames(const SupportTable& table,
                                       const std::unordered_set<std::string>& fed_nodes,
                                       const std::unordered_set<std::string>& keep_names,
                                       const DevicePolicy& devices,
                                       const tensorflow::GraphDef& graph,
                                       tensorflow::GraphDef* out, LegacyFrames* result) {
  GraphIndex index;
  TF_RETURN_IF_ERROR(BuildGraphIndex(graph, &index));
  const std::vector<int> group = FindGroups(graph, index);
  std::vector<std::string> reasons;
  const std::vector<const OpSupport*> clusterable =
      FindClusterableNodes(graph, table, fed_nodes, {}, &reasons, devices);
  std::map<int, std::string> verdict = JudgeGroups(graph, group, clusterable, reasons, fed_nodes);
  const FunctionalizeFn functionalize = LoadFunctionalize();
  if (functionalize == nullptr) {
    for (auto& kv : verdict) {
      if (kv.second.empty()) kv.second = "TF's FunctionalizeControlFlow is not loaded";
    }
  }
  // Produced While nodes take their LoopCond's name; If nodes read their
  // conditional's predicate: either names the group it came from.
  std::unordered_map<std::string, int> group_by_name;
  for (int v = 0; v < graph.node_size(); ++v) {
    if (group[v] >= 0) group_by_name[graph.node(v).name()] = group[v];
  }
  for (int v = 0; v < graph.node_size(); ++v) {
    if (graph.node(v).op() != "Switch" || index.frame[v] != 0) continue;
    const int pred = DataInput(index, v, 1);
    if (pred >= 0) group_by_name.emplace(graph.node(pred).name(), group[v]);
  }
  std::unordered_map<std::string, std::string> original;  // name -> op
  for (const tensorflow::NodeDef& node : graph.node()) original[node.name()] = node.op();
  for (int round = 0; round < kMaxRounds; ++round) {
    std::unordered_set<std::string> take;
    for (int v = 0; v < graph.node_size(); ++v) {
      if (group[v] >= 0 && verdict[group[v]].empty()) take.insert(graph.node(v).name());
    }
    if (take.empty()) break;
    tensorflow::GraphDef candidate;
    absl::Status s = Functionalize(functionalize, graph, take, keep_names, &candidate);
    if (!s.ok()) {
      VLOG(1) << "DiscOptimizer: cannot functionalize legacy control flow: " << s;
      for (auto& kv : verdict) {
        if (kv.second.empty()) kv.second = "TF cannot functionalize it: " + std::string(s.message());
      }
      break;
    }
    const FunctionLookup lookup = LibraryLookup(candidate.library());
    int produced = 0;
    bool refused = false;
    for (const tensorflow::NodeDef& node : candidate.node()) {
      auto was = original.find(node.name());
      if (!IsFunctionalControlFlow(node.op()) || (was != original.end() && was->second == node.op())) {
        continue;
      }
      ++produced;
      std::string why = ControlFlowRejectReason(node, lookup, table);
      if (why.empty() && node.op() == "While" && ListsTouchFrames(candidate, node)) {
        why = "its TensorLists come from or go to a loop left in TF";
      }
      if (why.empty()) continue;
      const std::string& key = node.op() == "While" ? node.name() : node.input(0);
      auto it = group_by_name.find(key.substr(0, key.find(':')));
      refused = true;
      const std::string reason = "functionalized " + node.op() + " not compilable: " + why;
      if (it != group_by_name.end()) {
        verdict[it->second] = reason;
      } else {
        for (auto& kv : verdict) {
          if (kv.second.empty()) kv.second = reason;
        }
      }
    }
    if (!refused) {
      *out = std::move(candidate);
      result->functionalized = produced;
      break;
    }
  }
  for (int v = 0; v < graph.node_size(); ++v) {
    if (group[v] < 0 || !IsFrameOp(graph.node(v).op())) continue;
    const std::string& why = verdict[group[v]];
    if (!why.empty()) result->kept[graph.node(v).name()] = why;
  }
  for (const auto& kv : result->kept) {
    VLOG(2) << "DiscOptimizer: legacy frame op " << kv.first << " stays in TF: " << kv.second;
  }
  VLOG(1) << "DiscOptimizer: functionalized " << result->functionalized
          << " legacy loop(s)/conditional(s)";
  return absl::OkStatus();
}

}  // namespace tf_disc
