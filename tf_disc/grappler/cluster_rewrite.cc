#include "tf_disc/grappler/cluster_rewrite.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <map>
#include <unordered_map>
#include <utility>

#include "tensorflow/core/common_runtime/graph_constructor.h"
#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/function.pb.h"
#include "tensorflow/core/framework/graph_to_functiondef.h"
#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/graph/graph.h"
#include "tensorflow/core/lib/strings/proto_serialization.h"
#include "tensorflow/core/platform/fingerprint.h"
#include "tensorflow/core/platform/logging.h"
#include "tf_disc/grappler/device_policy.h"
#include "tf_disc/grappler/loop_support.h"
#include "tf_disc/grappler/static_facts.h"
#include "tf_disc/ops/cluster_functions.h"

namespace tf_disc {

const char kClusterFunctionPrefix[] = "disc_cluster_";

namespace {

using tensorflow::AttrValue;
using tensorflow::DataType;
using tensorflow::NodeDef;

struct TensorRef {
  int node;
  int port;
  bool operator<(const TensorRef& o) const {
    return node != o.node ? node < o.node : port < o.port;
  }
};

// Everything needed to emit one cluster.
struct ClusterPlan {
  std::vector<TensorRef> args;
  std::vector<DataType> arg_types;
  std::vector<int> control_inputs;     // external control predecessors
  std::vector<int> live_nodes;         // members whose names survive
  std::vector<TensorRef> results;
  std::vector<DataType> result_types;
  // Results of a loop with TensorList outputs (no replacement node: a list
  // never leaves the executable) that consumers outside read straight
  // from the launch: result index of each such (node, port).
  std::map<TensorRef, int> rewired;
  std::vector<int64_t> const_args;
  // The int32 args, in order: a GPU launch keeps them in host memory, as
  // TF does int32 tensors on GPUs.  They include every arg feeding a const
  // or value input there (clustering.cc keeps other types of those on a GPU
  // in TF).
  std::vector<int64_t> host_args;
  std::vector<int64_t> stable_args;    // float args straight from Const/ReadVariableOp
  bool float_fast_math = false;        // fast math may change a float32 member
  std::set<int> copied_consts;         // outside Consts copied into the body
  std::string function_name;
  std::string launch_name;
};

std::string TensorName(const std::string& node, int port) {
  return port == 0 ? node : node + ":" + std::to_string(port);
}

// Whether a fast-math op (a dot or a convolution) computes in float32
// (fast_math="bf16" changes only those): its type attr is float, or it has
// none (assume float).
bool HasFloatType(const NodeDef& node) {
  bool typed = false;
  for (const char* type_attr : {"T", "Ta", "Tb", "Tout"}) {
    auto it = node.attr().find(type_attr);
    if (it == node.attr().end()) continue;
    if (it->second.type() == tensorflow::DT_FLOAT) return true;
    typed = true;
  }
  return !typed;
}

absl::Status NodeTypes(const NodeDef& node, tensorflow::DataTypeVector* in,
                       tensorflow::DataTypeVector* out) {
  const tensorflow::OpDef* op_def = nullptr;
  absl::Status s =
      tensorflow::OpRegistry::Global()->LookUpOpDef(node.op(), &op_def);
  if (!s.ok()) return s;
  return tensorflow::InOutTypesForNode(node, *op_def, in, out);
}

// Small Consts (axes, indices, perms of shape arithmetic) that a cluster
// reads from outside are copied into its body instead of becoming inputs:
// the compiler then sees their values (Keras' tf.tensordot gathers shape
// dims at Const indices that Grappler shares between layers), and no other
// cluster has to export them.
constexpr int64_t kMaxCopiedConstElements = 64;

bool IsCopiableConst(const RewriteInput& in, int v) {
  const NodeDef& node = in.index->graph->node(v);
  if (node.op() != "Const" || node.input_size() != 0 || (*in.support)[v] == nullptr) {
    return false;
  }
  auto it = node.attr().find("value");
  if (it == node.attr().end()) return false;
  int64_t elements = 1;
  for (const auto& d : it->second.tensor().tensor_shape().dim()) elements *= d.size();
  return elements >= 0 && elements <= kMaxCopiedConstElements;
}

// Names referenced by `_class: loc:@name` colocation attrs of nodes outside
// clusters: those names must keep existing.
std::unordered_set<std::string> ColocationTargets(
    const tensorflow::GraphDef& graph, const std::vector<int>& cluster_of) {
  std::unordered_set<std::string> names;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (cluster_of[i] >= 0) continue;
    auto it = graph.node(i).attr().find("_class");
    if (it == graph.node(i).attr().end()) continue;
    for (const std::string& s : it->second.list().s()) {
      if (s.rfind("loc:@", 0) == 0) names.insert(s.substr(5));
    }
  }
  return names;
}

// Whether output `port` of `producer` is a buffer no op writes while
// DiscLaunch holds a reference to it (runtime/cpu/packed_weights.h): a Const's
// tensor, or a resource variable's value (updates copy a shared buffer
// first).  Not a TF1 ref variable (Assign writes in place regardless), nor
// anything computed or fed through an Identity.
bool IsStableSource(const NodeDef& producer) {
  return producer.op() == "Const" || producer.op() == "ReadVariableOp";
}

// Longest vector input the executable reads as run-time dims (compiler's
// frontend/lower.py MAX_VALUE_ELEMENTS): a proven scalar or short vector
// needs no cache-key value.
constexpr int64_t kMaxValueElements = 8;

bool ProvenSmallShape(const StaticDims& facts, const std::string& producer, int port) {
  auto it = facts.find(producer);
  if (it == facts.end() || port >= static_cast<int>(it->second.dims.size()) ||
      !it->second.known_rank[port]) {
    return false;
  }
  const std::vector<int64_t>& dims = it->second.dims[port];
  return dims.empty() || (dims.size() == 1 && dims[0] >= 0 && dims[0] <= kMaxValueElements);
}

absl::Status PlanCluster(const RewriteInput& in, int cluster_id,
                         const std::vector<int>& members,
                         const std::vector<int>& cluster_of,
                         const std::unordered_set<std::string>& coloc,
                         const StaticDims& facts, ClusterPlan* plan) {
  const GraphIndex& index = *in.index;
  const tensorflow::GraphDef& graph = *index.graph;
  std::map<TensorRef, int> arg_index;
  std::unordered_set<int> control_seen;
  std::set<int64_t> const_args;
  for (int v : members) {
    tensorflow::DataTypeVector in_types, out_types;
    absl::Status s = NodeTypes(graph.node(v), &in_types, &out_types);
    if (!s.ok()) return s;
    const OpSupport* support = (*in.support)[v];
    plan->float_fast_math = plan->float_fast_math ||
                            (support && support->fast_math && HasFloatType(graph.node(v)));
    for (const GraphEdge& e : index.in_edges[v]) {
      if (cluster_of[e.src] == cluster_id) continue;
      if (e.src_port < 0) {
        if (control_seen.insert(e.src).second) plan->control_inputs.push_back(e.src);
        continue;
      }
      if (IsCopiableConst(in, e.src)) {
        plan->copied_consts.insert(e.src);
        continue;
      }
      TensorRef ref{e.src, e.src_port};
      auto it = arg_index.find(ref);
      if (it == arg_index.end()) {
        it = arg_index.emplace(ref, static_cast<int>(plan->args.size())).first;
        plan->args.push_back(ref);
        plan->arg_types.push_back(tensorflow::BaseType(in_types[e.dst_port]));
        if (plan->arg_types.back() == tensorflow::DT_FLOAT && IsStableSource(graph.node(e.src))) {
          plan->stable_args.push_back(it->second);
        }
        if (plan->arg_types.back() == tensorflow::DT_INT32) {
          plan->host_args.push_back(it->second);
        }
      }
      if (support && (support->IsConstInput(e.dst_port, static_cast<int>(in_types.size())) ||
                      (support->value_inputs.count(e.dst_port) &&
                       !ProvenSmallShape(facts, graph.node(e.src).name(), e.src_port)))) {
        const_args.insert(it->second);
      }
    }
    bool live = in.keep_names->count(graph.node(v).name()) > 0 ||
                coloc.count(graph.node(v).name()) > 0;
    const bool copiable = IsCopiableConst(in, v);
    for (const GraphEdge& e : index.out_edges[v]) {
      // Other clusters copy a copiable Const (data edges only).
      const bool copied = copiable && e.src_port >= 0 && cluster_of[e.dst] >= 0;
      live = live || (cluster_of[e.dst] != cluster_id && !copied);
    }
    // A node with TensorList outputs (a loop) is kept alive by control edges
    // or its name only (a NoOp replacement): a list never leaves the
    // executable.  Its other outputs that are read outside come straight
    // from the launch (plan->rewired), as long as its name is not needed
    // for them (a fetch by name).
    const bool lists = std::count(out_types.begin(), out_types.end(), tensorflow::DT_VARIANT) > 0;
    if (live && lists) {
      const bool named = in.keep_names->count(graph.node(v).name()) > 0 ||
                         coloc.count(graph.node(v).name()) > 0;
      for (const GraphEdge& e : index.out_edges[v]) {
        if (e.src_port < 0 || cluster_of[e.dst] == cluster_id) continue;
        if (named || out_types[e.src_port] == tensorflow::DT_VARIANT) {
          return absl::FailedPreconditionError(
              "a loop's output leaves the cluster at " + graph.node(v).name() + " (output " +
              std::to_string(e.src_port) + " read by " + graph.node(e.dst).name() + ")");
        }
        const TensorRef ref{v, e.src_port};
        if (plan->rewired.count(ref)) continue;
        plan->rewired[ref] = static_cast<int>(plan->results.size());
        plan->results.push_back(ref);
        plan->result_types.push_back(tensorflow::BaseType(out_types[e.src_port]));
      }
      plan->live_nodes.push_back(v);
    } else if (live) {
      plan->live_nodes.push_back(v);
      for (int p = 0; p < static_cast<int>(out_types.size()); ++p) {
        plan->results.push_back({v, p});
        plan->result_types.push_back(tensorflow::BaseType(out_types[p]));
      }
    }
  }
  plan->const_args.assign(const_args.begin(), const_args.end());
  return absl::OkStatus();
}

// Records on `arg` the dims shape inference proved for `ref` (nothing when
// none is known): they are part of the function's content hash, so clusters
// differing only in static dims never share an executable.
void SetStaticDims(const StaticDims& facts, const std::string& producer, int port,
                   NodeDef* arg) {
  auto it = facts.find(producer);
  if (it == facts.end() || port >= static_cast<int>(it->second.dims.size()) ||
      !it->second.known_rank[port]) {
    return;
  }
  const std::vector<int64_t>& dims = it->second.dims[port];
  if (std::none_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; })) return;
  auto* list = (*arg->mutable_attr())[kStaticDimsAttr].mutable_list();
  for (int64_t d : dims) list->add_i(d);
}

