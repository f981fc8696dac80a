#include "client/session/fetch_structure.h"

#include "core/logging.h"

namespace overseer {
namespace {

const char* KindName(Fetched::Kind kind) {
  switch (kind) {
    case Fetched::Kind::kTensor:
      return "a tensor";
    case Fetched::Kind::kNone:
      return "an operation's result (none)";
    case Fetched::Kind::kList:
      return "a list";
    case Fetched::Kind::kMap:
      return "a map";
  }
  return "?";
}

}  // namespace

Fetches::Fetches(Output output) : kind_(Kind::kOutput), output_(std::move(output)) {}

Fetches::Fetches(Operation operation) : kind_(Kind::kOperation), operation_(std::move(operation)) {}

Fetches::Fetches(std::vector<Fetches> list) : kind_(Kind::kList), items_(std::move(list)) {}

Fetches::Fetches(std::initializer_list<Fetches> list) : kind_(Kind::kList), items_(list) {}

Fetches Fetches::Map(std::map<std::string, Fetches> entries) {
  Fetches map;
  map.kind_ = Kind::kMap;
  for (auto& [key, value] : entries) {
    map.keys_.push_back(key);
    map.items_.push_back(std::move(value));
  }
  return map;
}

const Tensor& Fetched::tensor() const {
  CHECK(kind_ == Kind::kTensor) << "Fetched::tensor() of " << KindName(kind_);
  return tensor_;
}

const Fetched& Fetched::operator[](size_t index) const {
  CHECK(kind_ == Kind::kList || kind_ == Kind::kMap)
      << "Fetched[" << index << "] of " << KindName(kind_);
  CHECK(index < items_.size()) << "Fetched[" << index << "] of " << items_.size() << " entries";
  return items_[index];
}

const Fetched& Fetched::operator[](const std::string& key) const {
  CHECK(kind_ == Kind::kMap) << "Fetched[\"" << key << "\"] of " << KindName(kind_);
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return items_[i];
  }
  LOG(FATAL) << "Fetched[\"" << key << "\"]: the map has no such key";
  return *this;
}

FetchPlan::FetchPlan(const Fetches& fetch) : fetch_(fetch) { Flatten(fetch_); }

void FetchPlan::Flatten(const Fetches& fetch) {
  switch (fetch.kind()) {
    case Fetches::Kind::kOutput:
      outputs_.push_back(fetch.output());
      return;
    case Fetches::Kind::kOperation:
      targets_.push_back(fetch.operation());
      return;
    case Fetches::Kind::kList:
    case Fetches::Kind::kMap:
      for (const Fetches& item : fetch.items()) Flatten(item);
      return;
  }
}

Fetched FetchPlan::Build(std::vector<Tensor> values) const {
  size_t next = 0;
  return Rebuild(fetch_, values, &next);
}

Fetched FetchPlan::Rebuild(const Fetches& fetch, std::vector<Tensor>& values, size_t* next) const {
  Fetched out;
  switch (fetch.kind()) {
    case Fetches::Kind::kOutput:
      out.kind_ = Fetched::Kind::kTensor;
      out.tensor_ = std::move(values[(*next)++]);
      break;
    case Fetches::Kind::kOperation:
      out.kind_ = Fetched::Kind::kNone;
      break;
    case Fetches::Kind::kList:
    case Fetches::Kind::kMap:
      out.kind_ = fetch.kind() == Fetches::Kind::kList ? Fetched::Kind::kList : Fetched::Kind::kMap;
      out.keys_ = fetch.keys();
      for (const Fetches& item : fetch.items()) out.items_.push_back(Rebuild(item, values, next));
      break;
  }
  return out;
}

}  // namespace overseer
