#include "client/training/saver.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "client/graph/graph_builder.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_input.h"
#include "client/graph/ops_state.h"
#include "client/training/meta_graph.h"
#include "core/clock.h"
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
  for (const Variable& v : options.var_list) {
    if (!v.valid()) return absl::InvalidArgumentError("Saver: an invalid variable");
    if (v.dtype() == DT_STRING) {
      return absl::InvalidArgumentError(absl::StrCat("Saver: variable ", v.name(),
                                                     " is DT_STRING; checkpoints hold numeric "
                                                     "and bool tensors"));
    }
  }
  // Variables grouped by device (or all in one group), groups in order of first
  // appearance. Saves: a shard per device when sharded, else one. Restores: always one
  // per device, since a restore writes into its variables through references and so
  // runs where they live.
  struct Group {
    std::string device;
    std::vector<Variable> vars;
  };
  auto group = [&](bool by_device) {
    std::vector<Group> groups;
    std::map<std::string, size_t> index;
    for (const Variable& v : options.var_list) {
      const std::string device = by_device ? v.ref.node()->def().device() : "";
      auto [it, added] = index.emplace(device, groups.size());
      if (added) groups.push_back({device, {}});
      groups[it->second].vars.push_back(v);
    }
    return groups;
  };
  // A group's tensor names (a Const on its device), references and dtypes.
  struct Inputs {
    Output names;
    InputList refs;
    std::vector<DataType> dtypes;
  };
  auto inputs = [](const Scope& ds, const std::vector<Variable>& vars) {
    Inputs in;
    Tensor names(DT_STRING, TensorShape({static_cast<int64_t>(vars.size())}));
    for (size_t i = 0; i < vars.size(); ++i) {
      names.data<std::string>()[i] = vars[i].name();
      in.refs.push_back(vars[i].ref);
      in.dtypes.push_back(vars[i].dtype());
    }
    in.names = ops::Const(ds.WithOpName("tensor_names"), names);
    return in;
  };
  std::unique_ptr<Saver> saver(new Saver());
  Scope s = scope.NewSubScope(options.name).WithNoControlDependencies();
  Output location = ops::Placeholder(s.WithOpName("location"), DT_STRING);
  Output id = ops::Placeholder(s.WithOpName("checkpoint_id"), DT_STRING);
  Output checkpoint = ops::Placeholder(s.WithOpName("checkpoint"), DT_STRING);
  Output snapshot_id = ops::Placeholder(s.WithOpName("snapshot_id"), DT_STRING);
  // Snapshots and writes go by shard; a shard's variables are on its device when
  // sharded, else wherever they are (the one snapshot then reads them across tasks).
  const std::vector<Group> shards = group(options.sharded);
  std::vector<Operation> saves, snapshots, writes;
  for (size_t shard = 0; shard < shards.size(); ++shard) {
    Scope ds = s.WithDevice(shards[shard].device);
    Inputs in = inputs(ds, shards[shard].vars);
    const int64_t shard_id = static_cast<int64_t>(shard);
    // The one-step save (not a cut across tasks) of SaverDefs without the two steps.
    saves.push_back(NodeBuilder(ds.WithOpName("save_shard"), "CheckpointSaveShard")
                        .Input(location)
                        .Input(id)
                        .Input(in.names)
                        .Input(in.refs)
                        .Attr("shard_id", shard_id)
                        .Finalize());
    snapshots.push_back(NodeBuilder(ds.WithOpName("snapshot_shard"), "CheckpointSnapshot")
                            .Input(snapshot_id)
                            .Input(in.names)
                            .Input(in.refs)
                            .Attr("shard_id", shard_id)
                            .Finalize());
    writes.push_back(NodeBuilder(ds.WithOpName("write_shard"), "CheckpointWriteSnapshot")
                         .Input(location)
                         .Input(id)
                         .Input(snapshot_id)
                         .Attr("shard_id", shard_id)
                         .Finalize());
  }
  std::vector<Operation> restores;
  for (const Group& g : group(/*by_device=*/true)) {
    Scope ds = s.WithDevice(g.device);
    Inputs in = inputs(ds, g.vars);
    // Into the variables where they are: a restore never holds the model twice.
    restores.push_back(NodeBuilder(ds.WithOpName("restore_shard"), "CheckpointRestoreVariables")
                           .Input(location)
                           .Input(checkpoint)
                           .Input(in.names)
                           .Input(in.refs)
                           .Attr("dtypes", in.dtypes)
                           .Finalize());
  }
  Operation save_all = ops::NoOp(s.WithOpName("save_all").WithControlDependencies(saves));
  Operation snapshot_all =
      ops::NoOp(s.WithOpName("snapshot_all").WithControlDependencies(snapshots));
  Operation write_all = ops::NoOp(s.WithOpName("write_all").WithControlDependencies(writes));
  Operation restore_all = ops::NoOp(s.WithOpName("restore_all").WithControlDependencies(restores));
  RETURN_IF_ERROR(scope.status());
  saver->options_ = std::move(options);
  saver->graph_ = scope.graph_as_shared_ptr();
  saver->num_shards_ = static_cast<int>(shards.size());
  saver->location_feed_ = location.name();
  saver->id_feed_ = id.name();
  saver->checkpoint_feed_ = checkpoint.name();
  saver->snapshot_id_feed_ = snapshot_id.name();
  saver->snapshot_target_ = snapshot_all.name();
  saver->write_target_ = write_all.name();
  saver->save_target_ = save_all.name();
  saver->restore_target_ = restore_all.name();
  return saver;
}

