#include "core/node_def_util.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/types.h"

namespace overseer {
namespace {

absl::Status AttrError(const NodeDef& node, absl::string_view name, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.name(), "' (op '", node.op(), "'): attr '", name, "' ", what));
}

absl::StatusOr<const AttrValue*> FindAttr(const NodeDef& node, absl::string_view name) {
  auto it = node.attr().find(std::string(name));
  if (it == node.attr().end()) return AttrError(node, name, "is missing");
  return &it->second;
}

absl::Status WrongType(const NodeDef& node, absl::string_view name, absl::string_view want) {
  return AttrError(node, name, absl::StrCat("is not of type ", want));
}

// The attr type name of `v`'s set oneof, as in op specs.
std::string AttrValueType(const AttrValue& v) {
  switch (v.value_case()) {
    case AttrValue::kS:
      return "string";
    case AttrValue::kI:
      return "int";
    case AttrValue::kF:
      return "float";
    case AttrValue::kB:
      return "bool";
    case AttrValue::kType:
      return "type";
    case AttrValue::kShape:
      return "shape";
    case AttrValue::kTensor:
      return "tensor";
    case AttrValue::kList:
      return "list";
    case AttrValue::kFunc:
      return "func";
    case AttrValue::kPlaceholder:
      return "placeholder";
    default:
      return "unset";
  }
}

}  // namespace

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, int64_t* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kI) return WrongType(node, name, "int");
  *value = (*v)->i();
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, int32_t* value) {
  int64_t i;
  if (auto s = GetNodeAttr(node, name, &i); !s.ok()) return s;
  *value = static_cast<int32_t>(i);
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, float* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kF) return WrongType(node, name, "float");
  *value = (*v)->f();
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, bool* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kB) return WrongType(node, name, "bool");
  *value = (*v)->b();
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, std::string* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kS) return WrongType(node, name, "string");
  *value = (*v)->s();
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, DataType* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kType) return WrongType(node, name, "type");
  *value = (*v)->type();
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, PartialShape* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kShape) return WrongType(node, name, "shape");
  *value = PartialShape::FromProto((*v)->shape());
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, TensorShape* value) {
  PartialShape p;
  if (auto s = GetNodeAttr(node, name, &p); !s.ok()) return s;
  if (!p.IsFullyDefined()) {
    return AttrError(node, name,
                     absl::StrCat("must be a fully defined shape, not ", p.DebugString()));
  }
  *value = p.ToTensorShape();
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, Tensor* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kTensor) return WrongType(node, name, "tensor");
  auto t = Tensor::FromProto((*v)->tensor());
  if (!t.ok()) {  // INVALID_ARGUMENT, or RESOURCE_EXHAUSTED beyond the memory budget.
    return absl::Status(t.status().code(),
                        absl::StrCat("node '", node.name(), "' (op '", node.op(), "'): attr '",
                                     name, "': ", t.status().message()));
  }
  *value = *std::move(t);
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name,
                         std::vector<DataType>* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kList) return WrongType(node, name, "list(type)");
  value->clear();
  for (int t : (*v)->list().type()) value->push_back(static_cast<DataType>(t));
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, std::vector<int64_t>* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kList) return WrongType(node, name, "list(int)");
  value->assign((*v)->list().i().begin(), (*v)->list().i().end());
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, std::vector<int32_t>* value) {
  std::vector<int64_t> v;
  if (auto s = GetNodeAttr(node, name, &v); !s.ok()) return s;
  value->assign(v.begin(), v.end());
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name,
                         std::vector<PartialShape>* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kList) return WrongType(node, name, "list(shape)");
  value->clear();
  for (const auto& s : (*v)->list().shape()) value->push_back(PartialShape::FromProto(s));
  return absl::OkStatus();
}

template <>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name,
                         std::vector<std::string>* value) {
  auto v = FindAttr(node, name);
  if (!v.ok()) return v.status();
  if ((*v)->value_case() != AttrValue::kList) return WrongType(node, name, "list(string)");
  value->assign((*v)->list().s().begin(), (*v)->list().s().end());
  return absl::OkStatus();
}

static AttrValue& Slot(NodeDef* node, absl::string_view name) {
  return (*node->mutable_attr())[std::string(name)];
}

void SetNodeAttr(NodeDef* node, absl::string_view name, int64_t value) {
  Slot(node, name).set_i(value);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, int value) {
  Slot(node, name).set_i(value);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, float value) {
  Slot(node, name).set_f(value);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, bool value) {
  Slot(node, name).set_b(value);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const char* value) {
  Slot(node, name).set_s(value);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::string& value) {
  Slot(node, name).set_s(value);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, DataType value) {
  Slot(node, name).set_type(value);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const TensorShape& value) {
  value.ToProto(Slot(node, name).mutable_shape());
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const PartialShape& value) {
  value.ToProto(Slot(node, name).mutable_shape());
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const Tensor& value) {
  value.ToProto(Slot(node, name).mutable_tensor());
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::vector<DataType>& value) {
  auto* list = Slot(node, name).mutable_list();
  list->Clear();
  for (DataType t : value) list->add_type(t);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::vector<int64_t>& value) {
  auto* list = Slot(node, name).mutable_list();
  list->Clear();
  for (int64_t i : value) list->add_i(i);
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::vector<PartialShape>& value) {
  auto* list = Slot(node, name).mutable_list();
  list->Clear();
  for (const auto& s : value) s.ToProto(list->add_shape());
}
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::vector<std::string>& value) {
  auto* list = Slot(node, name).mutable_list();
  list->Clear();
  for (const auto& s : value) list->add_s(s);
}

