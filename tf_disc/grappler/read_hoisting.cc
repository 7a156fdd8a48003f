#include "tf_disc/grappler/read_hoisting.h"

#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/function.pb.h"
#include "tf_disc/grappler/loop_support.h"

namespace tf_disc {
namespace {

using tensorflow::DataType;
using tensorflow::FunctionDef;
using tensorflow::NodeDef;

// The name suffix of a function copy HoistInvariantReads makes.
constexpr char kValuesSuffix[] = "_disc_values";

// Rounds of hoisting inside functions: conditionals nested deeper than this
// keep their resources (and stay in TF).
constexpr int kMaxRounds = 8;

// f with arguments `types` (by index) taken as values of those types
// instead of resources: their ReadVariableOps become Identity.  A loop's
// cond and body (`carried`) return the same type for each.
FunctionDef WithValues(const FunctionDef& f, const std::map<int, DataType>& types,
                       const std::string& name, bool carried) {
  FunctionDef g = f;
  g.mutable_signature()->set_name(name);
  std::set<std::string> args;
  for (const auto& kv : types) {
    g.mutable_signature()->mutable_input_arg(kv.first)->set_type(kv.second);
    if (carried && kv.first < g.signature().output_arg_size()) {
      g.mutable_signature()->mutable_output_arg(kv.first)->set_type(kv.second);
    }
    g.mutable_arg_attr()->erase(kv.first);
    g.mutable_resource_arg_unique_id()->erase(kv.first);
    args.insert(g.signature().input_arg(kv.first).name());
  }
  std::set<std::string> reads;
  for (NodeDef& n : *g.mutable_node_def()) {
    if (n.op() != "ReadVariableOp" || n.input_size() == 0 || !args.count(n.input(0))) continue;
    const DataType t = n.attr().at("dtype").type();
    n.set_op("Identity");
    n.mutable_attr()->erase("dtype");
    (*n.mutable_attr())["T"].set_type(t);
    reads.insert(n.name());
  }
  // ReadVariableOp's output is "value", Identity's "output".
  auto rename = [&reads](std::string* ref) {
    const size_t colon = ref->find(':');
    if (colon == std::string::npos || !reads.count(ref->substr(0, colon))) return;
    const std::string rest = ref->substr(colon);
    if (rest.rfind(":value:", 0) == 0) {
      *ref = ref->substr(0, colon) + ":output:" + rest.substr(7);
    }
  };
  for (NodeDef& n : *g.mutable_node_def()) {
    for (std::string& in : *n.mutable_input()) rename(&in);
  }
  for (auto& kv : *g.mutable_ret()) rename(&kv.second);
  return g;
}

// Where a hoisted read goes: a graph's node (referred to by name) or a
// function's (by "name:value:0", and with no '/' in its name).
enum class Scope { kGraph, kFunction };

// A ReadVariableOp of node's input `input` (a resource), ordered after what
// node waits for.
NodeDef ReadBefore(const NodeDef& node, int input, DataType dtype, Scope scope) {
  NodeDef read;
  read.set_name(node.name() + (scope == Scope::kGraph ? "/" : "_") + "disc_read_" +
                std::to_string(input));
  read.set_op("ReadVariableOp");
  read.set_device(node.device());
  read.add_input(node.input(input));
  for (const std::string& in : node.input()) {
    if (!in.empty() && in[0] == '^') read.add_input(in);
  }
  (*read.mutable_attr())["dtype"].set_type(dtype);
  return read;
}

// The reads of the qualifying loop `node`'s invariant resources, moved
// before it (see HoistInvariantReads); false when it has none.
bool HoistLoopReads(const FunctionLookup& lookup, const std::unordered_set<std::string>& used,
                    NodeDef* node, std::vector<FunctionDef>* added, std::vector<NodeDef>* reads) {
  const FunctionDef* cond = lookup(FuncAttr(*node, "cond"));
  const FunctionDef* body = lookup(FuncAttr(*node, "body"));
  std::vector<DataType> types = TypesAttr(*node, "T");
  std::map<int, DataType> values;
  for (size_t k = 0; k < types.size(); ++k) {
    const bool passed_on = used.count(node->name() + ":" + std::to_string(k)) > 0;
    if (types[k] != tensorflow::DT_RESOURCE || passed_on) continue;
    for (int i : ArgReaders(*body, body->signature().input_arg(k).name())) {
      values[static_cast<int>(k)] = body->node_def(i).attr().at("dtype").type();
    }
  }
  if (values.empty()) return false;
  for (const FunctionDef* f : {cond, body}) {
    added->push_back(WithValues(*f, values, f->signature().name() + kValuesSuffix, true));
  }
  for (const auto& kv : values) {
    reads->push_back(ReadBefore(*node, kv.first, kv.second, Scope::kGraph));
    node->set_input(kv.first, reads->back().name());
    node->mutable_attr()->at("T").mutable_list()->set_type(kv.first, kv.second);
  }
  node->mutable_attr()->erase("_read_only_resource_inputs");
  (*node->mutable_attr())["cond"].mutable_func()->set_name(
      added->at(added->size() - 2).signature().name());
  (*node->mutable_attr())["body"].mutable_func()->set_name(added->back().signature().name());
  return true;
}

// The same for the qualifying conditional `node`: every resource argument
// is read before it (its input k + 1: the predicate or index comes first).
bool HoistConditionalReads(const FunctionLookup& lookup, Scope scope, NodeDef* node,
                           std::vector<FunctionDef>* added, std::vector<NodeDef>* reads) {
  const std::vector<const FunctionDef*> branches = BranchFunctions(*node, lookup);
  const std::vector<DataType> types = TypesAttr(*node, "Tin");
  std::map<int, DataType> values;
  for (size_t k = 0; k < types.size(); ++k) {
    if (types[k] == tensorflow::DT_RESOURCE) {
      values[static_cast<int>(k)] = ReadOnlyResourceType(branches, static_cast<int>(k));
    }
  }
  if (values.empty()) return false;
  std::vector<std::string> names;
  for (const FunctionDef* f : branches) {
    added->push_back(WithValues(*f, values, f->signature().name() + kValuesSuffix, false));
    names.push_back(added->back().signature().name());
  }
  for (const auto& kv : values) {
    reads->push_back(ReadBefore(*node, kv.first + 1, kv.second, scope));
    node->set_input(kv.first + 1,
                    reads->back().name() + (scope == Scope::kGraph ? "" : ":value:0"));
    node->mutable_attr()->at("Tin").mutable_list()->set_type(kv.first, kv.second);
  }
  node->mutable_attr()->erase("_read_only_resource_inputs");
  if (node->attr().count("branches")) {
    auto* fs = (*node->mutable_attr())["branches"].mutable_list()->mutable_func();
    for (int i = 0; i < fs->size(); ++i) fs->Mutable(i)->set_name(names[i]);
  } else {
    (*node->mutable_attr())["then_branch"].mutable_func()->set_name(names[0]);
    (*node->mutable_attr())["else_branch"].mutable_func()->set_name(names[1]);
  }
  return true;
}

// Adds `added` to the library, skipping names it already has.
void AddFunctions(std::vector<FunctionDef>* added, tensorflow::FunctionDefLibrary* library) {
  std::unordered_set<std::string> names;
  for (const FunctionDef& f : library->function()) names.insert(f.signature().name());
  for (FunctionDef& f : *added) {
    if (names.insert(f.signature().name()).second) *library->add_function() = std::move(f);
  }
  added->clear();
}

// One round of HoistConditionalReads inside every library function (each
// function changed in place: the same computation, reads moved earlier
// within it); how many conditionals changed.
int HoistReadsInFunctions(const SupportTable& table, tensorflow::FunctionDefLibrary* library) {
  std::vector<FunctionDef> added;
  int changed = 0;
  {
    FunctionLookup lookup = LibraryLookup(*library);
    for (FunctionDef& f : *library->mutable_function()) {
      std::vector<NodeDef> reads;
      for (NodeDef& node : *f.mutable_node_def()) {
        if (IsFunctionalConditional(node.op()) &&
            ControlFlowRejectReason(node, lookup, table).empty()) {
          changed += HoistConditionalReads(lookup, Scope::kFunction, &node, &added, &reads);
        }
      }
      for (NodeDef& r : reads) *f.add_node_def() = std::move(r);
    }
  }
  AddFunctions(&added, library);
  return changed;
}

}  // namespace

int HoistInvariantReads(const SupportTable& table, tensorflow::GraphDef* graph) {
  int changed = 0;
  // Innermost first: a branch's own conditional, then the one calling it.
  for (int round = 0; round < kMaxRounds; ++round) {
    const int n = HoistReadsInFunctions(table, graph->mutable_library());
    if (n == 0) break;
    changed += n;
  }
  FunctionLookup lookup = LibraryLookup(graph->library());
  std::unordered_set<std::string> used_outputs;  // "node:port" read by anything
  for (const NodeDef& n : graph->node()) {
    for (const std::string& in : n.input()) used_outputs.insert(in);
  }
  std::vector<FunctionDef> added;
  std::vector<NodeDef> reads;
  for (NodeDef& node : *graph->mutable_node()) {
    if (!IsFunctionalControlFlow(node.op()) ||
        !ControlFlowRejectReason(node, lookup, table).empty()) {
      continue;
    }
    changed += IsFunctionalLoop(node.op())
                   ? HoistLoopReads(lookup, used_outputs, &node, &added, &reads)
                   : HoistConditionalReads(lookup, Scope::kGraph, &node, &added, &reads);
  }
  AddFunctions(&added, graph->mutable_library());
  for (NodeDef& r : reads) *graph->add_node() = std::move(r);
  return changed;
}

}  // namespace tf_disc