SaverDef Saver::ToSaverDef() const {
  SaverDef def;
  def.set_filename_tensor_name(checkpoint_feed_);
  def.set_save_tensor_name(save_target_);
  def.set_restore_op_name(restore_target_);
  def.set_max_to_keep(options_.max_to_keep);
  def.set_sharded(options_.sharded);
  def.set_keep_checkpoint_every_n_hours(static_cast<float>(options_.keep_checkpoint_every_n_hours));
  def.set_version(SaverDef::V2);
  def.set_location_tensor_name(location_feed_);
  def.set_checkpoint_id_tensor_name(id_feed_);
  def.set_num_shards(num_shards_);
  def.set_store_retention_list(options_.retention_list == SaverOptions::RetentionList::kStore);
  def.set_snapshot_op_name(snapshot_target_);
  def.set_snapshot_id_tensor_name(snapshot_id_feed_);
  def.set_write_op_name(write_target_);
  return def;
}

absl::StatusOr<std::unique_ptr<Saver>> Saver::FromSaverDef(const Scope& scope,
                                                           const SaverDef& def) {
  const ClientGraph& graph = *scope.graph();
  if (def.num_shards() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("SaverDef: num_shards must be at least 1, got ", def.num_shards()));
  }
  std::vector<std::pair<const char*, const std::string*>> names = {
      {"filename_tensor_name", &def.filename_tensor_name()},
      {"save_tensor_name", &def.save_tensor_name()},
      {"restore_op_name", &def.restore_op_name()},
      {"location_tensor_name", &def.location_tensor_name()},
      {"checkpoint_id_tensor_name", &def.checkpoint_id_tensor_name()}};
  const bool two_steps = !def.snapshot_op_name().empty();
  if (two_steps != !def.snapshot_id_tensor_name().empty() ||
      two_steps != !def.write_op_name().empty()) {
    return absl::InvalidArgumentError(
        "SaverDef: snapshot_op_name, snapshot_id_tensor_name and write_op_name go together");
  }
  if (two_steps) {
    names.insert(names.end(), {{"snapshot_op_name", &def.snapshot_op_name()},
                               {"snapshot_id_tensor_name", &def.snapshot_id_tensor_name()},
                               {"write_op_name", &def.write_op_name()}});
  }
  for (const auto& [field, name] : names) {
    const std::string node = name->substr(0, name->find(':'));
    if (node.empty() || graph.FindNode(node) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("SaverDef: ", field, " '", *name, "' names no node of the graph"));
    }
  }
  std::unique_ptr<Saver> saver(new Saver());
  saver->graph_ = scope.graph_as_shared_ptr();
  const size_t slash = def.save_tensor_name().rfind('/');
  saver->options_.name =
      slash == std::string::npos ? std::string("save") : def.save_tensor_name().substr(0, slash);
  saver->options_.max_to_keep = def.max_to_keep();
  saver->options_.keep_checkpoint_every_n_hours = def.keep_checkpoint_every_n_hours();
  saver->options_.sharded = def.sharded();
  saver->options_.retention_list = def.store_retention_list() ? SaverOptions::RetentionList::kStore
                                                              : SaverOptions::RetentionList::kSaver;
  saver->num_shards_ = def.num_shards();
  saver->location_feed_ = def.location_tensor_name();
  saver->id_feed_ = def.checkpoint_id_tensor_name();
  saver->checkpoint_feed_ = def.filename_tensor_name();
  saver->save_target_ = def.save_tensor_name();
  saver->restore_target_ = def.restore_op_name();
  saver->snapshot_id_feed_ = def.snapshot_id_tensor_name();
  saver->snapshot_target_ = def.snapshot_op_name();
  saver->write_target_ = def.write_op_name();
  return saver;
}

