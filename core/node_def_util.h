#ifndef OVERSEER_CORE_NODE_DEF_UTIL_H_
#define OVERSEER_CORE_NODE_DEF_UTIL_H_

// Reading and writing NodeDef attrs, and parsing input names.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/op_registry.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"
#include "proto/node_def.pb.h"

namespace overseer {

// Reads attr `name` of `node` into `value`. INVALID_ARGUMENT naming the node and attr
// when it is missing or has another type. Supported: int64_t, int32_t, float, bool,
// std::string, DataType, TensorShape, PartialShape, Tensor, std::vector<DataType>,
// std::vector<int64_t>, std::vector<int32_t>, std::vector<PartialShape>,
// std::vector<std::string>.
template <typename T>
absl::Status GetNodeAttr(const NodeDef& node, absl::string_view name, T* value);

// Like GetNodeAttr, but returns `default_value` when the attr is absent.
template <typename T>
T GetNodeAttrOr(const NodeDef& node, absl::string_view name, T default_value) {
  T value;
  if (!GetNodeAttr(node, name, &value).ok()) return default_value;
  return value;
}

// Sets attr `name` on `node`.
void SetNodeAttr(NodeDef* node, absl::string_view name, int64_t value);
void SetNodeAttr(NodeDef* node, absl::string_view name, int value);
void SetNodeAttr(NodeDef* node, absl::string_view name, float value);
void SetNodeAttr(NodeDef* node, absl::string_view name, bool value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const char* value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::string& value);
void SetNodeAttr(NodeDef* node, absl::string_view name, DataType value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const TensorShape& value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const PartialShape& value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const Tensor& value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::vector<DataType>& value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::vector<int64_t>& value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::vector<PartialShape>& value);
void SetNodeAttr(NodeDef* node, absl::string_view name, const std::vector<std::string>& value);

// Adds the defaults of `op` for attrs `node` lacks, then checks that every attr is
// present with the declared type and allowed value. INVALID_ARGUMENT naming the node,
// op and attr otherwise.
absl::Status AddDefaultsAndValidateAttrs(const OpDef& op, NodeDef* node);

// The dtypes of the node's inputs and outputs, list args expanded, refs as *_REF.
// Precondition: attrs validated. INVALID_ARGUMENT if an attr needed is absent.
absl::Status InOutTypesForNode(const NodeDef& node, const OpDef& op, std::vector<DataType>* inputs,
                               std::vector<DataType>* outputs);

// A parsed NodeDef input: "node", "node:2" or "^node".
struct TensorId {
  std::string node;
  int index = 0;  // -1 for a control input.
  bool IsControl() const { return index < 0; }
  std::string ToString() const;  // "node:2" / "node:0" / "^node"
};

// INVALID_ARGUMENT for an empty name or a bad index.
absl::StatusOr<TensorId> ParseTensorName(absl::string_view name);

}  // namespace overseer

#endif  // OVERSEER_CORE_NODE_DEF_UTIL_H_
