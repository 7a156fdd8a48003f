#include "tf_disc/common/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tf_disc {
namespace json {

Value Value::Bool(bool b) { Value v; v.kind_ = kBool; v.bool_ = b; return v; }
Value Value::Number(double d) { Value v; v.kind_ = kNumber; v.number_ = d; return v; }
Value Value::String(std::string s) {
  Value v; v.kind_ = kString; v.string_ = std::move(s); return v;
}
Value Value::Array() { Value v; v.kind_ = kArray; return v; }
Value Value::Object() { Value v; v.kind_ = kObject; return v; }

bool Value::is_integer() const {
  return kind_ == kNumber && std::floor(number_) == number_ &&
         std::fabs(number_) < 9.2e18;
}

const Value* Value::Find(const std::string& key) const {
  if (kind_ != kObject) return nullptr;
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &it->second;
}

namespace {

// Recursive-descent parser over a string; depth-limited so hostile input
// cannot overflow the stack.
class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  bool ParseDocument(Value* out, std::string* error) {
    bool ok = ParseValue(out, 0);
    SkipSpace();
    if (ok && pos_ != s_.size()) { ok = false; error_ = "trailing characters"; }
    if (!ok && error) {
      *error = error_.empty() ? "malformed JSON" : error_;
      *error += " at offset " + std::to_string(pos_);
    }
    return ok;
  }

 private:
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Fail(const char* msg) { error_ = msg; return false; }
  bool Literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) != 0) return Fail("bad literal");
    pos_ += n;
    return true;
  }

  bool ParseValue(Value* out, int depth) {
    if (depth > 64) return Fail("nesting too deep");
    SkipSpace();
    if (pos_ >= s_.size()) return Fail("unexpected end");
    char c = s_[pos_];
    if (c == '{') return ParseObject(out, depth);
    if (c == '[') return ParseArray(out, depth);
    if (c == '"') {
      std::string str;
      if (!ParseString(&str)) return false;
      *out = Value::String(std::move(str));
      return true;
    }
    if (c == 't') { *out = Value::Bool(true); return Literal("true"); }
    if (c == 'f') { *out = Value::Bool(false); return Literal("false"); }
    if (c == 'n') { *out = Value(); return Literal("null"); }
    return ParseNumber(out);
  }

  bool ParseNumber(Value* out) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    bool digits = false;
    while (pos_ < s_.size() &&
           (isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
            s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' ||
            s_[pos_] == '-')) {
      digits = digits || isdigit(static_cast<unsigned char>(s_[pos_]));
      ++pos_;
    }
    if (!digits) return Fail("bad number");
    std::string text = s_.substr(start, pos_ - start);
    char* end = nullptr;
    double d = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return Fail("bad number");
    *out = Value::Number(d);
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool ParseHex4(uint32_t* cp) {
    if (pos_ + 4 > s_.size()) return Fail("bad escape");
    *cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[pos_++];
      *cp <<= 4;
      if (h >= '0' && h <= '9') *cp |= h - '0';
      else if (h >= 'a' && h <= 'f') *cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') *cp |= h - 'A' + 10;
      else return Fail("bad escape");
    }
    return true;
  }

  bool ParseString(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') { out->push_back(c); continue; }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!ParseHex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            uint32_t lo;
            if (!ParseHex4(&lo)) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default: return Fail("bad escape");
      }
    }
    return Fail("unterminated string");
  }

  bool ParseArray(Value* out, int depth) {
    ++pos_;
    *out = Value::Array();
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return true; }
    while (true) {
      Value item;
      if (!ParseValue(&item, depth + 1)) return false;
      out->items().push_back(std::move(item));
      SkipSpace();
      if (pos_ >= s_.size()) return Fail("unterminated array");
      char c = s_[pos_++];
      if (c == ']') return true;
      if (c != ',') return Fail("expected , or ]");
    }
  }

  bool ParseObject(Value* out, int depth) {
    ++pos_;
    *out = Value::Object();
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return true; }
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected key");
      std::string key;
      if (!ParseString(&key)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_++] != ':') return Fail("expected :");
      Value item;
      if (!ParseValue(&item, depth + 1)) return false;
      out->members()[key] = std::move(item);
      SkipSpace();
      if (pos_ >= s_.size()) return Fail("unterminated object");
      char c = s_[pos_++];
      if (c == '}') return true;
      if (c != ',') return Fail("expected , or }");
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

bool Parse(const std::string& text, Value* out, std::string* error) {
  Value v;
  if (!Parser(text).ParseDocument(&v, error)) return false;
  *out = std::move(v);
  return true;
}

void AppendQuoted(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

std::string FormatNumber(double d) {
  if (!std::isfinite(d)) return "null";
  char buf[32];
  if (std::floor(d) == d && std::fabs(d) < 1e15) {
    snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(d));
  } else {
    snprintf(buf, sizeof(buf), "%.17g", d);
  }
  return buf;
}

}  // namespace json
}  // namespace tf_disc
