#include "tf_disc/grappler/disc_optimizer.h"

#include <chrono>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "tensorflow/core/grappler/grappler_item.h"
#include "tensorflow/core/grappler/optimizers/custom_graph_optimizer_registry.h"
#include "tensorflow/core/platform/env.h"
#include "tensorflow/core/platform/logging.h"
#include "tensorflow/core/protobuf/rewriter_config.pb.h"
#include "tf_disc/grappler/analysis.h"
#include "tf_disc/grappler/call_inlining.h"
#include "tf_disc/grappler/cluster_rewrite.h"
#include "tf_disc/grappler/clustering.h"
#include "tf_disc/grappler/defuse.h"
#include "tf_disc/grappler/legacy_frames.h"
#include "tf_disc/grappler/support_table.h"
#include "tf_disc/ops/options.h"
#include "tf_disc/ops/stats.h"

namespace tf_disc {
namespace {

// The cluster functions the graph's DiscLaunch nodes call.  Only its own
// nodes: the bodies of functions it calls are Grappler items of their own,
// recorded under their own ids.
std::vector<std::string> LaunchedFunctions(const tensorflow::GraphDef& graph) {
  std::vector<std::string> out;
  for (const tensorflow::NodeDef& n : graph.node()) {
    if (n.op() != "DiscLaunch") continue;
    auto f = n.attr().find("f");
    if (f != n.attr().end()) out.push_back(f->second.func().name());
  }
  return out;
}

absl::Status NothingToDo(const char* why) {
  // Grappler reads Aborted as "graph unchanged".
  return absl::AbortedError(std::string("DiscOptimizer: ") + why);
}

void Dump(const std::string& dump_dir, const std::string& id,
          const char* suffix, const tensorflow::GraphDef& graph) {
  std::string name = id.empty() ? "graph" : id;
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  }
  std::string dir = dump_dir + "/grappler";
  tensorflow::Env* env = tensorflow::Env::Default();
  absl::Status s = env->RecursivelyCreateDir(dir);
  if (s.ok()) {
    s = tensorflow::WriteTextProto(env, dir + "/" + name + "_" + suffix + ".pbtxt",
                                   graph);
  }
  if (!s.ok()) LOG(WARNING) << "DiscOptimizer: cannot dump graph: " << s;
}

// Node names of feeds ("x:0" -> "x").
std::unordered_set<std::string> FedNodes(
    const tensorflow::grappler::GrapplerItem& item) {
  std::unordered_set<std::string> fed;
  for (const auto& feed : item.feed) {
    std::string name = feed.first;
    if (!name.empty() && name[0] == '^') name = name.substr(1);
    size_t colon = name.rfind(':');
    if (colon != std::string::npos) name = name.substr(0, colon);
    fed.insert(name);
  }
  return fed;
}

std::unordered_set<std::string> KeepNames(
    const tensorflow::grappler::GrapplerItem& item) {
  std::unordered_set<std::string> keep = item.NodesToPreserve();
  for (const std::string& f : item.fetch) {
    std::string name = f;
    size_t colon = name.rfind(':');
    if (colon != std::string::npos) name = name.substr(0, colon);
    keep.insert(name);
  }
  return keep;
}

// The compute ops of `graph` outside `clusters`, by op type: what a user (or
// the conformance hook) checks to see that an op really runs compiled, not
// only some Identity next to it.
std::map<std::string, int64_t> LeftOps(const tensorflow::GraphDef& graph,
                                       const std::vector<std::vector<int>>& clusters) {
  std::vector<char> clustered(graph.node_size(), 0);
  for (const auto& c : clusters) {
    for (int v : c) clustered[v] = 1;
  }
  const std::unordered_set<std::string> launches = LaunchNodes(graph);
  std::map<std::string, int64_t> left;
  for (int i = 0; i < graph.node_size(); ++i) {
    const tensorflow::NodeDef& node = graph.node(i);
    if (clustered[i] || IsNonComputeOp(node.op()) || IsKeptLaunchOutput(node, launches)) continue;
    ++left[node.op()];
  }
  return left;
}

}  // namespace

bool DiscOptimizer::FirstSight(const std::string& item_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return left_by_item_.emplace(item_id, std::map<std::string, int64_t>{}).second;
}

void DiscOptimizer::RecordLeftOps(const std::string& item_id,
                                  const tensorflow::GraphDef& graph,
                                  const std::vector<std::vector<int>>& clusters) {
  std::map<std::string, int64_t> now = LeftOps(graph, clusters);
  std::map<std::string, int64_t> delta = now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, int64_t>& before = left_by_item_[item_id];
    for (const auto& kv : before) delta[kv.first] -= kv.second;
    before = std::move(now);
  }
  RecordOpsLeftInTf(delta);
}

