#include "tf_disc/grappler/support_table.h"

#include <algorithm>
#include <set>

#include <mutex>

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/attr_value_util.h"
#include "tf_disc/common/json.h"

namespace tf_disc {
namespace {

std::mutex& TableMutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}

std::shared_ptr<const SupportTable>& TableSlot() {
  static auto* slot = new std::shared_ptr<const SupportTable>;
  return *slot;
}

// JSON scalar -> the encoding EncodeAttrScalar produces for a matching attr.
bool EncodeJsonScalar(const json::Value& v, std::vector<std::string>* out) {
  if (v.is_string()) {
    out->push_back("s:" + v.as_string());
  } else if (v.is_bool()) {
    out->push_back(std::string("b:") + (v.as_bool() ? "1" : "0"));
  } else if (v.is_integer()) {
    // An integer may mean an int attr or a DataType enum.
    out->push_back("i:" + std::to_string(v.as_int()));
    out->push_back("t:" + std::to_string(v.as_int()));
    out->push_back("f:" + json::FormatNumber(v.as_number()));
  } else if (v.is_number()) {
    out->push_back("f:" + json::FormatNumber(v.as_number()));
  } else {
    return false;
  }
  return true;
}

const tensorflow::AttrValue* FindAttr(const tensorflow::NodeDef& node,
                                      const tensorflow::OpDef& op_def,
                                      const std::string& name) {
  auto it = node.attr().find(name);
  if (it != node.attr().end()) return &it->second;
  for (const auto& a : op_def.attr()) {
    if (a.name() == name && a.has_default_value()) return &a.default_value();
  }
  return nullptr;
}

}  // namespace

std::string EncodeAttrScalar(const tensorflow::AttrValue& v) {
  switch (v.value_case()) {
    case tensorflow::AttrValue::kS: return "s:" + v.s();
    case tensorflow::AttrValue::kI: return "i:" + std::to_string(v.i());
    case tensorflow::AttrValue::kB: return std::string("b:") + (v.b() ? "1" : "0");
    case tensorflow::AttrValue::kType: return "t:" + std::to_string(v.type());
    case tensorflow::AttrValue::kF: return "f:" + json::FormatNumber(v.f());
    default: return "";
  }
}

// Einsum equations the compiler lowers to one GEMM (mirror of
// compiler/ops/matmul.py einsum_plan without ranks; the Python side is
// authoritative, this only keeps other equations out of clusters).  Two
// operands, explicit output, at most one "..." per term (in the output iff
// in an input; it stands for one label here), no repeated label within a
// term, no label summed within one term; any label order, missing
// contracted/free groups become unit dims.
static bool EinsumIsDot(std::string eq) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->"), comma = eq.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow ||
      eq.find(',', comma + 1) != std::string::npos) {
    return false;
  }
  std::string terms[3] = {eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1),
                          eq.substr(arrow + 2)};
  bool ellipsis[3];
  for (int t = 0; t < 3; ++t) {
    const size_t at = terms[t].find("...");
    ellipsis[t] = at != std::string::npos;
    if (ellipsis[t]) terms[t].replace(at, 3, "\x01");  // one placeholder label
    if (terms[t].find_first_of(".->") != std::string::npos) return false;
  }
  if ((ellipsis[0] || ellipsis[1]) != ellipsis[2]) return false;
  const std::string &lhs = terms[0], &rhs = terms[1], &out = terms[2];
  auto has = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
  for (const std::string& t : terms) {
    if (std::set<char>(t.begin(), t.end()).size() != t.size()) return false;
  }
  for (char c : out) if (!has(lhs, c) && !has(rhs, c)) return false;
  for (char c : lhs) if (!has(out, c) && !has(rhs, c)) return false;
  for (char c : rhs) if (!has(out, c) && !has(lhs, c)) return false;
  return true;
}

// attr_values token: the value must be an Einsum equation EinsumIsDot takes.
constexpr char kEinsumDotToken[] = "s:<einsum_dot>";

namespace {

// Whether every element of a list attr is allowed.
bool ListAllowed(const tensorflow::AttrValue::ListValue& l, const std::set<std::string>& ok) {
  for (const auto& s : l.s()) if (!ok.count("s:" + s)) return false;
  for (auto i : l.i()) if (!ok.count("i:" + std::to_string(i))) return false;
  for (bool b : l.b()) if (!ok.count(b ? "b:1" : "b:0")) return false;
  for (int t : l.type()) if (!ok.count("t:" + std::to_string(t))) return false;
  return true;
}

bool ValueAllowed(const tensorflow::AttrValue& v, const std::set<std::string>& ok) {
  if (v.value_case() == tensorflow::AttrValue::kList) return ListAllowed(v.list(), ok);
  if (ok.count(kEinsumDotToken) && v.value_case() == tensorflow::AttrValue::kS) {
    return EinsumIsDot(v.s());
  }
  return ok.count(EncodeAttrScalar(v)) > 0;
}

// DT_VARIANT (a TensorList) passes here as in the compiler's attr check
// (frontend/lower.py): which ops may carry one is clustering.cc's rule
// (HasUnsupportedType with MayCarryList), e.g. an Identity between loops.
bool TypeAllowed(const tensorflow::AttrValue& v, const std::set<int>& ok) {
  auto allowed = [&ok](int t) { return t == tensorflow::DT_VARIANT || ok.count(t) > 0; };
  if (v.value_case() == tensorflow::AttrValue::kType) return allowed(v.type());
  if (v.value_case() != tensorflow::AttrValue::kList) return false;
  for (int t : v.list().type()) if (!allowed(t)) return false;
  return true;
}

}  // namespace