// The function body as a GraphDef with _Arg/_Retval nodes.
tensorflow::GraphDef BuildBody(const GraphIndex& index,
                               const std::vector<int>& members,
                               const std::vector<int>& cluster_of,
                               int cluster_id, const ClusterPlan& plan,
                               const StaticDims& facts) {
  const tensorflow::GraphDef& graph = *index.graph;
  tensorflow::GraphDef body;
  *body.mutable_versions() = graph.versions();
  std::unordered_set<std::string> member_names;
  for (int v : members) member_names.insert(graph.node(v).name());
  for (int v : plan.copied_consts) member_names.insert(graph.node(v).name());
  auto unique = [&](std::string name) {
    while (member_names.count(name)) name += "_";
    return name;
  };
  std::map<TensorRef, std::string> arg_names;
  for (size_t i = 0; i < plan.args.size(); ++i) {
    NodeDef* arg = body.add_node();
    arg->set_name(unique("disc_arg_" + std::to_string(i)));
    arg->set_op("_Arg");
    (*arg->mutable_attr())["T"].set_type(plan.arg_types[i]);
    (*arg->mutable_attr())["index"].set_i(static_cast<int64_t>(i));
    SetStaticDims(facts, graph.node(plan.args[i].node).name(), plan.args[i].port, arg);
    arg_names[plan.args[i]] = arg->name();
  }
  auto copy_node = [&](const NodeDef& src) {
    NodeDef* node = body.add_node();
    node->set_name(src.name());
    node->set_op(src.op());
    // Attrs starting with "_" (colocation, shapes) are placement/debug data
    // of the outer graph; dropping them keeps the hash content-only.  Our
    // own "_disc_" attrs (static facts for the compiler) are content.
    for (const auto& kv : src.attr()) {
      if (!kv.first.empty() && (kv.first[0] != '_' || kv.first.rfind("_disc_", 0) == 0)) {
        (*node->mutable_attr())[kv.first] = kv.second;
      }
    }
    return node;
  };
  for (int v : plan.copied_consts) copy_node(graph.node(v));
  for (int v : members) {
    const NodeDef& src = graph.node(v);
    NodeDef* node = copy_node(src);
    int k = 0;
    for (const GraphEdge& e : index.in_edges[v]) {
      const std::string& input = src.input(k++);
      if (cluster_of[e.src] == cluster_id || plan.copied_consts.count(e.src)) {
        node->add_input(input);
      } else if (e.src_port >= 0) {
        node->add_input(arg_names[{e.src, e.src_port}]);
      }  // external control edges move to the DiscLaunch node
    }
  }
  for (size_t i = 0; i < plan.results.size(); ++i) {
    NodeDef* ret = body.add_node();
    ret->set_name(unique("disc_ret_" + std::to_string(i)));
    ret->set_op("_Retval");
    ret->add_input(TensorName(graph.node(plan.results[i].node).name(),
                              plan.results[i].port));
    (*ret->mutable_attr())["T"].set_type(plan.result_types[i]);
    (*ret->mutable_attr())["index"].set_i(static_cast<int64_t>(i));
  }
  return body;
}

