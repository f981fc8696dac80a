#include "core/op_registry.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/logging.h"
#include "core/tensor_shape.h"
#include "core/types.h"

namespace overseer {
namespace {

absl::Status SpecError(const std::string& op, const std::string& spec, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("op ", op, ": bad spec '", spec, "': ", why));
}

// Splits "name: rest" into its two trimmed halves.
bool SplitNameAndRest(absl::string_view spec, std::string* name, std::string* rest) {
  const size_t colon = spec.find(':');
  if (colon == absl::string_view::npos) return false;
  *name = std::string(absl::StripAsciiWhitespace(spec.substr(0, colon)));
  *rest = std::string(absl::StripAsciiWhitespace(spec.substr(colon + 1)));
  return !name->empty() && !rest->empty();
}

absl::StatusOr<ArgDef> ParseArg(const std::string& op, const std::string& spec) {
  ArgDef arg;
  std::string rest;
  if (!SplitNameAndRest(spec, &arg.name, &rest)) {
    return SpecError(op, spec, "expected 'name: type'");
  }
  absl::string_view r = rest;
  if (absl::ConsumePrefix(&r, "Ref(")) {
    if (!absl::ConsumeSuffix(&r, ")")) return SpecError(op, spec, "unclosed Ref(");
    arg.is_ref = true;
  }
  const size_t star = r.find('*');
  if (star != absl::string_view::npos) {
    arg.number_attr = std::string(absl::StripAsciiWhitespace(r.substr(0, star)));
    r = absl::StripAsciiWhitespace(r.substr(star + 1));
  }
  auto fixed = DataTypeFromString(r);
  if (fixed.ok()) {
    arg.type = *fixed;
  } else {
    arg.type_attr = std::string(r);  // Resolved against attrs in Build().
  }
  return arg;
}

absl::StatusOr<AttrValue> ParseDefault(const std::string& op, const std::string& spec,
                                       const std::string& type, absl::string_view text) {
  AttrValue v;
  text = absl::StripAsciiWhitespace(text);
  auto unquote = [](absl::string_view s) {
    if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) {
      s = s.substr(1, s.size() - 2);
    }
    return std::string(s);
  };
  auto parse_type = [](absl::string_view s) -> absl::StatusOr<DataType> {
    s = absl::StripAsciiWhitespace(s);
    if (absl::ConsumePrefix(&s, "DT_")) return DataTypeFromString(absl::AsciiStrToLower(s));
    return DataTypeFromString(s);
  };
  if (type == "int") {
    int64_t i;
    if (!absl::SimpleAtoi(text, &i)) return SpecError(op, spec, "bad int default");
    v.set_i(i);
  } else if (type == "float") {
    float f;
    if (!absl::SimpleAtof(text, &f)) return SpecError(op, spec, "bad float default");
    v.set_f(f);
  } else if (type == "bool") {
    if (text != "true" && text != "false") return SpecError(op, spec, "bad bool default");
    v.set_b(text == "true");
  } else if (type == "string") {
    v.set_s(unquote(text));
  } else if (type == "type") {
    auto t = parse_type(text);
    if (!t.ok()) return SpecError(op, spec, t.status().message());
    v.set_type(*t);
  } else if (type == "shape") {
    // Only "unknown" (unknown rank) or "[d0, d1]".
    if (text == "unknown" || text == "{ unknown_rank: true }") {
      v.mutable_shape()->set_unknown_rank(true);
    } else {
      absl::string_view body = text;
      if (!absl::ConsumePrefix(&body, "[") || !absl::ConsumeSuffix(&body, "]")) {
        return SpecError(op, spec, "bad shape default");
      }
      for (absl::string_view d : absl::StrSplit(body, ',', absl::SkipWhitespace())) {
        int64_t size;
        if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(d), &size)) {
          return SpecError(op, spec, "bad shape default");
        }
        v.mutable_shape()->add_dim()->set_size(size);
      }
    }
  } else if (absl::StartsWith(type, "list(")) {
    absl::string_view body = text;
    if (!absl::ConsumePrefix(&body, "[") || !absl::ConsumeSuffix(&body, "]")) {
      return SpecError(op, spec, "bad list default");
    }
    auto* list = v.mutable_list();
    for (absl::string_view item : absl::StrSplit(body, ',', absl::SkipWhitespace())) {
      item = absl::StripAsciiWhitespace(item);
      if (type == "list(int)") {
        int64_t i;
        if (!absl::SimpleAtoi(item, &i)) return SpecError(op, spec, "bad list(int)");
        list->add_i(i);
      } else if (type == "list(float)") {
        float f;
        if (!absl::SimpleAtof(item, &f)) return SpecError(op, spec, "bad list(float)");
        list->add_f(f);
      } else if (type == "list(string)") {
        list->add_s(unquote(item));
      } else if (type == "list(type)") {
        auto t = parse_type(item);
        if (!t.ok()) return SpecError(op, spec, t.status().message());
        list->add_type(*t);
      } else {
        return SpecError(op, spec, "only empty defaults for this list type");
      }
    }
  } else {
    return SpecError(op, spec, "defaults are not supported for this attr type");
  }
  return v;
}

