#include "tf_disc/grappler/defuse.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/tensor.h"

namespace tf_disc {
namespace {

using tensorflow::AttrValue;
using tensorflow::NodeDef;

constexpr char kUnaryComposition[] = "_UnaryOpsComposition";  // arithmetic opt.
constexpr char kSwish[] = "_MklSwish";  // remapper (oneDNN): x * sigmoid(x)
constexpr char kMish[] = "_MklFusedMish";  // remapper: x * tanh(softplus(x))
// remapper: MatMul + BiasAdd [+ Add] [+ activation]; inputs a, b, args...
constexpr char kFusedMatMul[] = "_FusedMatMul";
// remapper (oneDNN): BatchMatMulV2 + Mul [+ Add], e.g. attention scores
// q @ k^T * scale + mask; inputs x, y, args... (fused_ops {"Mul"}, {"Add"} or
// {"Mul", "Add"}: each step applies its arg with broadcasting).
constexpr char kFusedBatchMatMul[] = "_MklFusedBatchMatMulV2";

// Contraction fused_ops entries -> plain op (empty: not expandable).
std::string FusedMatMulStep(const std::string& step) {
  if (step == "BiasAdd" || step == "Relu" || step == "Relu6" || step == "Elu" ||
      step == "LeakyRelu" || step == "Tanh" || step == "Sigmoid") {
    return step;
  }
  if (step == "Add" || step == "AddV2") return "AddV2";
  if (step == "Mul") return "Mul";
  if (step == "GeluExact" || step == "GeluApproximate") return step;
  return "";
}

// The plain ops a contraction step runs (Gelu: tf.nn.gelu's own formulas).
std::vector<std::string> StepOps(const std::string& step) {
  if (step == "GeluExact") return {"Neg", "Mul", "Erfc"};
  if (step == "GeluApproximate") return {"Pow", "Mul", "AddV2", "Tanh"};
  return {step};
}

// Whether a contraction step consumes the next fused arg.
bool TakesArg(const std::string& op) {
  return op == "BiasAdd" || op == "AddV2" || op == "Mul";
}

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
  if (node.op() == kMish) return {"Softplus", "Tanh", "Mul"};
  const bool matmul = node.op() == kFusedMatMul;
  if (matmul || node.op() == kFusedBatchMatMul) {
    auto fused = node.attr().find("fused_ops");
    auto num_args = node.attr().find("num_args");
    if (fused == node.attr().end() || num_args == node.attr().end()) return {};
    const auto& steps = fused->second.list().s();
    if (steps.empty() || (matmul && steps[0] != "BiasAdd")) return {};
    std::vector<std::string> ops = {matmul ? "MatMul" : "BatchMatMulV2"};
    int args = 0;
    for (const std::string& step : steps) {
      std::string op = FusedMatMulStep(step);
      // The batched kernel takes only Mul/Add post-ops (each with an arg).
      if (op.empty() || (matmul && op == "Mul") ||
          (!matmul && op != "Mul" && op != "AddV2")) {
        return {};
      }
      args += TakesArg(op);
      ops.push_back(op);
    }
    if (args != num_args->second.i() || node.input_size() < 2 + args) return {};
    return ops;
  }
  return {};
}

bool Expandable(const NodeDef& node, const SupportTable& table) {
  if (!IsExpandableFusedOpType(node.op())) return false;
  auto type = node.attr().find("T");
  if (type == node.attr().end()) return false;
  std::vector<std::string> ops = PlainOps(node);
  if (ops.empty()) return false;
  tensorflow::DataType dtype = type->second.type();
  if (dtype != tensorflow::DT_FLOAT && dtype != tensorflow::DT_HALF &&
      dtype != tensorflow::DT_BFLOAT16 && dtype != tensorflow::DT_DOUBLE) {
    return false;
  }
  for (const std::string& step : ops) {
    for (const std::string& op : StepOps(step)) {
      if (!Supported(table, op, type->second)) return false;
    }
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

// A scalar Const of the fused node's type T.
NodeDef MakeScalar(const std::string& name, double value, const NodeDef& fused) {
  NodeDef n;
  n.set_name(name);
  n.set_op("Const");
  n.set_device(fused.device());
  tensorflow::DataType dtype = fused.attr().at("T").type();
  tensorflow::Tensor t(dtype, tensorflow::TensorShape({}));
  switch (dtype) {
    case tensorflow::DT_HALF: t.scalar<Eigen::half>()() = Eigen::half(value); break;
    case tensorflow::DT_BFLOAT16:
      t.scalar<tensorflow::bfloat16>()() = tensorflow::bfloat16(value);
      break;
    case tensorflow::DT_DOUBLE: t.scalar<double>()() = value; break;
    default: t.scalar<float>()() = static_cast<float>(value); break;
  }
  (*n.mutable_attr())["dtype"].set_type(dtype);
  t.AsProtoTensorContent((*n.mutable_attr())["value"].mutable_tensor());
  return n;
}

// Appends tf.nn.gelu(y) (exact: 0.5 * y * erfc(-y * 1/sqrt(2)); approximate:
// 0.5 * y * (1 + tanh(sqrt(2/pi) * (y + 0.044715 * y^3)))) as plain nodes; the
// last one is named `out`.
template <typename Fresh>
void AppendGelu(const NodeDef& fused, const std::string& y, bool exact,
                const std::string& out, Fresh& fresh, std::vector<NodeDef>* chain) {
  const std::string base = fused.name() + "/disc_gelu/";
  auto scalar = [&](const char* tag, double v) {
    std::string name = fresh(base + tag);
    chain->push_back(MakeScalar(name, v, fused));
    return name;
  };
  auto op = [&](const std::string& type, std::vector<std::string> in,
                const std::string& name = "") {
    std::string n = name.empty() ? fresh(base + type) : name;
    chain->push_back(MakeNode(n, type, fused, std::move(in)));
    return n;
  };
  std::string half_y = op("Mul", {scalar("half", 0.5), y});
  std::string gate;
  if (exact) {
    std::string neg = op("Neg", {y});
    gate = op("Erfc", {op("Mul", {neg, scalar("rsqrt2", 0.7071067811865476)})});
  } else {
    std::string cube = op("Pow", {y, scalar("three", 3.0)});
    std::string inner = op("AddV2", {y, op("Mul", {scalar("coeff", 0.044715), cube})});
    std::string th = op("Tanh", {op("Mul", {scalar("sqrt2_pi", 0.7978845608028654), inner})});
    gate = op("AddV2", {scalar("one", 1.0), th});
  }
  op("Mul", {half_y, gate}, out);
}

}  // namespace

bool IsExpandableFusedOpType(const std::string& op) {
  return op == kUnaryComposition || op == kSwish || op == kMish ||
         op == kFusedMatMul || op == kFusedBatchMatMul;
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
    if (node.op() == kFusedMatMul || node.op() == kFusedBatchMatMul) {
      // (Batch)MatMul(a, b) then BiasAdd/AddV2/Mul with the next arg, or a
      // unary op.
      const auto& attrs = node.attr();
      std::string input = fresh(node.name() + "/disc_" + ops[0]);
      std::vector<std::string> in = {node.input(0), node.input(1)};
      int next_arg = 2;
      controls.assign(node.input().begin() + 2, node.input().end());
      controls.erase(std::remove_if(controls.begin(), controls.end(),
                                    [](const std::string& s) { return s.empty() || s[0] != '^'; }),
                     controls.end());
      in.insert(in.end(), controls.begin(), controls.end());
      NodeDef mm = MakeNode(input, ops[0], node, in);
      for (const char* a : {"transpose_a", "transpose_b", "adj_x", "adj_y"}) {
        if (attrs.count(a)) (*mm.mutable_attr())[a] = attrs.at(a);
      }
      chain.push_back(std::move(mm));
      for (size_t i = 1; i < ops.size(); ++i) {
        bool last = i + 1 == ops.size();
        std::string name = last ? node.name()
                                : fresh(node.name() + "/disc_" + ops[i]);
        if (ops[i] == "GeluExact" || ops[i] == "GeluApproximate") {
          AppendGelu(node, input, ops[i] == "GeluExact", name, fresh, &chain);
          input = name;
          continue;
        }
        std::vector<std::string> step_in = {input};
        if (TakesArg(ops[i])) step_in.push_back(node.input(next_arg++));
        NodeDef n = MakeNode(name, ops[i], node, step_in);
        if (ops[i] == "LeakyRelu" && attrs.count("leakyrelu_alpha")) {
          (*n.mutable_attr())["alpha"] = attrs.at("leakyrelu_alpha");
        }
        chain.push_back(std::move(n));
        input = name;
      }
    } else if (node.op() == kSwish || node.op() == kMish) {
      // x * gate(x): the unary gate chain, then Mul with x.
      std::string gate = x;
      for (size_t i = 0; i + 1 < ops.size(); ++i) {
        std::vector<std::string> in = {gate};
        if (i == 0) in.insert(in.end(), controls.begin(), controls.end());
        gate = fresh(node.name() + "/disc_" + ops[i]);
        chain.push_back(MakeNode(gate, ops[i], node, in));
      }
      chain.push_back(MakeNode(node.name(), "Mul", node, {x, gate}));
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