absl::Status BuildFunction(const tensorflow::GraphDef& body,
                           const tensorflow::FunctionDefLibrary& library,
                           tensorflow::FunctionDef* fdef) {
  tensorflow::GraphConstructorOptions opts;
  opts.allow_internal_ops = true;
  tensorflow::Graph g(tensorflow::OpRegistry::Global());
  absl::Status s = tensorflow::ConvertGraphDefToGraph(opts, body, &g);
  if (!s.ok()) return s;
  s = tensorflow::GraphToFunctionDef(g, "", fdef);
  if (!s.ok()) return s;
  AttachNestedFunctions(library, fdef);  // the functions its control flow calls, for the compiler
  // Name = hash of the nameless, deterministically serialized function, so
  // identical clusters (e.g. per retrace) share one function and cache.
  fdef->mutable_signature()->set_name("");
  std::string bytes;
  if (!tensorflow::SerializeToStringDeterministic(*fdef, &bytes)) {
    return absl::InternalError("cannot serialize cluster function");
  }
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx",
           static_cast<unsigned long long>(tensorflow::Fingerprint64(bytes)));
  fdef->mutable_signature()->set_name(kClusterFunctionPrefix + std::string(hex));
  bytes.clear();
  if (!tensorflow::SerializeToStringDeterministic(*fdef, &bytes)) {
    return absl::InternalError("cannot serialize cluster function");
  }
  RegisterClusterFunction(fdef->signature().name(), std::move(bytes));
  return absl::OkStatus();
}

