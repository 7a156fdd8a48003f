// A small JSON reader/writer for the bridge's options, support table, compile
// requests and replies.  Hand-written to add no dependency to the op library.
#ifndef TF_DISC_COMMON_JSON_H_
#define TF_DISC_COMMON_JSON_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tf_disc {
namespace json {

class Value {
 public:
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Value() = default;
  static Value Bool(bool b);
  static Value Number(double d);
  static Value String(std::string s);
  static Value Array();
  static Value Object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == kNull; }
  bool is_bool() const { return kind_ == kBool; }
  bool is_number() const { return kind_ == kNumber; }
  bool is_string() const { return kind_ == kString; }
  bool is_array() const { return kind_ == kArray; }
  bool is_object() const { return kind_ == kObject; }

  bool as_bool() const { return bool_; }
  double as_number() const { return number_; }
  // True when the number is integral (within int64 range).
  bool is_integer() const;
  int64_t as_int() const { return static_cast<int64_t>(number_); }
  const std::string& as_string() const { return string_; }
  const std::vector<Value>& items() const { return array_; }
  std::vector<Value>& items() { return array_; }
  const std::map<std::string, Value>& members() const { return object_; }
  std::map<std::string, Value>& members() { return object_; }

  // Object member or nullptr when absent (or not an object).
  const Value* Find(const std::string& key) const;

 private:
  Kind kind_ = kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Value> array_;
  std::map<std::string, Value> object_;
};

// Parses a whole document; false (with a message in *error) on bad input.
bool Parse(const std::string& text, Value* out, std::string* error);

// Appends `s` as a quoted JSON string.
void AppendQuoted(const std::string& s, std::string* out);
// Formats a double compactly ("1", "0.25"); non-finite values become null.
std::string FormatNumber(double d);

}  // namespace json
}  // namespace tf_disc

#endif  // TF_DISC_COMMON_JSON_H_
