// Process-wide table of TF ops the optimizer may cluster (DiscSetSupportTable).
#ifndef TF_DISC_GRAPPLER_SUPPORT_TABLE_H_
#define TF_DISC_GRAPPLER_SUPPORT_TABLE_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/framework/op_def.pb.h"

namespace tf_disc {

struct OpSupport {
  // attr -> allowed DataType enums (type or list(type) attrs).
  std::map<std::string, std::set<int>> type_attrs;
  // attr -> allowed values, encoded as "s:<str>", "i:<int>", "b:<0|1>", ...
  std::map<std::string, std::set<std::string>> attr_values;
  // Inputs whose values the compiler needs (-1: the last data input, as
  // ConcatV2's axis after its N values).
  std::set<int> const_inputs;
  // Inputs the executable can read at run time when their shape is proven
  // (a scalar or a short vector); otherwise treated as const_inputs.
  std::set<int> value_inputs;
  // fast_math="bf16" may change the op's lowering (a `dot` or a conv
  // window; compiler/registry.py FAST_MATH_OPS).
  bool fast_math = false;

  // A table port as a data input index of a node with `num_inputs` of
  // them (-1: the last).
  static int InputIndex(int port, int num_inputs) { return port == -1 ? num_inputs - 1 : port; }

  // Whether data input `port` of a node with `num_inputs` of them is a
  // const input.
  bool IsConstInput(int port, int num_inputs) const {
    for (int p : const_inputs) {
      if (InputIndex(p, num_inputs) == port) return true;
    }
    return false;
  }
};

class SupportTable {
 public:
  // The entry for node's op when its attrs pass the table's checks (attrs
  // missing from the node take their OpDef default), else nullptr and, when
  // `why` is given, the refused attr as "name=value".
  const OpSupport* Match(const tensorflow::NodeDef& node, const tensorflow::OpDef& op_def,
                         std::string* why = nullptr) const;
  bool HasOp(const std::string& op) const { return ops_.count(op) > 0; }

  std::unordered_map<std::string, OpSupport> ops_;
};

// The current table, or nullptr when none was set.  Snapshot semantics: a
// running optimizer keeps the table it started with.
std::shared_ptr<const SupportTable> GetSupportTable();

// Parses and installs a table; false (table unchanged) on malformed JSON.
bool SetSupportTableFromJson(const std::string& json, std::string* error);

// Encodes one AttrValue scalar the way attr_values entries are stored.
std::string EncodeAttrScalar(const tensorflow::AttrValue& value);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_SUPPORT_TABLE_H_