void SetTypeList(const std::vector<DataType>& types, AttrValue* attr) {
  auto* list = attr->mutable_list();
  for (DataType t : types) list->add_type(t);
}

NodeDef MakeLaunchNode(const tensorflow::GraphDef& graph,
                       const ClusterPlan& plan, const std::string& device) {
  NodeDef launch;
  launch.set_name(plan.launch_name);
  launch.set_op("DiscLaunch");
  launch.set_device(device);
  for (const TensorRef& a : plan.args) {
    launch.add_input(TensorName(graph.node(a.node).name(), a.port));
  }
  for (int c : plan.control_inputs) launch.add_input("^" + graph.node(c).name());
  auto& attr = *launch.mutable_attr();
  SetTypeList(plan.arg_types, &attr["Targs"]);
  SetTypeList(plan.result_types, &attr["Tresults"]);
  attr["f"].mutable_func()->set_name(plan.function_name);
  auto* consts = attr["const_args"].mutable_list();
  for (int64_t c : plan.const_args) consts->add_i(c);
  attr["fast_math_changes"].set_b(plan.float_fast_math);
  if (!plan.stable_args.empty()) {
    auto* stable = attr["stable_args"].mutable_list();
    for (int64_t s : plan.stable_args) stable->add_i(s);
  }
  if (KindOfDevice(device) == DeviceKind::kGpu) {
    // Read by TF's MemoryTypesForNode: these args and results are placed in
    // host memory (a CUDA library's int32 buffers, among them every const
    // and value input, live there; disc_abi.h).  A list attr per direction,
    // not .HostMemory("args"), which would pin the whole Targs list.
    auto* in = attr["_input_hostmem"].mutable_list();
    for (int64_t a : plan.host_args) in->add_i(a);
    auto* out = attr["_output_hostmem"].mutable_list();
    for (size_t r = 0; r < plan.result_types.size(); ++r) {
      if (plan.result_types[r] == tensorflow::DT_INT32) out->add_i(static_cast<int64_t>(r));
    }
  }
  return launch;
}

