#include "tf_disc/grappler/loop_support.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/lib/strings/proto_serialization.h"

namespace tf_disc {
namespace {

using tensorflow::AttrValue;
using tensorflow::DataType;
using tensorflow::FunctionDef;
using tensorflow::NodeDef;

// Control flow nested deeper than this stays in TF (a guard against
// recursion).
constexpr int kMaxLoopDepth = 8;

// The node a FunctionDef input reference names ("arg", "node:out:i", "^n").
std::string RefNode(const std::string& ref) {
  std::string s = !ref.empty() && ref[0] == '^' ? ref.substr(1) : ref;
  return s.substr(0, s.find(':'));
}

const AttrValue* Attr(const NodeDef& node, const char* name) {
  auto it = node.attr().find(name);
  return it == node.attr().end() ? nullptr : &it->second;
}

}  // namespace

std::string FuncAttr(const NodeDef& node, const char* name) {
  const AttrValue* a = Attr(node, name);
  return a != nullptr && a->has_func() ? a->func().name() : "";
}

// The nodes of f reading argument `arg` (data or control), by index.
std::vector<int> ArgReaders(const FunctionDef& f, const std::string& arg) {
  std::vector<int> out;
  for (int i = 0; i < f.node_def_size(); ++i) {
    for (const std::string& in : f.node_def(i).input()) {
      if (RefNode(in) == arg) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

// A list(type) attr's types: a loop's "T", a conditional's "Tin"/"Tout".
std::vector<DataType> TypesAttr(const NodeDef& node, const char* name) {
  std::vector<DataType> out;
  if (const AttrValue* t = Attr(node, name)) {
    for (int x : t->list().type()) out.push_back(static_cast<DataType>(x));
  }
  return out;
}

namespace {

// The branch functions of an If (then, else) or a Case (branches).
std::vector<std::string> BranchNames(const NodeDef& node) {
  if (node.op() == "If" || node.op() == "StatelessIf") {
    return {FuncAttr(node, "then_branch"), FuncAttr(node, "else_branch")};
  }
  std::vector<std::string> out;
  if (const AttrValue* a = Attr(node, "branches")) {
    for (const auto& f : a->list().func()) out.push_back(f.name());
  }
  return out;
}

}  // namespace

// Branch argument k (Tin index) read only by ReadVariableOps in every
// branch: the dtype they read; DT_INVALID when a branch does anything else
// with it, or none reads it.
DataType ReadOnlyResourceType(const std::vector<const FunctionDef*>& branches, int k) {
  DataType type = tensorflow::DT_INVALID;
  for (const FunctionDef* f : branches) {
    if (k >= f->signature().input_arg_size()) return tensorflow::DT_INVALID;
    const std::string& arg = f->signature().input_arg(k).name();
    for (int i : ArgReaders(*f, arg)) {
      const NodeDef& n = f->node_def(i);
      if (n.op() != "ReadVariableOp" || n.input_size() != 1 || n.input(0) != arg) {
        return tensorflow::DT_INVALID;
      }
      type = n.attr().at("dtype").type();
    }
  }
  return type;
}

// The branch functions of a conditional; empty when one is missing.
std::vector<const FunctionDef*> BranchFunctions(const NodeDef& node,
                                                const FunctionLookup& lookup) {
  std::vector<const FunctionDef*> out;
  for (const std::string& name : BranchNames(node)) {
    const FunctionDef* f = lookup(name);
    if (f == nullptr) return {};
    out.push_back(f);
  }
  return out;
}

namespace {

// The conditional `node` passes resource `arg` only to branch arguments
// that every branch only reads (read_hoisting.cc reads it before the
// conditional, in the function holding it).
bool OnlyBranchesRead(const NodeDef& node, const std::string& arg, const FunctionLookup& lookup) {
  const std::vector<const FunctionDef*> branches = BranchFunctions(node, lookup);
  if (branches.empty()) return false;
  for (int p = 0; p < node.input_size(); ++p) {
    if (RefNode(node.input(p)) != arg) continue;
    if (p == 0 || node.input(p)[0] == '^' ||
        ReadOnlyResourceType(branches, p - 1) == tensorflow::DT_INVALID) {
      return false;
    }
  }
  return true;
}

// Resource loop variable k can be read once before the loop: the body
// carries it unchanged and only reads it (ReadVariableOp, or conditionals
// whose branches only read it); cond ignores it.
bool HoistableResource(const FunctionDef& cond, const FunctionDef& body, int k,
                       const FunctionLookup& lookup) {
  if (!LoopVarPassesThrough(body, k) || k >= cond.signature().input_arg_size()) return false;
  if (!ArgReaders(cond, cond.signature().input_arg(k).name()).empty()) return false;
  const std::string& arg = body.signature().input_arg(k).name();
  for (int i : ArgReaders(body, arg)) {
    const NodeDef& n = body.node_def(i);
    if (n.op() == "ReadVariableOp") continue;
    if (!IsFunctionalConditional(n.op()) || !OnlyBranchesRead(n, arg, lookup)) return false;
  }
  return true;
}

bool HasType(const tensorflow::DataTypeVector& types, DataType t) {
  for (DataType x : types) {
    if (x == t) return true;
  }
  return false;
}

std::string CheckFunction(const FunctionDef& f, const std::set<std::string>& readable,
                          const FunctionLookup& lookup, const SupportTable& table,
                          int depth);

std::string CheckLoop(const NodeDef& node, const FunctionLookup& lookup,
                      const SupportTable& table, int depth) {
  if (depth > kMaxLoopDepth) return "control flow nested too deep";
  const FunctionDef* cond = lookup(FuncAttr(node, "cond"));
  const FunctionDef* body = lookup(FuncAttr(node, "body"));
  if (cond == nullptr || body == nullptr) return "cond or body function not found";
  std::set<std::string> readable;  // body args ReadVariableOp may read
  const std::vector<DataType> types = TypesAttr(node, "T");
  for (size_t k = 0; k < types.size(); ++k) {
    if (types[k] != tensorflow::DT_RESOURCE) continue;
    if (depth > 0 || !HoistableResource(*cond, *body, static_cast<int>(k), lookup)) {
      return "loop variable " + std::to_string(k) + " is a resource the loop changes or "
             "passes on";
    }
    readable.insert(body->signature().input_arg(k).name());
  }
  // A list is one dense buffer in the executable (compiler/ops/tensor_list.py):
  // each append copies it, so a loop appending every iteration (a gradient's
  // accumulators, Keras' weights among them) costs the square of its trip
  // count where TF's appends cost nothing; such loops stay in TF.
  for (const NodeDef& n : body->node_def()) {
    if (n.op() == "TensorListPushBack") {
      return "TensorListPushBack in the body (node " + n.name() +
             "): each append copies the list";
    }
  }
  std::string why = CheckFunction(*cond, {}, lookup, table, depth);
  if (why.empty()) why = CheckFunction(*body, readable, lookup, table, depth);
  return why;
}

// The table admits the conditional's attrs (an If's predicate is a bool),
// its inputs are tensors or resources the branches only read (at top level,
// or nested where the enclosing function may read that resource: `outer`;
// HoistInvariantReads reads them before it), its outputs tensors of a known
// rank (no resource, no TensorList), and every op of every branch qualifies.
std::string CheckConditional(const NodeDef& node, const FunctionLookup& lookup,
                             const SupportTable& table, int depth,
                             const std::set<std::string>& outer) {
  if (depth > kMaxLoopDepth) return "control flow nested too deep";
  const tensorflow::OpDef* op_def = nullptr;
  if (!table.HasOp(node.op()) ||
      !tensorflow::OpRegistry::Global()->LookUpOpDef(node.op(), &op_def).ok()) {
    return node.op();
  }
  std::string refused;
  if (table.Match(node, *op_def, &refused) == nullptr) return node.op() + " with " + refused;
  const std::vector<const FunctionDef*> branches = BranchFunctions(node, lookup);
  if (branches.empty()) return "branch function not found";
  std::set<std::string> readable;  // branch args ReadVariableOp may read
  const std::vector<DataType> in = TypesAttr(node, "Tin");
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] == tensorflow::DT_VARIANT) return "Tin holds a TensorList";
    if (in[k] != tensorflow::DT_RESOURCE) continue;
    const bool readable_here =
        depth == 0 || (k + 1 < static_cast<size_t>(node.input_size()) &&
                       outer.count(RefNode(node.input(static_cast<int>(k) + 1))) > 0);
    if (!readable_here || ReadOnlyResourceType(branches, static_cast<int>(k)) ==
                              tensorflow::DT_INVALID) {
      return "branch argument " + std::to_string(k) + " is a resource a branch does more "
             "with than read";
    }
    for (const FunctionDef* f : branches) readable.insert(f->signature().input_arg(k).name());
  }
  for (DataType t : TypesAttr(node, "Tout")) {
    if (t == tensorflow::DT_RESOURCE || t == tensorflow::DT_VARIANT) {
      return std::string("Tout holds a ") +
             (t == tensorflow::DT_RESOURCE ? "resource" : "TensorList");
    }
  }
  // TF's shape of an output its branches return with different ranks (or
  // unranked) has no rank; the compiler needs one (ops/conditional.py).
  if (const AttrValue* shapes = Attr(node, "output_shapes")) {
    for (int k = 0; k < shapes->list().shape_size(); ++k) {
      if (shapes->list().shape(k).unknown_rank()) {
        return "output " + std::to_string(k) +
               " has no static rank (its branches differ in rank, or one has none)";
      }
    }
  }
  for (const FunctionDef* f : branches) {
    std::string why = CheckFunction(*f, readable, lookup, table, depth);
    if (!why.empty()) return why;
  }
  return "";
}

// The op of the node a FunctionDef input reference names ("" for an arg).
using ProducerOps = std::unordered_map<std::string, std::string>;

std::string CheckNode(const NodeDef& n, const std::set<std::string>& readable,
                      const ProducerOps& producers, const FunctionLookup& lookup,
                      const SupportTable& table, int depth) {
  const std::string& op = n.op();
  if (op == "NoOp") return "";
  if (op == "ReadVariableOp") {
    return n.input_size() > 0 && readable.count(n.input(0))
               ? ""
               : "ReadVariableOp of a resource neither a loop variable carried unchanged "
                 "nor a conditional's argument";
  }
  if (IsFunctionalLoop(op)) return CheckLoop(n, lookup, table, depth + 1);
  if (IsFunctionalConditional(op)) {
    return CheckConditional(n, lookup, table, depth + 1, readable);
  }
  const tensorflow::OpDef* op_def = nullptr;
  if (!tensorflow::OpRegistry::Global()->LookUpOpDef(op, &op_def).ok()) {
    return op + " (a function call)";
  }
  if (op_def->is_stateful()) return op + " is stateful";
  tensorflow::DataTypeVector in, out;
  if (!tensorflow::InOutTypesForNode(n, *op_def, &in, &out).ok()) {
    return op + ": input/output types not computable";
  }
  if (HasType(in, tensorflow::DT_RESOURCE) || HasType(out, tensorflow::DT_RESOURCE)) {
    return op + " reads a resource";
  }
  const bool lists = HasType(in, tensorflow::DT_VARIANT) || HasType(out, tensorflow::DT_VARIANT);
  if (lists && !MayCarryList(op, table)) return op + " on a TensorList";
  if (lists && (op == "Identity" || op == "IdentityN")) return "";
  if (!table.HasOp(op)) return op;
  std::string refused;
  const OpSupport* support = table.Match(n, *op_def, &refused);
  if (support == nullptr) return op + " with " + refused;
  if (lists) {  // a list's element shape must be known when the loop is compiled:
    // a constant, the shape of a tensor or of a list's elements (dims the
    // compiler knows), or one a gradient's shape accumulator pops (a host
    // list, compiler/ops/tensor_list.py)
    static const std::set<std::string>* known = new std::set<std::string>{
        "Const", "Shape", "TensorListElementShape", "TensorListPopBack"};
    const int data_inputs = static_cast<int>(
        std::count_if(n.input().begin(), n.input().end(),
                      [](const std::string& s) { return s.empty() || s[0] != '^'; }));
    for (int p : support->const_inputs) {
      const int i = OpSupport::InputIndex(p, data_inputs);
      auto it = i >= 0 && i < data_inputs ? producers.find(RefNode(n.input(i))) : producers.end();
      if (it == producers.end() || !known->count(it->second)) {
        return op + " with a data-dependent element shape (input " + std::to_string(i) + ")";
      }
    }
  }
  return "";
}

std::string CheckFunction(const FunctionDef& f, const std::set<std::string>& readable,
                          const FunctionLookup& lookup, const SupportTable& table,
                          int depth) {
  ProducerOps producers;
  for (const NodeDef& n : f.node_def()) producers[n.name()] = n.op();
  for (const NodeDef& n : f.node_def()) {
    std::string why = CheckNode(n, readable, producers, lookup, table, depth);
    if (!why.empty()) return f.signature().name() + ": " + why + " (node " + n.name() + ")";
  }
  return "";
}

}  // namespace

FunctionLookup LibraryLookup(const tensorflow::FunctionDefLibrary& library) {
  auto index = std::make_shared<std::unordered_map<std::string, const FunctionDef*>>();
  for (const FunctionDef& f : library.function()) (*index)[f.signature().name()] = &f;
  return [index](const std::string& name) -> const FunctionDef* {
    auto it = index->find(name);
    return it == index->end() ? nullptr : it->second;
  };
}

bool IsFunctionalLoop(const std::string& op) {
  return op == "While" || op == "StatelessWhile";
}

bool IsFunctionalConditional(const std::string& op) {
  return op == "If" || op == "StatelessIf" || op == "Case" || op == "StatelessCase";
}

bool IsFunctionalControlFlow(const std::string& op) {
  return IsFunctionalLoop(op) || IsFunctionalConditional(op);
}

std::string ControlFlowRejectReason(const NodeDef& node, const FunctionLookup& lookup,
                                    const SupportTable& table) {
  if (!table.HasOp(node.op())) return node.op();
  return IsFunctionalLoop(node.op()) ? CheckLoop(node, lookup, table, 0)
                                     : CheckConditional(node, lookup, table, 0, {});
}

bool LoopVarPassesThrough(const FunctionDef& body, int k) {
  if (k >= body.signature().input_arg_size() || k >= body.signature().output_arg_size()) {
    return false;
  }
  auto it = body.ret().find(body.signature().output_arg(k).name());
  return it != body.ret().end() && it->second == body.signature().input_arg(k).name();
}

bool IsListOp(const std::string& op) {
  return op.rfind("TensorList", 0) == 0 || op == "EmptyTensorList";
}

bool MayCarryList(const std::string& op, const SupportTable& table) {
  return (IsListOp(op) && table.HasOp(op)) || IsFunctionalLoop(op) ||
         op == "Identity" || op == "IdentityN" || op == "ZerosLike" || op == "AddN";
}

namespace {

// Output port types of a GraphDef node (empty when unknown).
tensorflow::DataTypeVector OutputTypes(const NodeDef& n) {
  tensorflow::DataTypeVector in, out;
  const tensorflow::OpDef* op_def = nullptr;
  if (!tensorflow::OpRegistry::Global()->LookUpOpDef(n.op(), &op_def).ok() ||
      !tensorflow::InOutTypesForNode(n, *op_def, &in, &out).ok()) {
    out.clear();
  }
  return out;
}

}  // namespace

VariantEdgeList VariantEdges(const GraphIndex& index) {
  const tensorflow::GraphDef& graph = *index.graph;
  std::vector<tensorflow::DataTypeVector> types(graph.node_size());
  std::vector<char> typed(graph.node_size(), 0);
  VariantEdgeList edges;
  for (int d = 0; d < graph.node_size(); ++d) {
    for (const GraphEdge& e : index.in_edges[d]) {
      if (e.src_port < 0) continue;  // control edge
      if (!typed[e.src]) {
        types[e.src] = OutputTypes(graph.node(e.src));
        typed[e.src] = 1;
      }
      if (e.src_port < static_cast<int>(types[e.src].size()) &&
          types[e.src][e.src_port] == tensorflow::DT_VARIANT) {
        edges.emplace_back(e.src, d);
      }
    }
  }
  return edges;
}

int KeepListsInside(const tensorflow::GraphDef& graph, const VariantEdgeList& edges,
                    std::vector<const OpSupport*>* clusterable,
                    std::vector<std::string>* reasons) {
  int changed = 0;
  for (bool again = true; again;) {
    again = false;
    for (const auto& e : edges) {
      const bool s = (*clusterable)[e.first] != nullptr, d = (*clusterable)[e.second] != nullptr;
      if (s == d) continue;
      const int keep_out = s ? e.first : e.second, other = s ? e.second : e.first;
      (*clusterable)[keep_out] = nullptr;
      if (reasons != nullptr) {
        (*reasons)[keep_out] = "stateful/resource: its TensorList is used by " +
                               graph.node(other).name() + ", which stays in TF";
      }
      ++changed;
      again = true;
    }
  }
  return changed;
}

std::vector<int> ListsAcrossClusters(const VariantEdgeList& edges,
                                     const std::vector<int>& cluster_of) {
  std::vector<int> out;
  for (const auto& e : edges) {
    if (cluster_of[e.first] != cluster_of[e.second]) {
      out.push_back(e.first);
      out.push_back(e.second);
    }
  }
  return out;
}

void AttachNestedFunctions(const tensorflow::FunctionDefLibrary& library, FunctionDef* fdef) {
  FunctionLookup lookup = LibraryLookup(library);
  std::set<std::string> seen;
  std::vector<const FunctionDef*> todo = {fdef};
  while (!todo.empty()) {
    const FunctionDef* f = todo.back();
    todo.pop_back();
    for (const NodeDef& n : f->node_def()) {
      for (const auto& kv : n.attr()) {
        std::vector<std::string> names;  // a loop's cond/body, an If's or Case's branches
        if (kv.second.has_func()) names.push_back(kv.second.func().name());
        for (const auto& g : kv.second.list().func()) names.push_back(g.name());
        for (const std::string& name : names) {
          const FunctionDef* g = lookup(name);
          if (g != nullptr && seen.insert(name).second) todo.push_back(g);
        }
      }
    }
  }
  if (seen.empty()) return;
  AttrValue::ListValue* list = (*fdef->mutable_attr())["_disc_nested_functions"].mutable_list();
  for (const std::string& name : seen) {  // sorted: the cluster's name hashes them
    std::string bytes;
    tensorflow::SerializeToStringDeterministic(*lookup(name), &bytes);
    list->add_s(bytes);
  }
}

}  // namespace tf_disc
