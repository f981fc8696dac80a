#include "client/training/saver.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "client/graph/graph_builder.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_input.h"
#include "client/graph/ops_state.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

std::string Join(const std::string& location, const std::string& name) {
  return location == "/" ? "/" + name : absl::StrCat(location, "/", name);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Saver>> Saver::Create(const Scope& scope, SaverOptions options) {
  if (options.var_list.empty()) options.var_list = GlobalVariables(*scope.graph());
  if (options.var_list.empty()) {
    if (!options.allow_empty) {
      return absl::InvalidArgumentError("Saver: there are no variables to save");
    }
    std::unique_ptr<Saver> empty(new Saver());
    empty->options_ = std::move(options);
    empty->empty_ = true;
    return empty;
  }
  // Device groups, in order of first appearance.
  std::vector<std::string> devices;
  std::map<std::string, std::vector<Variable>> groups;
  for (const Variable& v : options.var_list) {
    if (!v.valid()) return absl::InvalidArgumentError("Saver: an invalid variable");
    if (v.dtype() == DT_STRING) {
      return absl::InvalidArgumentError(absl::StrCat("Saver: variable ", v.name(),
                                                     " is DT_STRING; checkpoints hold numeric "
                                                     "and bool tensors"));
    }
    const std::string device = options.sharded ? v.ref.node()->def().device() : "";
    if (groups.count(device) == 0) devices.push_back(device);
    groups[device].push_back(v);
  }
  std::unique_ptr<Saver> saver(new Saver());
  Scope s = scope.NewSubScope(options.name).WithNoControlDependencies();
  Output location = ops::Placeholder(s.WithOpName("location"), DT_STRING);
  Output id = ops::Placeholder(s.WithOpName("checkpoint_id"), DT_STRING);
  Output checkpoint = ops::Placeholder(s.WithOpName("checkpoint"), DT_STRING);
  std::vector<Operation> saves;
  std::vector<Operation> restores;
  for (size_t shard = 0; shard < devices.size(); ++shard) {
    const std::vector<Variable>& vars = groups[devices[shard]];
    Scope ds = s.WithDevice(devices[shard]);
    std::vector<std::string> names;
    InputList values;
    std::vector<DataType> dtypes;
    for (const Variable& v : vars) {
      names.push_back(v.name());
      values.push_back(v.ref);
      dtypes.push_back(v.dtype());
    }
    Tensor names_tensor(DT_STRING, TensorShape({static_cast<int64_t>(names.size())}));
    for (size_t i = 0; i < names.size(); ++i) names_tensor.data<std::string>()[i] = names[i];
    Output names_const = ops::Const(ds.WithOpName("tensor_names"), names_tensor);
    saves.push_back(NodeBuilder(ds.WithOpName("save_shard"), "CheckpointSaveShard")
                        .Input(location)
                        .Input(id)
                        .Input(names_const)
                        .Input(values)
                        .Attr("shard_id", static_cast<int64_t>(shard))
                        .Finalize());
    Operation restore = NodeBuilder(ds.WithOpName("restore_shard"), "CheckpointRestore")
                            .Input(location)
                            .Input(checkpoint)
                            .Input(names_const)
                            .Attr("dtypes", dtypes)
                            .Finalize();
    if (!restore.valid()) break;
    for (size_t i = 0; i < vars.size(); ++i) {
      Output assigned = ops::Assign(ds.WithOpName("restore_assign"), vars[i].ref,
                                    restore.output(static_cast<int>(i)));
      if (assigned.valid()) restores.push_back(Operation(assigned.node()));
    }
  }
  Operation save_all = ops::NoOp(s.WithOpName("save_all").WithControlDependencies(saves));
  Operation restore_all = ops::NoOp(s.WithOpName("restore_all").WithControlDependencies(restores));
  RETURN_IF_ERROR(scope.status());
  saver->options_ = std::move(options);
  saver->num_shards_ = static_cast<int>(devices.size());
  saver->location_feed_ = location.name();
  saver->id_feed_ = id.name();
  saver->checkpoint_feed_ = checkpoint.name();
  saver->save_target_ = save_all.name();
  saver->restore_target_ = restore_all.name();
  return saver;
}

absl::StatusOr<std::string> Saver::Save(Session* session, const std::string& prefix,
                                        int64_t global_step) {
  if (empty_) {
    LOG(INFO) << "Saver " << options_.name << ": no variables to save; nothing is written";
    return std::string();
  }
  std::string location, base;
  RETURN_IF_ERROR(SplitCheckpointPrefix(prefix, &location, &base));
  const std::string name = global_step >= 0 ? absl::StrCat(base, "-", global_step) : base;
  ASSIGN_OR_RETURN(CheckpointLocation where, ResolveCheckpointLocation(location));
  BeginCheckpointRequest begin;
  begin.set_run(where.run);
  begin.set_name(name);
  begin.set_num_shards(num_shards_);
  begin.mutable_retention()->set_max_to_keep(options_.max_to_keep);
  begin.mutable_retention()->set_keep_checkpoint_every_n_hours(
      options_.keep_checkpoint_every_n_hours);
  ASSIGN_OR_RETURN(std::string id, where.store->BeginCheckpoint(begin));
  const absl::Status ran = session->Run({{location_feed_, Tensor::Scalar<std::string>(location)},
                                         {id_feed_, Tensor::Scalar<std::string>(id)}},
                                        {}, {save_target_}, nullptr);
  if (!ran.ok()) {
    where.store->AbortCheckpoint(id).IgnoreError();
    return ran;
  }
  ASSIGN_OR_RETURN(CheckpointInfo info, where.store->CommitCheckpoint(id));
  RETURN_IF_ERROR(RecoverLastCheckpoints(location));
  return Join(location, info.name());
}

absl::Status Saver::Restore(Session* session, const std::string& path) {
  if (empty_) return absl::OkStatus();
  std::string location, name;
  RETURN_IF_ERROR(SplitCheckpointPrefix(path, &location, &name));
  if (!CheckpointExists(path)) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", path, " does not exist"));
  }
  return session->Run({{location_feed_, Tensor::Scalar<std::string>(location)},
                       {checkpoint_feed_, Tensor::Scalar<std::string>(name)}},
                      {}, {restore_target_}, nullptr);
}

absl::Status Saver::RecoverLastCheckpoints(const std::string& location) {
  if (empty_) return absl::OkStatus();
  ASSIGN_OR_RETURN(CheckpointLocation where, ResolveCheckpointLocation(location));
  ASSIGN_OR_RETURN(std::vector<CheckpointInfo> all, where.store->ListCheckpoints(where.run));
  last_checkpoints_.clear();
  for (const CheckpointInfo& info : all) last_checkpoints_.push_back(Join(location, info.name()));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> LatestCheckpoint(const std::string& location) {
  ASSIGN_OR_RETURN(CheckpointLocation where, ResolveCheckpointLocation(location));
  ASSIGN_OR_RETURN(std::optional<CheckpointInfo> latest, where.store->LatestCheckpoint(where.run));
  if (!latest.has_value()) return std::optional<std::string>();
  return std::optional<std::string>(Join(location, latest->name()));
}

bool CheckpointExists(const std::string& path) {
  std::string location, name;
  if (!SplitCheckpointPrefix(path, &location, &name).ok()) return false;
  auto where = ResolveCheckpointLocation(location);
  if (!where.ok()) return false;
  return where->store->ListTensors(where->run, name).ok();
}

}  // namespace overseer
