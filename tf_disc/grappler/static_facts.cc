#include "tf_disc/grappler/static_facts.h"

#include <algorithm>
#include <vector>

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

// Static size of the last dim, -1 when unknown.
int64_t LastDim(const tensorflow::TensorShapeProto& shape) {
  if (shape.unknown_rank() || shape.dim_size() == 0) return -1;
  return std::max<int64_t>(shape.dim(shape.dim_size() - 1).size(), -1);
}

}  // namespace

const char kIndexDepthAttr[] = "_disc_index_depth";
const char kStaticDimsAttr[] = "_disc_static_dims";

std::unordered_map<std::string, OutputDims> InferOutputDims(
    const tensorflow::GraphDef& graph) {
  std::unordered_map<std::string, OutputDims> out;
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

std::unordered_map<std::string, std::string> ResolveStaticFacts(
    tensorflow::GraphDef* graph) {
  std::unordered_map<std::string, std::string> undecided;
  tensorflow::grappler::GrapplerItem item;
  item.id = "disc_static_facts";
  item.graph = *graph;
  tensorflow::grappler::GraphProperties props(item);
  absl::Status s = props.InferStatically(/*assume_valid_feeds=*/true,
                                         /*aggressive_shape_inference=*/false,
                                         /*include_input_tensor_values=*/false,
                                         /*include_output_tensor_values=*/false);
  if (!s.ok()) VLOG(1) << "DiscOptimizer: shape inference failed: " << s;
  for (auto& node : *graph->mutable_node()) {
    if (IsGatherNd(node)) {
      // The output rank depends on indices' last dim (the index depth).
      const int64_t depth = s.ok() && props.HasInputProperties(node.name()) &&
                                    props.GetInputProperties(node.name()).size() == 2
                                ? LastDim(props.GetInputProperties(node.name())[1].shape())
                                : -1;
      if (depth < 0) {
        undecided[node.name()] = "GatherNd: index depth (indices' last dim) unknown before "
                                 "run time";
      } else {
        (*node.mutable_attr())[kIndexDepthAttr].set_i(depth);
      }
      continue;
    }
    if (!IsSqueezeWithoutAxes(node)) continue;
    const char* why = "Squeeze without squeeze_dims: its rank depends on which dims are 1 "
                      "at run time";
    if (!s.ok() || !props.HasInputProperties(node.name()) ||
        props.GetInputProperties(node.name()).empty()) {
      undecided[node.name()] = why;
      continue;
    }
    const tensorflow::TensorShapeProto& shape =
        props.GetInputProperties(node.name())[0].shape();
    std::vector<int64_t> ones;
    bool known = !shape.unknown_rank();
    for (int d = 0; known && d < shape.dim_size(); ++d) {
      if (shape.dim(d).size() < 0) known = false;
      if (shape.dim(d).size() == 1) ones.push_back(d);
    }
    if (!known) {
      undecided[node.name()] = why;
      continue;
    }
    if (ones.empty()) {  // no dim is 1: the Squeeze is an Identity
      node.set_op("Identity");
      node.mutable_attr()->erase("squeeze_dims");
      continue;
    }
    auto* dims = (*node.mutable_attr())["squeeze_dims"].mutable_list();
    dims->clear_i();
    for (int64_t d : ones) dims->add_i(d);
  }
  return undecided;
}

}  // namespace tf_disc