absl::Status DiscOptimizer::Init(
    const tensorflow::RewriterConfig_CustomGraphOptimizer* config) {
  if (config == nullptr) return absl::OkStatus();
  auto it = config->parameter_map().find("min_cluster_size");
  if (it != config->parameter_map().end()) {
    if (it->second.value_case() != tensorflow::AttrValue::kI ||
        it->second.i() < 1) {
      return absl::InvalidArgumentError(
          "DiscOptimizer: min_cluster_size must be a positive int");
    }
    min_cluster_size_ = static_cast<int>(it->second.i());
  }
  return absl::OkStatus();
}

absl::Status DiscOptimizer::Optimize(tensorflow::grappler::Cluster* /*cluster*/,
                                     const tensorflow::grappler::GrapplerItem& item,
                                     tensorflow::GraphDef* optimized_graph) {
  // Quick exits first: this runs for every graph and function in the process.
  Options options = GetOptions();
  if (plugin_ && !options.enabled) return NothingToDo("disabled");
  std::shared_ptr<const SupportTable> table = GetSupportTable();
  if (!table) return NothingToDo("no support table");
  if (item.id.rfind(kClusterFunctionPrefix, 0) == 0) {
    return NothingToDo("own cluster function");
  }
  if (item.id.rfind(kFunctionalizedPrefix, 0) == 0) {
    return NothingToDo("body of a functionalized legacy frame");
  }
  if (FirstSight(item.id)) RecordGraphSeen();
  const auto start = std::chrono::steady_clock::now();
  const int min_size =
      min_cluster_size_ > 0 ? min_cluster_size_ : options.min_cluster_size;
  int supported = 0;
  for (const auto& node : item.graph.node()) {
    supported += table->HasOp(node.op()) || IsExpandableFusedOpType(node.op());
  }
  // Function calls may bring supported ops in (call_inlining.h).
  if ((supported < min_size || supported == 0) && !HasFunctionCalls(item.graph)) {
    RecordLeftOps(item.id, item.graph, {});
    return NothingToDo("too few supported nodes");
  }

  CallInliningOptions calls;
  calls.keep_names = KeepNames(item);
  GraphAnalysis analysis;
  DevicePolicy devices;
  devices.gpu = options.device == "gpu";
  absl::Status s = AnalyzeGraph(item.graph, *table, FedNodes(item), calls, min_size, devices,
                                /*want_reasons=*/false, &analysis);
  if (!s.ok()) {
    VLOG(1) << "DiscOptimizer: cannot analyze " << item.id << ": " << s;
    return NothingToDo("graph not analyzable");
  }
  if (analysis.clusters.empty()) {
    RecordLeftOps(item.id, *analysis.graph, {});
    return NothingToDo("no cluster");
  }
  const std::vector<std::vector<int>>& clusters = analysis.clusters;

  RewriteInput in{&analysis.index, &analysis.clusterable, &clusters, &calls.keep_names,
                  &analysis.InferredDims()};
  tensorflow::GraphDef rewritten;
  int num_rewritten = 0;
  s = RewriteClusters(in, &rewritten, &num_rewritten);
  if (!s.ok() || num_rewritten == 0) {
    if (!s.ok()) LOG(WARNING) << "DiscOptimizer: rewrite failed: " << s;
    RecordLeftOps(item.id, *analysis.graph, {});
    return NothingToDo("no cluster rewritten");
  }
  int64_t nodes = 0;
  for (const auto& c : clusters) nodes += static_cast<int64_t>(c.size());
  RecordGraphRewritten(num_rewritten, nodes);
  RecordGraphClusters(item.id, LaunchedFunctions(rewritten));
  RecordLeftOps(item.id, *analysis.graph, clusters);
  VLOG(1) << "DiscOptimizer: " << item.id << ": " << num_rewritten
          << " cluster(s), " << nodes << " node(s) of " << analysis.graph->node_size()
          << " (" << analysis.calls.inlined << " call(s) inlined, "
          << analysis.calls.kept.size() << " kept)"
          << " in "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start).count()
          << " s";
  if (!options.dump_dir.empty()) {
    Dump(options.dump_dir, item.id, "before", item.graph);
    Dump(options.dump_dir, item.id, "after", rewritten);
  }
  *optimized_graph = std::move(rewritten);
  return absl::OkStatus();
}

REGISTER_GRAPH_OPTIMIZER_AS(DiscOptimizer, "DiscOptimizer");

namespace {

// Registers the plugin instance for CPU at library load.  ConfigList(false,
// {}) leaves TF's own optimizers as configured.
struct PluginRegistration {
  PluginRegistration() {
    tensorflow::grappler::ConfigList configs(false, {});
    tensorflow::grappler::PluginGraphOptimizerRegistry::
        RegisterPluginOptimizerOrDie(
            []() -> tensorflow::grappler::CustomGraphOptimizer* {
              return new DiscOptimizer(/*plugin=*/true);
            },
            "CPU", configs);
  }
};
PluginRegistration plugin_registration;

}  // namespace
}  // namespace tf_disc
