#include "tf_disc/grappler/call_inlining.h"

#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tensorflow/core/common_runtime/function_body.h"
#include "tensorflow/core/common_runtime/function_def_utils.h"
#include "tensorflow/core/common_runtime/function_utils.h"
#include "tensorflow/core/common_runtime/graph_constructor.h"
#include "tensorflow/core/common_runtime/inline_function_utils.h"
#include "tensorflow/core/framework/function.h"
#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/graph/graph.h"
#include "tensorflow/core/platform/logging.h"
#include "tensorflow/core/util/device_name_utils.h"
#include "tf_disc/grappler/clustering.h"

namespace tf_disc {
namespace {

// Nested calls deeper than this are left alone (and so is recursion).
constexpr int kMaxCallDepth = 16;

bool IsMultiDeviceCall(const std::string& op) {
  return op == "PartitionedCall" || op == "StatefulPartitionedCall";
}

// Ops of a body that may stay in TF without keeping the call: they run the
// same inlined as they do outside a call (argument plumbing, variable reads
// feeding the cluster like any layer's weights).
bool IsPlumbing(const std::string& op) {
  return IsNonComputeOp(op) || op == "Identity" || op == "IdentityN" ||
         op == "ReadVariableOp";
}

// Decides per function instantiation whether its body is compilable.
class BodyJudge {
 public:
  BodyJudge(const SupportTable& table, const tensorflow::FunctionLibraryDefinition& flib,
            bool like_runtime)
      : table_(table), flib_(flib), like_runtime_(like_runtime) {}

  // "" when the call may be inlined, else why not.  top: a call in the
  // graph (not in a body being judged), which like_runtime lets in when
  // TF's runtime would inline it.
  std::string Obstacle(const tensorflow::NodeDef& call, int depth = 0, bool top = false) {
    tensorflow::NameAttrList func;
    if (!tensorflow::NameAndAttrsFromFunctionCall(call, &func).ok()) {
      return "no function attr";
    }
    if (top && like_runtime_ && RuntimeInlines(call, func.name())) return "";
    const std::string key =
        tensorflow::Canonicalize(func.name(), tensorflow::AttrSlice(&func.attr()));
    auto it = verdicts_.find(key);
    if (it != verdicts_.end()) return it->second;
    if (!in_progress_.insert(key).second) return func.name() + ": recursive";
    std::string why = Judge(func, depth);
    in_progress_.erase(key);
    verdicts_.emplace(key, why);
    return why;
  }

 private:
  std::string Judge(const tensorflow::NameAttrList& func, int depth) {
    const std::string& name = func.name();
    if (depth >= kMaxCallDepth) return name + ": calls nested too deep";
    const tensorflow::FunctionDef* fdef = flib_.Find(name);
    if (fdef == nullptr) return name + ": not in the function library";
    // Keras picks one of several implementations (api_implements) at run
    // time through Grappler's implementation selector: left to it.
    if (fdef->attr().count("api_implements")) {
      return name + ": one of an implementation selection group (api_implements)";
    }
    std::unique_ptr<tensorflow::FunctionBody> fbody;
    absl::Status s = tensorflow::FunctionDefToBodyHelper(
        *fdef, tensorflow::AttrSlice(&func.attr()), &flib_, &fbody);
    if (!s.ok()) return name + ": cannot instantiate: " + std::string(s.message());
    tensorflow::GraphDef body;
    fbody->graph->ToGraphDef(&body);
    std::vector<std::string> reasons;
    std::vector<const OpSupport*> ok = FindClusterableNodes(body, table_, {}, {}, &reasons);
    for (int i = 0; i < body.node_size(); ++i) {
      const tensorflow::NodeDef& node = body.node(i);
      if (ok[i] != nullptr || IsPlumbing(node.op())) continue;
      if (IsMultiDeviceCall(node.op()) || flib_.Find(node.op()) != nullptr) {
        std::string nested = Obstacle(node, depth + 1);
        if (nested.empty()) continue;
        return name + ": calls " + nested;
      }
      return name + ": " + node.name() + " (" + node.op() + "): " + reasons[i];
    }
    return "";
  }

  // What TF's runtime inliner (ValidateInlining, LowerFunctionalOpsPass)
  // leaves alone: _noinline and implementation-selection functions, calls
  // XLA must compile.
  bool RuntimeInlines(const tensorflow::NodeDef& call, const std::string& name) const {
    const tensorflow::FunctionDef* fdef = flib_.Find(name);
    if (fdef == nullptr) return false;
    for (const char* attr : {"_noinline", "_XlaMustCompile"}) {
      auto it = fdef->attr().find(attr);
      if (it != fdef->attr().end() && it->second.b()) return false;
    }
    auto it = call.attr().find("_XlaMustCompile");
    if (it != call.attr().end() && it->second.b()) return false;
    return fdef->attr().count("api_implements") == 0;
  }