absl::StatusOr<std::string> Saver::Save(Session* session, const std::string& prefix,
                                        int64_t global_step, bool write_meta_graph) {
  return SaveAt(session, prefix, global_step, "", write_meta_graph, nullptr);
}

absl::StatusOr<std::string> Saver::Save(Session* session, const std::string& prefix,
                                        const Output& global_step, bool write_meta_graph,
                                        int64_t* saved_step) {
  if (!global_step.valid()) {
    return absl::InvalidArgumentError("Saver::Save: the global step tensor is not valid");
  }
  return SaveAt(session, prefix, -1, global_step.name(), write_meta_graph, saved_step);
}

absl::StatusOr<int64_t> Saver::Snapshot(Session* session, const std::string& snapshot_id,
                                        int64_t global_step, const std::string& step_tensor) {
  std::vector<std::string> fetches;
  if (!step_tensor.empty()) fetches.push_back(step_tensor);
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run({{snapshot_id_feed_, Tensor::Scalar<std::string>(snapshot_id)}},
                               fetches, {snapshot_target_}, &out));
  if (step_tensor.empty()) return global_step;
  return StepValue(out.at(0));
}

absl::StatusOr<std::string> Saver::SaveAt(Session* session, const std::string& prefix,
                                          int64_t global_step, const std::string& step_tensor,
                                          bool write_meta_graph, int64_t* saved_step) {
  if (empty_) {
    LOG(INFO) << "Saver " << options_.name << ": no variables to save; nothing is written";
    return std::string();
  }
  std::string location, base;
  RETURN_IF_ERROR(SplitCheckpointPrefix(prefix, &location, &base));
  ASSIGN_OR_RETURN(CheckpointLocation where, ResolveCheckpointLocation(location));
  const bool two_steps = !snapshot_target_.empty();
  if (!two_steps && !step_tensor.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Saver ", options_.name,
                     ": its graph has no snapshot step (saved before consistent saves); save "
                     "with the global step's value instead of its tensor"));
  }
  std::string snapshot_id;
  if (two_steps) {
    snapshot_id = absl::StrCat(absl::Hex(absl::Uniform<uint64_t>(bitgen_)), "-",
                               absl::ToUnixMicros(Clock::Real()->Now()));
    ASSIGN_OR_RETURN(global_step, Snapshot(session, snapshot_id, global_step, step_tensor));
  }
  if (saved_step != nullptr) *saved_step = global_step;
  const std::string name = global_step >= 0 ? absl::StrCat(base, "-", global_step) : base;
  BeginCheckpointRequest begin;
  begin.set_run(where.run);
  begin.set_name(name);
  begin.set_num_shards(num_shards_);
  begin.mutable_retention()->set_max_to_keep(options_.max_to_keep);
  begin.mutable_retention()->set_keep_checkpoint_every_n_hours(
      options_.keep_checkpoint_every_n_hours);
  const bool own_list = options_.retention_list == SaverOptions::RetentionList::kSaver;
  if (own_list) {
    begin.mutable_retention()->set_use_saver_list(true);
    // The store deletes only in the location saved to: the list's entries there.
    for (size_t i = 0; i < last_checkpoints_.size(); ++i) {
      std::string listed_location, listed_name;
      if (!SplitCheckpointPrefix(last_checkpoints_[i], &listed_location, &listed_name).ok() ||
          listed_location != location) {
        continue;
      }
      CheckpointInfo* listed = begin.mutable_retention()->add_saver_checkpoints();
      listed->set_name(listed_name);
      listed->set_timestamp(last_timestamps_[i]);
    }
  }
  const std::shared_ptr<ClientGraph> graph = graph_.lock();
  if (write_meta_graph && graph != nullptr) {
    ASSIGN_OR_RETURN(const MetaGraphDef meta,
                     ExportMetaGraph(Scope::RootScopeFor(graph.get()), this));
    constexpr size_t kMaxMetaGraphBytes = size_t{32} << 20;  // The store's limit.
    if (meta.ByteSizeLong() <= kMaxMetaGraphBytes) {
      meta.SerializeToString(begin.mutable_meta_graph());
    } else {
      LOG(WARNING) << "Saver " << options_.name << ": the meta graph of " << name << " has "
                   << meta.ByteSizeLong() << " bytes, over the " << kMaxMetaGraphBytes
                   << " a checkpoint keeps; saving without " << name << ".meta";
    }
  }
  ASSIGN_OR_RETURN(std::string id, where.store->BeginCheckpoint(begin));
  std::vector<std::pair<std::string, Tensor>> feeds = {
      {location_feed_, Tensor::Scalar<std::string>(location)},
      {id_feed_, Tensor::Scalar<std::string>(id)}};
  if (two_steps) feeds.push_back({snapshot_id_feed_, Tensor::Scalar<std::string>(snapshot_id)});
  const absl::Status ran =
      session->Run(feeds, {}, {two_steps ? write_target_ : save_target_}, nullptr);
  if (!ran.ok()) {
    where.store->AbortCheckpoint(id).IgnoreError();
    return ran;
  }
  ASSIGN_OR_RETURN(CheckpointInfo info, where.store->CommitCheckpoint(id));
  const std::string path = Join(location, info.name());
  if (!own_list) {
    RETURN_IF_ERROR(RecoverLastCheckpoints(location));
    return path;
  }
  // The store trimmed the same list the same way (RetentionPolicy.use_saver_list).
  if (options_.max_to_keep <= 0) return path;
  for (size_t i = 0; i < last_checkpoints_.size(); ++i) {
    if (last_checkpoints_[i] != path) continue;
    last_checkpoints_.erase(last_checkpoints_.begin() + i);
    last_timestamps_.erase(last_timestamps_.begin() + i);
    break;
  }
  last_checkpoints_.push_back(path);
  last_timestamps_.push_back(info.timestamp());
  while (static_cast<int>(last_checkpoints_.size()) > options_.max_to_keep) {
    last_checkpoints_.erase(last_checkpoints_.begin());
    last_timestamps_.erase(last_timestamps_.begin());
  }
  return path;
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
  last_timestamps_.clear();
  for (const CheckpointInfo& info : all) {
    last_checkpoints_.push_back(Join(location, info.name()));
    last_timestamps_.push_back(info.timestamp());
  }
  return absl::OkStatus();
}

void Saver::SetLastCheckpoints(std::vector<std::string> paths) {
  const double now = absl::ToUnixMicros(Clock::Real()->Now()) / 1e6;
  last_timestamps_.assign(paths.size(), now);
  last_checkpoints_ = std::move(paths);
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
