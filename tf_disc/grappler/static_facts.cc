#include "tf_disc/grappler/static_facts.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/grappler/costs/graph_properties.h"
#include "tensorflow/core/grappler/grappler_item.h"
#include "tensorflow/core/platform/logging.h"

namespace tf_disc {
namespace {

bool IsGatherNd(const tensorflow::NodeDef& node) { return node.op() == "GatherNd"; }

bool IsSqueezeWithoutAxes(const tensorflow::NodeDef& node) {
  if (node.op() != "Squeeze") return false;
  auto it = node.attr().find("squeeze_dims");
  return it == node.attr().end() || it->second.list().i_size() == 0;
}

// Dims of data input `k` of `node` (from its producer's output), nullptr
// when its rank is unknown.
const std::vector<int64_t>* InputDims(const StaticDims& dims, const tensorflow::NodeDef& node,
                                      int k) {
  if (k >= node.input_size() || absl::StartsWith(node.input(k), "^")) return nullptr;
  absl::string_view name = node.input(k);
  int port = 0;
  const size_t colon = name.rfind(':');
  if (colon != absl::string_view::npos) {
    if (!absl::SimpleAtoi(name.substr(colon + 1), &port)) return nullptr;
    name = name.substr(0, colon);
  }
  auto it = dims.find(std::string(name));
  if (it == dims.end() || port < 0 || port >= static_cast<int>(it->second.dims.size()) ||
      !it->second.known_rank[port]) {
    return nullptr;
  }
  return &it->second.dims[port];
}

}  // namespace

const char kIndexDepthAttr[] = "_disc_index_depth";
const char kStaticDimsAttr[] = "_disc_static_dims";

StaticDims InferOutputDims(const tensorflow::GraphDef& graph) {
  StaticDims out;
  VLOG(2) << "DiscOptimizer: shape inference over " << graph.node_size() << " nodes";
  tensorflow::grappler::GrapplerItem item;
  item.id = "disc_static_dims";
  item.graph = graph;
  tensorflow::grappler::GraphProperties props(item);
  absl::Status s = props.InferStatically(/*assume_valid_feeds=*/true,
                                         /*aggressive_shape_inference=*/false,
                                         /*include_input_tensor_values=*/false,
                                         /*include_output_tensor_values=*/false);
  if (!s.ok()) {
    VLOG(1) << "DiscOptimizer: shape inference for static dims failed: " << s;
    return out;
  }
  for (const auto& node : graph.node()) {
    if (!props.HasOutputProperties(node.name())) continue;
    OutputDims& o = out[node.name()];
    for (const auto& p : props.GetOutputProperties(node.name())) {
      const tensorflow::TensorShapeProto& shape = p.shape();
      o.known_rank.push_back(!shape.unknown_rank());
      std::vector<int64_t> dims;
      // Symbolic ids (-2, -3, ...) only mark equal dims: unknown here.
      for (const auto& d : shape.dim()) dims.push_back(std::max<int64_t>(d.size(), -1));
      o.dims.push_back(std::move(dims));
    }
  }
  return out;
}

bool NeedsStaticFacts(const tensorflow::GraphDef& graph) {
  for (const auto& node : graph.node()) {
    if (IsSqueezeWithoutAxes(node) || IsGatherNd(node)) return true;
  }
  return false;
}

std::unordered_map<std::string, std::string> ResolveStaticFacts(const StaticDims& dims,
                                                                tensorflow::GraphDef* graph) {
  std::unordered_map<std::string, std::string> undecided;
  for (auto& node : *graph->mutable_node()) {
    if (IsGatherNd(node)) {
      // The output rank depends on indices' last dim (the index depth).
      const std::vector<int64_t>* indices = InputDims(dims, node, 1);
      const int64_t depth = indices && !indices->empty() ? indices->back() : -1;
      if (depth < 0) {
        undecided[node.name()] = "GatherNd: index depth (indices' last dim) unknown before "
                                 "run time";
      } else {
        (*node.mutable_attr())[kIndexDepthAttr].set_i(depth);
      }
      continue;
    }
    if (!IsSqueezeWithoutAxes(node)) continue;
    const std::vector<int64_t>* shape = InputDims(dims, node, 0);
    if (!shape || std::any_of(shape->begin(), shape->end(), [](int64_t d) { return d < 0; })) {
      undecided[node.name()] = "Squeeze without squeeze_dims: its rank depends on which dims "
                               "are 1 at run time";
      continue;
    }
    std::vector<int64_t> ones;
    for (size_t d = 0; d < shape->size(); ++d) {
      if ((*shape)[d] == 1) ones.push_back(static_cast<int64_t>(d));
    }
    if (ones.empty()) {  // no dim is 1: the Squeeze is an Identity
      node.set_op("Identity");
      node.mutable_attr()->erase("squeeze_dims");
      continue;
    }
    auto* list = (*node.mutable_attr())["squeeze_dims"].mutable_list();
    list->clear_i();
    for (int64_t d : ones) list->add_i(d);
  }
  return undecided;
}

}  // namespace tf_disc