  const SupportTable& table_;
  const tensorflow::FunctionLibraryDefinition& flib_;
  const bool like_runtime_;
  std::unordered_map<std::string, std::string> verdicts_;
  std::unordered_set<std::string> in_progress_;
};

bool IsCallType(const tensorflow::FunctionLibraryDefinition& flib, const std::string& op) {
  return IsMultiDeviceCall(op) || flib.Find(op) != nullptr;
}

// Calls placed on another device than the CPU keep running there (the
// inlined body would take the caller's device and stay out of clusters).
bool OnCpu(const std::string& device) {
  tensorflow::DeviceNameUtils::ParsedName parsed;
  if (device.empty()) return true;
  if (!tensorflow::DeviceNameUtils::ParseFullName(device, &parsed)) return false;
  return !parsed.has_type || parsed.type == "CPU";
}

// Grappler's function optimizer's options for this caller
// (function_optimizer.cc), with _noinline overridden: the judge let it in.
tensorflow::InlineFunctionBodyOptions OptionsFor(const tensorflow::Node& caller,
                                                 bool keep_name) {
  using Options = tensorflow::InlineFunctionBodyOptions;
  Options options;
  options.ignore_noinline = true;
  options.keep_caller_node =
      keep_name ? Options::KeepCallerNode::kFetchable : Options::KeepCallerNode::kDoNotKeep;
  if (IsMultiDeviceCall(caller.type_string())) {
    options.output_control_src = Options::OutputControlSource::kControlOutputs;
    options.inlined_function_body_placer = tensorflow::InlinedFunctionBodyPlacer::MultiDevice();
  } else {
    options.output_control_src = Options::OutputControlSource::kDataOutputs;
    options.inlined_function_body_placer = tensorflow::InlinedFunctionBodyPlacer::Default();
  }
  return options;
}

// Inlines one call in g.  Nodes it adds without a device (the placer leaves
// output identities and bodies of unplaced callers unset) get the caller's,
// so that in a placed graph they may share a cluster with their neighbours.
absl::Status InlineOne(const tensorflow::FunctionLibraryDefinition& flib,
                       tensorflow::Graph* g, tensorflow::Node* caller, bool keep_name) {
  tensorflow::NameAttrList func;
  TF_RETURN_IF_ERROR(tensorflow::NameAndAttrsFromFunctionCall(caller->def(), &func));
  const tensorflow::FunctionDef* fdef = flib.Find(func.name());
  if (fdef == nullptr) return absl::NotFoundError(func.name() + " not in the library");
  std::unique_ptr<tensorflow::FunctionBody> fbody;
  TF_RETURN_IF_ERROR(tensorflow::FunctionDefToBodyHelper(
      *fdef, tensorflow::AttrSlice(&func.attr()), &flib, &fbody));
  const tensorflow::InlineFunctionBodyOptions options = OptionsFor(*caller, keep_name);
  TF_RETURN_IF_ERROR(tensorflow::ValidateInlining(caller, fbody.get(), options));
  const std::string device = caller->requested_device();
  const int first_new_id = g->num_node_ids();
  TF_RETURN_IF_ERROR(tensorflow::InlineFunctionBody(flib, g, caller, fbody.get(), options));
  if (!device.empty()) {
    for (int id = first_new_id; id < g->num_node_ids(); ++id) {
      tensorflow::Node* n = g->FindNodeId(id);
      if (n != nullptr && n->requested_device().empty()) n->set_requested_device(device);
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool HasFunctionCalls(const tensorflow::GraphDef& graph) {
  std::unordered_set<std::string> functions;
  for (const auto& f : graph.library().function()) functions.insert(f.signature().name());
  for (const tensorflow::NodeDef& node : graph.node()) {
    if (IsMultiDeviceCall(node.op()) || functions.count(node.op())) return true;
  }
  return false;
}

absl::Status InlineCompilableCalls(const SupportTable& table,
                                   const CallInliningOptions& options,
                                   const tensorflow::GraphDef& graph,
                                   tensorflow::GraphDef* inlined, CallInlining* result) {
  tensorflow::FunctionLibraryDefinition flib(tensorflow::OpRegistry::Global(),
                                             graph.library());
  BodyJudge judge(table, flib, options.like_runtime);
  std::unordered_set<std::string> chosen;
  for (const tensorflow::NodeDef& node : graph.node()) {
    if (!IsCallType(flib, node.op())) continue;
    std::string why = OnCpu(node.device()) ? judge.Obstacle(node, 0, /*top=*/true)
                                           : "on device " + node.device();
    if (why.empty()) {
      chosen.insert(node.name());
    } else {
      result->kept[node.name()] = std::move(why);
    }
  }
  if (chosen.empty()) return absl::OkStatus();

  tensorflow::Graph g(flib);
  tensorflow::GraphConstructorOptions opts;
  opts.allow_internal_ops = true;  // _Arg, _Retval of function graphs
  TF_RETURN_IF_ERROR(tensorflow::ConvertGraphDefToGraph(opts, graph, &g));
  // Calls inside inlined bodies (the judge let them in with their caller)
  // are inlined in the next round; the judge bounds their depth.
  int count = 0;
  int round_start = 0;  // node ids below this existed before the round
  for (int round = 0; round <= kMaxCallDepth; ++round) {
    std::vector<tensorflow::Node*> calls;
    for (tensorflow::Node* n : g.op_nodes()) {
      if (round == 0 ? chosen.count(n->name()) > 0
                     : n->id() >= round_start && IsCallType(flib, n->type_string())) {
        calls.push_back(n);
      }
    }
    if (calls.empty()) break;
    round_start = g.num_node_ids();
    for (tensorflow::Node* n : calls) {
      const std::string name = n->name();
      std::string why = round == 0 ? "" : judge.Obstacle(n->def(), 0, /*top=*/true);
      absl::Status s = why.empty()
          ? InlineOne(flib, &g, n, round == 0 && options.keep_names.count(name) > 0)
          : absl::FailedPreconditionError(why);
      if (s.ok()) {
        ++count;
      } else {
        VLOG(1) << "DiscOptimizer: call " << name << " not inlined: " << s;
        result->kept[name] = why.empty() ? "not inlinable: " + std::string(s.message()) : why;
      }
    }
  }
  if (count == 0) return absl::OkStatus();
  g.ToGraphDef(inlined);
  result->inlined = count;
  VLOG(1) << "DiscOptimizer: inlined " << count << " function call(s), "
          << result->kept.size() << " kept";
  return absl::OkStatus();
}

}  // namespace tf_disc
