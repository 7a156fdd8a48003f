#include "tf_disc/grappler/defuse.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/framework/op.h"

namespace tf_disc {
namespace {

using tensorflow::AttrValue;
using tensorflow::NodeDef;

constexpr char kUnaryComposition[] = "_UnaryOpsComposition";  // arithmetic opt.
constexpr char kSwish[] = "_MklSwish";  // remapper (oneDNN): x * sigmoid(x)

// Whether the table takes `op` with type attr T = type.
bool Supported(const SupportTable& table, const std::string& op,
               const AttrValue& type) {
  NodeDef probe;
  probe.set_op(op);
  (*probe.mutable_attr())["T"] = type;
  const tensorflow::OpDef* op_def = nullptr;
  if (!tensorflow::OpRegistry::Global()->LookUpOpDef(op, &op_def).ok()) {
    return false;
  }
  return table.Match(probe, *op_def) != nullptr;
}

// The plain ops a fused node stands for, in application order; empty when it
// is not expandable.
std::vector<std::string> PlainOps(const NodeDef& node) {
  if (node.input_size() < 1) return {};
  if (node.op() == kUnaryComposition) {
    auto names = node.attr().find("op_names");
    if (names == node.attr().end()) return {};
    return {names->second.list().s().begin(), names->second.list().s().end()};
  }
  if (node.op() == kSwish) return {"Sigmoid", "Mul"};
  return {};
}

bool Expandable(const NodeDef& node, const SupportTable& table) {
  if (!IsExpandableFusedOpType(node.op())) return false;
  auto type = node.attr().find("T");
  if (type == node.attr().end()) return false;
  std::vector<std::string> ops = PlainOps(node);
  if (ops.empty()) return false;
  for (const std::string& op : ops) {
    if (!Supported(table, op, type->second)) return false;
  }
  return true;
}

NodeDef MakeNode(const std::string& name, const std::string& op,
                 const NodeDef& fused, std::vector<std::string> inputs) {
  NodeDef n;
  n.set_name(name);
  n.set_op(op);
  n.set_device(fused.device());
  for (std::string& in : inputs) n.add_input(std::move(in));
  (*n.mutable_attr())["T"] = fused.attr().at("T");
  return n;
}

}  // namespace

bool IsExpandableFusedOpType(const std::string& op) {
  return op == kUnaryComposition || op == kSwish;
}

bool HasExpandableFusedOps(const tensorflow::GraphDef& graph,
                           const SupportTable& table) {
  for (const auto& node : graph.node()) {
    if (Expandable(node, table)) return true;
  }
  return false;
}

int ExpandFusedOps(const SupportTable& table, tensorflow::GraphDef* graph) {
  std::unordered_set<std::string> names;
  for (const auto& node : graph->node()) names.insert(node.name());
  auto fresh = [&names](std::string name) {
    while (names.count(name)) name += "_";
    names.insert(name);
    return name;
  };
  std::vector<NodeDef> added;
  int expanded = 0;
  for (auto& node : *graph->mutable_node()) {
    if (!Expandable(node, table)) continue;
    const std::string x = node.input(0);
    std::vector<std::string> controls(node.input().begin() + 1,
                                      node.input().end());
    std::vector<std::string> ops = PlainOps(node);
    std::vector<NodeDef> chain;
    if (node.op() == kSwish) {
      std::string sig = fresh(node.name() + "/disc_sigmoid");
      std::vector<std::string> in = {x};
      in.insert(in.end(), controls.begin(), controls.end());
      chain.push_back(MakeNode(sig, "Sigmoid", node, in));
      chain.push_back(MakeNode(node.name(), "Mul", node, {x, sig}));
    } else {
      // Unary chain; the first step carries the control inputs.
      std::string input = x;
      for (size_t i = 0; i < ops.size(); ++i) {
        bool last = i + 1 == ops.size();
        std::string name = last ? node.name()
                                : fresh(node.name() + "/disc_unary_" +
                                        std::to_string(i));
        std::vector<std::string> in = {input};
        if (i == 0) in.insert(in.end(), controls.begin(), controls.end());
        chain.push_back(MakeNode(name, ops[i], node, in));
        input = name;
      }
    }
    // The last node keeps the fused node's name and slot in the graph.
    node = std::move(chain.back());
    chain.pop_back();
    for (auto& n : chain) added.push_back(std::move(n));
    ++expanded;
  }
  for (auto& n : added) *graph->add_node() = std::move(n);
  return expanded;
}

}  // namespace tf_disc
