#ifndef OVERSEER_CLIENT_SESSION_FETCH_STRUCTURE_H_
#define OVERSEER_CLIENT_SESSION_FETCH_STRUCTURE_H_

// Nested fetches, as TensorFlow's Session.run takes them: a Fetches is an Output (fetch
// its tensor), an Operation (run it; its result is empty, TensorFlow's None), or a list
// or a string-keyed map of Fetches, nested freely. ClientSession::RunFetches returns a
// Fetched of the same shape.
//
//   ASSIGN_OR_RETURN(Fetched got, session->RunFetches(
//       {train_op, Fetches::Map({{"loss", loss}, {"weights", {w, b}}})}, feeds));
//   float loss_value = got[1]["loss"].tensor().scalar<float>();
//   const Tensor& b_value = got[1]["weights"][1].tensor();

#include <cstddef>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "client/graph/graph.h"
#include "core/tensor.h"

namespace overseer {

class Fetches {
 public:
  enum class Kind { kOutput, kOperation, kList, kMap };

  Fetches(Output output);              // NOLINT: implicit, as TensorFlow's fetches.
  Fetches(Operation operation);        // NOLINT
  Fetches(std::vector<Fetches> list);  // NOLINT
  Fetches(std::initializer_list<Fetches> list);
  // A map, its entries in key order (as TensorFlow returns a dict).
  static Fetches Map(std::map<std::string, Fetches> entries);

  Kind kind() const { return kind_; }
  const Output& output() const { return output_; }
  const Operation& operation() const { return operation_; }
  // The entries of a list or a map (then in the order of keys()).
  const std::vector<Fetches>& items() const { return items_; }
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  Fetches() = default;

  Kind kind_ = Kind::kList;
  Output output_;
  Operation operation_;
  std::vector<Fetches> items_;
  std::vector<std::string> keys_;
};

// What a Fetches gave, in its shape. Accessing it as what it is not (tensor() of a list,
// an index or key it does not have) is a programming error and aborts naming both.
class Fetched {
 public:
  enum class Kind { kTensor, kNone, kList, kMap };

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  // The result of an Operation.
  bool is_none() const { return kind_ == Kind::kNone; }

  const Tensor& tensor() const;
  // Entries of a list or a map.
  size_t size() const { return items_.size(); }
  const Fetched& operator[](size_t index) const;
  const Fetched& operator[](const std::string& key) const;
  // A map's keys, in order.
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  friend class FetchPlan;

  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::vector<Fetched> items_;
  std::vector<std::string> keys_;
};

// Flattens a Fetches into the tensors to fetch and the operations to run, and builds the
// Fetched from what one Run returned (for ClientSession::RunFetches).
class FetchPlan {
 public:
  explicit FetchPlan(const Fetches& fetch);

  const std::vector<Output>& outputs() const { return outputs_; }
  const std::vector<Operation>& targets() const { return targets_; }
  // `values`: one tensor per outputs() entry, in order.
  Fetched Build(std::vector<Tensor> values) const;

 private:
  void Flatten(const Fetches& fetch);
  Fetched Rebuild(const Fetches& fetch, std::vector<Tensor>& values, size_t* next) const;

  Fetches fetch_;
  std::vector<Output> outputs_;
  std::vector<Operation> targets_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_FETCH_STRUCTURE_H_
