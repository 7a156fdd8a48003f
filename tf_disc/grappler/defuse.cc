#include "tf_disc/grappler/defuse.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/framework/op.h"

namespace tf_disc {
namespace {

constexpr char kUnaryComposition[] = "_UnaryOpsComposition";

// The plain unary node for one step of the chain, if the table takes it.
bool Supported(const SupportTable& table, const std::string& op,
               const tensorflow::AttrValue& type) {
  tensorflow::NodeDef probe;
  probe.set_op(op);
  (*probe.mutable_attr())["T"] = type;
  const tensorflow::OpDef* op_def = nullptr;
  if (!tensorflow::OpRegistry::Global()->LookUpOpDef(op, &op_def).ok()) {
    return false;
  }
  return table.Match(probe, *op_def) != nullptr;
}

bool Expandable(const tensorflow::NodeDef& node, const SupportTable& table) {
  if (node.op() != kUnaryComposition) return false;
  auto names = node.attr().find("op_names");
  auto type = node.attr().find("T");
  if (names == node.attr().end() || type == node.attr().end()) return false;
  if (names->second.list().s_size() == 0 || node.input_size() < 1) return false;
  for (const std::string& op : names->second.list().s()) {
    if (!Supported(table, op, type->second)) return false;
  }
  return true;
}

}  // namespace

bool IsExpandableFusedOpType(const std::string& op) {
  return op == kUnaryComposition;
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
  std::vector<tensorflow::NodeDef> added;
  int expanded = 0;
  for (auto& node : *graph->mutable_node()) {
    if (!Expandable(node, table)) continue;
    const auto& ops = node.attr().at("op_names").list().s();
    const tensorflow::AttrValue type = node.attr().at("T");
    std::string input = node.input(0);
    std::vector<std::string> controls(node.input().begin() + 1,
                                      node.input().end());
    // Steps 0..n-2 get fresh names; the last step replaces the fused node.
    for (int i = 0; i + 1 < ops.size(); ++i) {
      tensorflow::NodeDef step;
      std::string name = node.name() + "/disc_unary_" + std::to_string(i);
      while (names.count(name)) name += "_";
      names.insert(name);
      step.set_name(name);
      step.set_op(ops[i]);
      step.set_device(node.device());
      step.add_input(input);
      if (i == 0) {
        for (const std::string& c : controls) step.add_input(c);
      }
      (*step.mutable_attr())["T"] = type;
      input = name;
      added.push_back(std::move(step));
    }
    tensorflow::NodeDef last;
    last.set_name(node.name());
    last.set_op(ops[ops.size() - 1]);
    last.set_device(node.device());
    last.add_input(input);
    if (ops.size() == 1) {
      for (const std::string& c : controls) last.add_input(c);
    }
    (*last.mutable_attr())["T"] = type;
    node = std::move(last);
    ++expanded;
  }
  for (auto& n : added) *graph->add_node() = std::move(n);
  return expanded;
}

}  // namespace tf_disc