absl::Status AddDefaultsAndValidateAttrs(const OpDef& op, NodeDef* node) {
  auto& attrs = *node->mutable_attr();
  for (const AttrDef& def : op.attrs) {
    auto it = attrs.find(def.name);
    if (it == attrs.end()) {
      if (!def.default_value.has_value()) {
        return AttrError(*node, def.name, "is missing and has no default");
      }
      it = attrs.insert({def.name, *def.default_value}).first;
    }
    const AttrValue& v = it->second;
    const bool is_list = absl::StartsWith(def.type, "list(");
    const std::string got = AttrValueType(v);
    if (is_list ? got != "list" : got != def.type) {
      // An empty list may arrive as an unset AttrValue.
      if (!(is_list && v.value_case() == AttrValue::VALUE_NOT_SET)) {
        return AttrError(*node, def.name,
                         absl::StrCat("has type ", got, " but the op wants ", def.type));
      }
    }
    if (def.type == "type") {
      if (!IsSupportedDataType(v.type())) {
        return AttrError(
            *node, def.name,
            absl::StrCat("is ", DataTypeString(v.type()), ", which Overseer does not support"));
      }
      if (!def.allowed_types.empty()) {
        bool allowed = false;
        std::string names;
        for (DataType t : def.allowed_types) {
          allowed |= t == v.type();
          absl::StrAppend(&names, names.empty() ? "" : ", ", DataTypeString(t));
        }
        if (!allowed) {
          return AttrError(
              *node, def.name,
              absl::StrCat("is ", DataTypeString(v.type()), ", not one of {", names, "}"));
        }
      }
    }
    if (def.minimum.has_value()) {
      int64_t n = def.type == "int"            ? v.i()
                  : def.type == "list(type)"   ? v.list().type_size()
                  : def.type == "list(int)"    ? v.list().i_size()
                  : def.type == "list(shape)"  ? v.list().shape_size()
                  : def.type == "list(string)" ? v.list().s_size()
                                               : *def.minimum;
      if (n < *def.minimum) {
        return AttrError(*node, def.name,
                         absl::StrCat("is ", n, " but must be at least ", *def.minimum));
      }
    }
  }
  for (const auto& [name, value] : attrs) {
    if (op.FindAttr(name) == nullptr && !absl::StartsWith(name, "_")) {
      return AttrError(*node, name, "is not an attr of this op");
    }
  }
  return absl::OkStatus();
}

static absl::Status ExpandArgs(const NodeDef& node, const std::vector<ArgDef>& args,
                               std::vector<DataType>* out) {
  out->clear();
  for (const ArgDef& arg : args) {
    std::vector<DataType> types;
    if (!arg.type_list_attr.empty()) {
      if (auto s = GetNodeAttr(node, arg.type_list_attr, &types); !s.ok()) return s;
    } else {
      DataType t = arg.type;
      if (!arg.type_attr.empty()) {
        if (auto s = GetNodeAttr(node, arg.type_attr, &t); !s.ok()) return s;
      }
      int64_t n = 1;
      if (!arg.number_attr.empty()) {
        if (auto s = GetNodeAttr(node, arg.number_attr, &n); !s.ok()) return s;
      }
      types.assign(static_cast<size_t>(std::max<int64_t>(n, 0)), t);
    }
    for (DataType t : types) out->push_back(arg.is_ref ? MakeRefType(t) : t);
  }
  return absl::OkStatus();
}

absl::Status InOutTypesForNode(const NodeDef& node, const OpDef& op, std::vector<DataType>* inputs,
                               std::vector<DataType>* outputs) {
  if (auto s = ExpandArgs(node, op.inputs, inputs); !s.ok()) return s;
  return ExpandArgs(node, op.outputs, outputs);
}

std::string TensorId::ToString() const {
  if (IsControl()) return absl::StrCat("^", node);
  return absl::StrCat(node, ":", index);
}

absl::StatusOr<TensorId> ParseTensorName(absl::string_view name) {
  TensorId id;
  if (!name.empty() && name[0] == '^') {
    id.node = std::string(name.substr(1));
    id.index = -1;
  } else {
    const size_t colon = name.rfind(':');
    if (colon == absl::string_view::npos) {
      id.node = std::string(name);
    } else {
      int index;
      if (!absl::SimpleAtoi(name.substr(colon + 1), &index) || index < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("bad tensor name '", name, "': expected 'node' or 'node:k'"));
      }
      id.node = std::string(name.substr(0, colon));
      id.index = index;
    }
  }
  if (id.node.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("bad tensor name '", name, "'"));
  }
  return id;
}

}  // namespace overseer