absl::StatusOr<AttrDef> ParseAttr(const std::string& op, const std::string& spec) {
  AttrDef attr;
  std::string rest;
  if (!SplitNameAndRest(spec, &attr.name, &rest)) {
    return SpecError(op, spec, "expected 'name: type'");
  }
  std::string type_text = rest, default_text;
  // The default follows the first '=' that is not part of ">=".
  size_t eq = rest.find('=');
  while (eq != std::string::npos && eq > 0 && rest[eq - 1] == '>') {
    eq = rest.find('=', eq + 1);
  }
  bool has_default = false;
  if (eq != std::string::npos) {
    type_text = std::string(absl::StripAsciiWhitespace(rest.substr(0, eq)));
    default_text = std::string(absl::StripAsciiWhitespace(rest.substr(eq + 1)));
    has_default = true;
  }
  const size_t ge = type_text.find(">=");
  if (ge != std::string::npos) {
    int64_t minimum;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(type_text.substr(ge + 2)), &minimum)) {
      return SpecError(op, spec, "bad minimum");
    }
    attr.minimum = minimum;
    type_text = std::string(absl::StripAsciiWhitespace(type_text.substr(0, ge)));
  }
  if (!type_text.empty() && type_text.front() == '{') {
    if (type_text.back() != '}') return SpecError(op, spec, "unclosed type set");
    for (absl::string_view t :
         absl::StrSplit(type_text.substr(1, type_text.size() - 2), ',', absl::SkipWhitespace())) {
      auto dt = DataTypeFromString(absl::StripAsciiWhitespace(t));
      if (!dt.ok()) return SpecError(op, spec, dt.status().message());
      attr.allowed_types.push_back(*dt);
    }
    type_text = "type";
  }
  static const char* kTypes[] = {"type",        "int",         "float",      "bool",
                                 "string",      "shape",       "tensor",     "list(type)",
                                 "list(int)",   "list(float)", "list(bool)", "list(string)",
                                 "list(shape)", "list(tensor)"};
  bool known = false;
  for (const char* t : kTypes) known |= type_text == t;
  if (!known) return SpecError(op, spec, absl::StrCat("unknown attr type '", type_text, "'"));
  attr.type = type_text;
  if (has_default) {
    auto v = ParseDefault(op, spec, attr.type, default_text);
    if (!v.ok()) return v.status();
    attr.default_value = *std::move(v);
  }
  return attr;
}

}  // namespace

const AttrDef* OpDef::FindAttr(const std::string& attr_name) const {
  for (const AttrDef& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

OpDefBuilder::OpDefBuilder(std::string op_name) : name_(std::move(op_name)) {}

OpDefBuilder& OpDefBuilder::Input(const std::string& spec) {
  inputs_.push_back(spec);
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(const std::string& spec) {
  outputs_.push_back(spec);
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(const std::string& spec) {
  attrs_.push_back(spec);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsStateful() {
  stateful_ = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  shape_fn_ = std::move(fn);
  return *this;
}

absl::StatusOr<OpDef> OpDefBuilder::Build() const {
  OpDef def;
  def.name = name_;
  def.is_stateful = stateful_;
  def.shape_fn = shape_fn_;
  for (const auto& spec : attrs_) {
    auto a = ParseAttr(name_, spec);
    if (!a.ok()) return a.status();
    def.attrs.push_back(*std::move(a));
  }
  auto resolve = [&](const std::string& spec, std::vector<ArgDef>* out) -> absl::Status {
    auto arg = ParseArg(name_, spec);
    if (!arg.ok()) return arg.status();
    if (!arg->number_attr.empty()) {
      const AttrDef* n = def.FindAttr(arg->number_attr);
      if (n == nullptr || n->type != "int") {
        return SpecError(name_, spec, "the count must be an int attr");
      }
    }
    if (!arg->type_attr.empty()) {
      const AttrDef* t = def.FindAttr(arg->type_attr);
      if (t == nullptr) return SpecError(name_, spec, "unknown type attr");
      if (t->type == "list(type)") {
        arg->type_list_attr = arg->type_attr;
        arg->type_attr.clear();
      } else if (t->type != "type") {
        return SpecError(name_, spec, "the type must be a type or list(type) attr");
      }
    }
    out->push_back(*std::move(arg));
    return absl::OkStatus();
  };
  for (const auto& spec : inputs_) {
    if (auto s = resolve(spec, &def.inputs); !s.ok()) return s;
  }
  for (const auto& spec : outputs_) {
    if (auto s = resolve(spec, &def.outputs); !s.ok()) return s;
  }
  return def;
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry();
  return registry;
}

absl::Status OpRegistry::Register(OpDef def) {
  absl::MutexLock lock(&mu_);
  if (ops_.count(def.name) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("op ", def.name, " is registered twice"));
  }
  std::string name = def.name;
  ops_[name] = std::make_unique<OpDef>(std::move(def));
  return absl::OkStatus();
}

const OpDef* OpRegistry::Find(const std::string& op_name) const {
  absl::MutexLock lock(&mu_);
  auto it = ops_.find(op_name);
  return it == ops_.end() ? nullptr : it->second.get();
}

absl::StatusOr<const OpDef*> OpRegistry::Lookup(const std::string& op_name) const {
  const OpDef* def = Find(op_name);
  if (def == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown op '", op_name, "'"));
  }
  return def;
}

std::vector<std::string> OpRegistry::OpNames() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

namespace internal {

OpRegistrar::OpRegistrar(const OpDefBuilder& builder) {
  auto def = builder.Build();
  CHECK(def.ok()) << def.status();
  auto status = OpRegistry::Global()->Register(*std::move(def));
  CHECK(status.ok()) << status;
}

}  // namespace internal
}  // namespace overseer
