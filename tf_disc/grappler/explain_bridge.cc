// disc.explain()'s entry point (explain_bridge.h).
#include "tf_disc/grappler/explain_bridge.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "tensorflow/core/framework/graph.pb.h"
#include "tf_disc/grappler/analysis.h"
#include "tf_disc/grappler/clustering.h"
#include "tf_disc/grappler/support_table.h"
#include "tf_disc/common/json.h"
#include "tf_disc/ops/options.h"

namespace tf_disc {
namespace {

std::string ErrorJson(const std::string& why) {
  std::string out = "{\"error\": ";
  json::AppendQuoted(why, &out);
  return out + "}";
}

std::string Explain(const char* graphdef, int64_t len, const char* options_json) {
  std::shared_ptr<const SupportTable> table = GetSupportTable();
  if (!table) return ErrorJson("no support table: the compiler is not registered");
  tensorflow::GraphDef graph;
  if (graphdef == nullptr || len < 0 || !graph.ParseFromArray(graphdef, static_cast<int>(len))) {
    return ErrorJson("cannot parse the GraphDef");
  }
  const Options options = GetOptions();
  int min_size = options.min_cluster_size;
  DevicePolicy devices;
  devices.gpu = options.device == "gpu";
  std::unordered_set<std::string> fed;
  json::Value opts;
  std::string error;
  if (!json::Parse(options_json != nullptr ? options_json : "{}", &opts, &error)) {
    return ErrorJson("bad options: " + error);
  }
  if (const json::Value* m = opts.Find("min_cluster_size")) {
    if (!m->is_integer() || m->as_int() < 1) return ErrorJson("bad min_cluster_size");
    min_size = static_cast<int>(m->as_int());
  }
  if (const json::Value* d = opts.Find("device")) {
    if (!d->is_string() || (d->as_string() != "cpu" && d->as_string() != "gpu")) {
      return ErrorJson("bad device");
    }
    devices.gpu = d->as_string() == "gpu";
  }
  if (const json::Value* f = opts.Find("fed")) {
    if (!f->is_array()) return ErrorJson("bad fed");
    for (const auto& v : f->items()) {
      if (!v.is_string()) return ErrorJson("bad fed");
      fed.insert(v.as_string());
    }
  }
  // A traced graph still holds the calls TF's runtime inlines before
  // Grappler: inline them as it would.
  CallInliningOptions calls;
  calls.like_runtime = true;
  GraphAnalysis a;
  absl::Status s =
      AnalyzeGraph(graph, *table, fed, calls, min_size, devices, /*want_reasons=*/true, &a);
  if (!s.ok()) return ErrorJson("graph not analyzable: " + std::string(s.message()));
  const tensorflow::GraphDef& g = *a.graph;
  std::vector<int> cluster_of(g.node_size(), -1);
  for (size_t c = 0; c < a.clusters.size(); ++c) {
    for (int v : a.clusters[c]) cluster_of[v] = static_cast<int>(c);
  }
  std::string out = "{\"nodes\": [";
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    out += i ? ", {\"name\": " : "{\"name\": ";
    json::AppendQuoted(n.name(), &out);
    out += ", \"op\": ";
    json::AppendQuoted(n.op(), &out);
    out += ", \"device\": ";
    json::AppendQuoted(n.device(), &out);
    out += ", \"compute\": ";
    out += IsNonComputeOp(n.op()) ? "false" : "true";
    out += ", \"cluster\": " + std::to_string(cluster_of[i]) + ", \"reason\": ";
    json::AppendQuoted(a.reasons[i], &out);
    out += "}";
  }
  out += "], \"clusters\": [";
  for (size_t c = 0; c < a.clusters.size(); ++c) {
    out += c ? ", [" : "[";
    for (size_t k = 0; k < a.clusters[c].size(); ++k) {
      if (k) out += ", ";
      json::AppendQuoted(g.node(a.clusters[c][k]).name(), &out);
    }
    out += "]";
  }
  return out + "], \"min_cluster_size\": " + std::to_string(min_size) + "}";
}

}  // namespace
}  // namespace tf_disc

extern "C" int64_t DiscExplainGraph(const char* graphdef, int64_t graphdef_len,
                                    const char* options_json, char* buf, int64_t cap) {
  std::string s = tf_disc::Explain(graphdef, graphdef_len, options_json);
  if (buf != nullptr && cap > 0) {
    size_t n = std::min<size_t>(s.size(), static_cast<size_t>(cap - 1));
    memcpy(buf, s.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int64_t>(s.size());
}