// Identity/IdentityN (or NoOp) named like `v`, fed by the launch's outputs.
NodeDef MakeReplacement(const tensorflow::GraphDef& graph, int v,
                        const ClusterPlan& plan) {
  const NodeDef& orig = graph.node(v);
  NodeDef node;
  node.set_name(orig.name());
  node.set_device(orig.device());
  std::vector<DataType> types;
  for (size_t i = 0; i < plan.results.size(); ++i) {
    if (plan.results[i].node != v || plan.rewired.count(plan.results[i])) continue;
    node.add_input(TensorName(plan.launch_name, static_cast<int>(i)));
    types.push_back(plan.result_types[i]);
  }
  if (types.empty()) {
    node.set_op("NoOp");
    node.add_input("^" + plan.launch_name);
  } else if (types.size() == 1) {
    node.set_op("Identity");
    (*node.mutable_attr())["T"].set_type(types[0]);
  } else {
    node.set_op("IdentityN");
    SetTypeList(types, &(*node.mutable_attr())["T"]);
  }
  return node;
}

// Points inputs that read a rewired loop result (ClusterPlan::rewired) at
// the launch's output instead.
void RewireLoopResults(const tensorflow::GraphDef& graph, const std::vector<ClusterPlan>& plans,
                       tensorflow::GraphDef* out) {
  std::unordered_map<std::string, std::string> to;
  for (const ClusterPlan& plan : plans) {
    if (plan.launch_name.empty()) continue;  // a skipped cluster
    for (const auto& kv : plan.rewired) {
      const std::string& name = graph.node(kv.first.node).name();
      const std::string launch = TensorName(plan.launch_name, kv.second);
      to[name + ":" + std::to_string(kv.first.port)] = launch;
      if (kv.first.port == 0) to[name] = launch;
    }
  }
  if (to.empty()) return;
  for (NodeDef& node : *out->mutable_node()) {
    for (std::string& input : *node.mutable_input()) {
      auto it = to.find(input);
      if (it != to.end()) input = it->second;
    }
  }
}

}  // namespace