const OpSupport* SupportTable::Match(const tensorflow::NodeDef& node,
                                     const tensorflow::OpDef& op_def,
                                     std::string* why) const {
  auto it = ops_.find(node.op());
  if (it == ops_.end()) return nullptr;
  const OpSupport& support = it->second;
  // The first attr the table refuses, as "name=value" for explain().
  auto refuse = [&](const std::string& name, const tensorflow::AttrValue* v) {
    if (why != nullptr) {
      *why = name + "=" + (v == nullptr ? "<missing>" : tensorflow::SummarizeAttrValue(*v));
    }
    return nullptr;
  };
  for (const auto& kv : support.type_attrs) {
    const tensorflow::AttrValue* v = FindAttr(node, op_def, kv.first);
    if (v == nullptr || !TypeAllowed(*v, kv.second)) return refuse(kv.first, v);
  }
  for (const auto& kv : support.attr_values) {
    const tensorflow::AttrValue* v = FindAttr(node, op_def, kv.first);
    if (v == nullptr) continue;  // attr absent: nothing to restrict
    if (!ValueAllowed(*v, kv.second)) return refuse(kv.first, v);
  }
  return &support;
}

std::shared_ptr<const SupportTable> GetSupportTable() {
  std::lock_guard<std::mutex> lock(TableMutex());
  return TableSlot();
}

bool SetSupportTableFromJson(const std::string& text, std::string* error) {
  json::Value doc;
  if (!json::Parse(text, &doc, error)) return false;
  const json::Value* ops = doc.Find("ops");
  if (ops == nullptr || !ops->is_object()) {
    *error = "support table needs an \"ops\" object";
    return false;
  }
  auto table = std::make_shared<SupportTable>();
  for (const auto& op : ops->members()) {
    if (!op.second.is_object()) {
      *error = "entry for op " + op.first + " is not an object";
      return false;
    }
    OpSupport support;
    if (const json::Value* ta = op.second.Find("type_attrs")) {
      if (!ta->is_object()) { *error = op.first + ": bad type_attrs"; return false; }
      for (const auto& kv : ta->members()) {
        if (!kv.second.is_array()) { *error = op.first + ": bad type_attrs"; return false; }
        std::set<int>& allowed = support.type_attrs[kv.first];
        for (const auto& t : kv.second.items()) {
          if (!t.is_integer()) { *error = op.first + ": bad dtype"; return false; }
          allowed.insert(static_cast<int>(t.as_int()));
        }
      }
    }
    if (const json::Value* av = op.second.Find("attr_values")) {
      if (!av->is_object()) { *error = op.first + ": bad attr_values"; return false; }
      for (const auto& kv : av->members()) {
        if (!kv.second.is_array()) { *error = op.first + ": bad attr_values"; return false; }
        std::set<std::string>& allowed = support.attr_values[kv.first];
        for (const auto& v : kv.second.items()) {
          std::vector<std::string> enc;
          if (!EncodeJsonScalar(v, &enc)) { *error = op.first + ": bad attr value"; return false; }
          allowed.insert(enc.begin(), enc.end());
        }
      }
    }
    for (const char* field : {"const_inputs", "value_inputs"}) {
      const json::Value* ci = op.second.Find(field);
      if (ci == nullptr) continue;
      std::set<int>& into = field[0] == 'c' ? support.const_inputs : support.value_inputs;
      if (!ci->is_array()) { *error = op.first + ": bad " + field; return false; }
      for (const auto& i : ci->items()) {
        const bool last = field[0] == 'c' && i.is_integer() && i.as_int() == -1;
        if (!i.is_integer() || (i.as_int() < 0 && !last)) {
          *error = op.first + ": bad " + field;
          return false;
        }
        into.insert(static_cast<int>(i.as_int()));
      }
    }
    if (const json::Value* fast_math = op.second.Find("fast_math")) {
      if (!fast_math->is_bool()) { *error = op.first + ": bad fast_math"; return false; }
      support.fast_math = fast_math->as_bool();
    }
    table->ops_[op.first] = std::move(support);
  }
  std::lock_guard<std::mutex> lock(TableMutex());
  TableSlot() = std::move(table);
  return true;
}

}  // namespace tf_disc