absl::Status RewriteClusters(const RewriteInput& in, tensorflow::GraphDef* out,
                             int* rewritten) {
  const GraphIndex& index = *in.index;
  const tensorflow::GraphDef& graph = *index.graph;
  const auto& clusters = *in.clusters;
  std::vector<int> cluster_of(graph.node_size(), -1);
  for (size_t c = 0; c < clusters.size(); ++c) {
    for (int v : clusters[c]) cluster_of[v] = static_cast<int>(c);
  }
  std::unordered_set<std::string> coloc = ColocationTargets(graph, cluster_of);
  std::unordered_set<std::string> names(graph.node_size());
  for (const NodeDef& n : graph.node()) names.insert(n.name());
  std::unordered_set<std::string> library_names;
  for (const auto& f : graph.library().function()) {
    library_names.insert(f.signature().name());
  }

  *out->mutable_versions() = graph.versions();
  *out->mutable_library() = graph.library();
  const StaticDims& facts = *in.dims;
  std::vector<ClusterPlan> plans(clusters.size());
  std::vector<NodeDef> launches;
  *rewritten = 0;
  for (size_t c = 0; c < clusters.size(); ++c) {
    ClusterPlan& plan = plans[c];
    absl::Status s = PlanCluster(in, static_cast<int>(c), clusters[c],
                                 cluster_of, coloc, facts, &plan);
    tensorflow::FunctionDef fdef;
    if (s.ok()) {
      s = BuildFunction(BuildBody(index, clusters[c], cluster_of,
                                  static_cast<int>(c), plan, facts),
                        graph.library(), &fdef);
    }
    if (!s.ok()) {
      // Leave this cluster's nodes untouched in TF.
      VLOG(1) << "DiscOptimizer: skipping cluster at "
              << graph.node(clusters[c][0]).name() << ": " << s;
      for (int v : clusters[c]) cluster_of[v] = -1;
      continue;
    }
    plan.function_name = fdef.signature().name();
    if (library_names.insert(plan.function_name).second) {
      *out->mutable_library()->add_function() = std::move(fdef);
    }
    std::string base = graph.node(clusters[c][0]).name() + "/disc_launch";
    plan.launch_name = base;
    for (int k = 1; names.count(plan.launch_name); ++k) {
      plan.launch_name = base + "_" + std::to_string(k);
    }
    names.insert(plan.launch_name);
    launches.push_back(
        MakeLaunchNode(graph, plan, graph.node(clusters[c][0]).device()));
    ++*rewritten;
  }

  std::vector<bool> live(graph.node_size(), false);
  for (const ClusterPlan& plan : plans) {
    for (int v : plan.live_nodes) live[v] = true;
  }
  for (int v = 0; v < graph.node_size(); ++v) {
    int c = cluster_of[v];
    if (c < 0) {
      *out->add_node() = graph.node(v);
      continue;
    }
    if (live[v]) {
      *out->add_node() = MakeReplacement(graph, v, plans[c]);
    } else if (IsCopiableConst(in, v)) {
      // Copied by other clusters; still needed as is by a consumer whose
      // cluster was skipped after this one was planned.
      for (const GraphEdge& e : index.out_edges[v]) {
        if (cluster_of[e.dst] < 0) {
          *out->add_node() = graph.node(v);
          break;
        }
      }
    }
  }
  for (NodeDef& launch : launches) *out->add_node() = std::move(launch);
  RewireLoopResults(graph, plans, out);
  return absl::OkStatus();
}

}  // namespace tf_disc
