#include "client/training/meta_graph.h"

#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/graph/graph.h"
#include "core/io/file_system.h"
#include "core/status_macros.h"
#include "google/protobuf/text_format.h"
#include "proto/queue_runner.pb.h"

namespace overseer {
namespace {

// Collections of variables, stored as VariableDef protos (TensorFlow's).
bool IsVariableCollection(const std::string& key) {
  return key == GraphKeys::kGlobalVariables || key == GraphKeys::kTrainableVariables ||
         key == GraphKeys::kLocalVariables || key == GraphKeys::kGlobalStep;
}

// Whether `value` reads as a node or tensor name ("a/b", "a:0", "^a").
bool IsName(const std::string& value) {
  if (value.empty()) return false;
  for (const char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-' || c == '/' || c == ':' || c == '^' ||
                    c == '>';
    if (!ok) return false;
  }
  return true;
}

// The collection's values as VariableDefs, or false if a value is no recorded variable.
bool ToVariableDefs(const ClientGraph& graph, const std::vector<std::string>& values,
                    CollectionDef* out) {
  CollectionDef defs;
  for (const std::string& name : values) {
    const std::optional<VariableRecord> record = graph.FindVariableRecord(name);
    if (!record.has_value()) return false;
    VariableDef def;
    def.set_variable_name(absl::StrCat(record->var_node, ":0"));
    def.set_initializer_name(record->initializer_node);
    def.set_snapshot_name(record->snapshot);
    def.set_initial_value_name(record->initial_value);
    def.set_trainable(record->trainable);
    defs.mutable_bytes_list()->add_value(def.SerializeAsString());
  }
  *out = std::move(defs);
  return true;
}

// Adds the nodes of `graph`, each after the nodes it takes inputs from.
absl::Status AddNodes(ClientGraph* graph, const GraphDef& def) {
  std::set<std::string> in_def;
  for (const NodeDef& node : def.node()) in_def.insert(node.name());
  std::vector<const NodeDef*> pending;
  for (const NodeDef& node : def.node()) pending.push_back(&node);
  while (!pending.empty()) {
    std::vector<const NodeDef*> later;
    for (const NodeDef* node : pending) {
      bool ready = true;
      for (const std::string& input : node->input()) {
        absl::string_view source = absl::StripPrefix(input, "^");
        source = source.substr(0, source.find(':'));
        // An input from outside the meta graph fails in AddNode, naming it.
        if (in_def.count(std::string(source)) > 0 && graph->FindNode(source) == nullptr) {
          ready = false;
          break;
        }
      }
      if (!ready) {
        later.push_back(node);
        continue;
      }
      absl::StatusOr<Node*> added = graph->AddNode(*node);
      if (!added.ok()) {
        return absl::Status(added.status().code(),
                            absl::StrCat("importing the meta graph: ", added.status().message()));
      }
    }
    if (later.size() == pending.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("importing the meta graph: node '", later.front()->name(),
                       "' is on a cycle of inputs (or takes an input that never comes before it)"));
    }
    pending = std::move(later);
  }
  return absl::OkStatus();
}

absl::Status AddCollection(ClientGraph* graph, const std::string& key,
                           const CollectionDef& collection) {
  std::vector<std::string> values;
  switch (collection.kind_case()) {
    case CollectionDef::kNodeList:
      values.assign(collection.node_list().value().begin(), collection.node_list().value().end());
      break;
    case CollectionDef::kBytesList:
      if (!IsVariableCollection(key)) {
        values.assign(collection.bytes_list().value().begin(),
                      collection.bytes_list().value().end());
        break;
      }
      for (const std::string& bytes : collection.bytes_list().value()) {
        VariableDef def;
        if (!def.ParseFromString(bytes) || !absl::EndsWith(def.variable_name(), ":0")) {
          return absl::InvalidArgumentError(absl::StrCat("importing the meta graph: collection '",
                                                         key, "' holds a malformed VariableDef"));
        }
        const std::string var_node(absl::StripSuffix(def.variable_name(), ":0"));
        if (graph->FindNode(var_node) == nullptr ||
            graph->FindNode(def.initializer_name()) == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "importing the meta graph: collection '", key, "' names variable '", var_node,
              "' or its initializer '", def.initializer_name(), "', which the graph lacks"));
        }
        if (!graph->FindVariableRecord(var_node).has_value()) {
          graph->AddVariableRecord({var_node, def.initializer_name(), def.initial_value_name(),
                                    def.snapshot_name(), def.trainable()});
        }
        values.push_back(var_node);
      }
      break;
    case CollectionDef::kInt64List:
      for (int64_t v : collection.int64_list().value()) values.push_back(absl::StrCat(v));
      break;
    case CollectionDef::kFloatList:
      for (float v : collection.float_list().value()) values.push_back(absl::StrCat(v));
      break;
    case CollectionDef::KIND_NOT_SET:
      break;
  }
  for (std::string& value : values) graph->AddToCollection(key, std::move(value));
  return absl::OkStatus();
}

// `name` ("a", "a:0", "^a") inside `prefix`.
std::string PrefixName(const std::string& prefix, const std::string& name) {
  if (absl::StartsWith(name, "^")) return absl::StrCat("^", prefix, "/", name.substr(1));
  return absl::StrCat(prefix, "/", name);
}

// `meta` with every name inside `prefix`.
MetaGraphDef Prefixed(const MetaGraphDef& given, const std::string& prefix) {
  MetaGraphDef meta = given;
  for (NodeDef& node : *meta.mutable_graph_def()->mutable_node()) {
    node.set_name(PrefixName(prefix, node.name()));
    for (std::string& input : *node.mutable_input()) input = PrefixName(prefix, input);
    auto colocation = node.mutable_attr()->find("_class");
    if (colocation != node.mutable_attr()->end()) {
      for (std::string& s : *colocation->second.mutable_list()->mutable_s()) {
        if (absl::StartsWith(s, "loc:@")) s = absl::StrCat("loc:@", prefix, "/", s.substr(5));
      }
    }
  }
  for (auto& [key, collection] : *meta.mutable_collection_def()) {
    if (collection.has_node_list()) {
      for (std::string& value : *collection.mutable_node_list()->mutable_value()) {
        value = PrefixName(prefix, value);
      }
    } else if (collection.has_bytes_list() && IsVariableCollection(key)) {
      for (std::string& bytes : *collection.mutable_bytes_list()->mutable_value()) {
        VariableDef def;
        if (!def.ParseFromString(bytes)) continue;  // AddCollection reports it.
        def.set_variable_name(PrefixName(prefix, def.variable_name()));
        def.set_initializer_name(PrefixName(prefix, def.initializer_name()));
        def.set_snapshot_name(PrefixName(prefix, def.snapshot_name()));
        if (!def.initial_value_name().empty()) {
          def.set_initial_value_name(PrefixName(prefix, def.initial_value_name()));
        }
        bytes = def.SerializeAsString();
      }
    } else if (collection.has_bytes_list() && key == GraphKeys::kQueueRunners) {
      for (std::string& bytes : *collection.mutable_bytes_list()->mutable_value()) {
        QueueRunnerDef def;
        if (!def.ParseFromString(bytes)) continue;  // QueueRunnersInGraph reports it.
        def.set_queue_name(PrefixName(prefix, def.queue_name()));
        for (std::string& op : *def.mutable_enqueue_op_name()) op = PrefixName(prefix, op);
        def.set_close_op_name(PrefixName(prefix, def.close_op_name()));
        def.set_cancel_op_name(PrefixName(prefix, def.cancel_op_name()));
        bytes = def.SerializeAsString();
      }
    }
  }
  if (meta.has_saver_def()) {
    SaverDef* saver = meta.mutable_saver_def();
    for (std::string* name :
         {saver->mutable_filename_tensor_name(), saver->mutable_save_tensor_name(),
          saver->mutable_restore_op_name(), saver->mutable_location_tensor_name(),
          saver->mutable_checkpoint_id_tensor_name()}) {
      *name = PrefixName(prefix, *name);
    }
  }
  return meta;
}

}  // namespace

absl::StatusOr<MetaGraphDef> ExportMetaGraph(const Scope& scope, const Saver* saver,
                                             const std::vector<std::string>& tags) {
  const ClientGraph& graph = *scope.graph();
  MetaGraphDef meta;
  meta.mutable_meta_info_def()->set_meta_graph_version("overseer");
  for (const std::string& tag : tags) meta.mutable_meta_info_def()->add_tags(tag);
  RETURN_IF_ERROR(graph.ToGraphDef(meta.mutable_graph_def()));
  if (saver != nullptr && !saver->empty()) *meta.mutable_saver_def() = saver->ToSaverDef();
  for (const std::string& key : graph.CollectionKeys()) {
    const std::vector<std::string> values = graph.GetCollection(key);
    CollectionDef& collection = (*meta.mutable_collection_def())[key];
    if (IsVariableCollection(key) && ToVariableDefs(graph, values, &collection)) continue;
    bool names = true;
    for (const std::string& value : values) names = names && IsName(value);
    for (const std::string& value : values) {
      if (names) {
        collection.mutable_node_list()->add_value(value);
      } else {
        collection.mutable_bytes_list()->add_value(value);
      }
    }
  }
  return meta;
}

absl::StatusOr<std::unique_ptr<Saver>> ImportMetaGraph(const Scope& scope,
                                                       const MetaGraphDef& given,
                                                       const std::string& import_scope) {
  ImportMetaGraphOptions options;
  options.import_scope = import_scope;
  return ImportMetaGraph(scope, given, options);
}

absl::StatusOr<std::unique_ptr<Saver>> ImportMetaGraph(const Scope& scope,
                                                       const MetaGraphDef& given,
                                                       const ImportMetaGraphOptions& options) {
  const std::string& import_scope = options.import_scope;
  ClientGraph* graph = scope.graph();
  if (graph->finalized()) {
    return absl::FailedPreconditionError(
        "importing the meta graph: the graph is finalized and cannot be modified");
  }
  if (!import_scope.empty() && !IsName(import_scope)) {
    return absl::InvalidArgumentError(absl::StrCat("importing the meta graph: import scope '",
                                                   import_scope, "' is not a valid name scope"));
  }
  MetaGraphDef meta = import_scope.empty() ? given : Prefixed(given, import_scope);
  if (options.clear_devices) {
    for (NodeDef& node : *meta.mutable_graph_def()->mutable_node()) node.clear_device();
  }
  RETURN_IF_ERROR(AddNodes(graph, meta.graph_def()));
  // Variable collections first: the records they rebuild are what the others name.
  for (const bool variables : {true, false}) {
    for (const auto& [key, collection] : meta.collection_def()) {
      if (IsVariableCollection(key) == variables) {
        RETURN_IF_ERROR(AddCollection(graph, key, collection));
      }
    }
  }
  if (!meta.has_saver_def()) return std::unique_ptr<Saver>();
  return Saver::FromSaverDef(scope, meta.saver_def());
}

namespace {

// Writes `bytes` to `path` whole: a temporary file, synced, renamed over it.
absl::Status WriteWhole(const std::string& bytes, const std::string& path) {
  FileSystem* fs = FileSystem::Posix();
  const std::string temp = path + ".tmp";
  const absl::Status stale = fs->DeleteFile(temp);  // What a crash mid-write left.
  if (!stale.ok() && !absl::IsNotFound(stale)) return stale;
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(temp));
  RETURN_IF_ERROR(file->Append(bytes));
  RETURN_IF_ERROR(file->Sync());
  RETURN_IF_ERROR(file->Close());
  RETURN_IF_ERROR(fs->RenameFile(temp, path));
  return fs->SyncDir(Dirname(path));
}

}  // namespace

absl::Status WriteMetaGraph(const MetaGraphDef& meta, const std::string& path) {
  std::string bytes;
  if (!meta.SerializeToString(&bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the meta graph for ", path, " cannot be serialized (over 2 GiB?)"));
  }
  return WriteWhole(bytes, path);
}

absl::Status WriteGraph(const GraphDef& graph, const std::string& dir, const std::string& name,
                        bool as_text) {
  std::string bytes;
  const bool printed = as_text ? google::protobuf::TextFormat::PrintToString(graph, &bytes)
                               : graph.SerializeToString(&bytes);
  if (!printed) {
    return absl::InvalidArgumentError(
        absl::StrCat("the graph for ", dir, "/", name, " cannot be written (over 2 GiB?)"));
  }
  RETURN_IF_ERROR(FileSystem::Posix()->CreateDirs(dir));
  return WriteWhole(bytes, absl::StrCat(dir, "/", name));
}

absl::StatusOr<MetaGraphDef> ReadMetaGraph(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string bytes, FileSystem::Posix()->ReadFile(path));
  MetaGraphDef meta;
  if (!meta.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("meta graph file ", path,
                                            " does not parse as a MetaGraphDef (", bytes.size(),
                                            " bytes): truncated, or not a meta graph"));
  }
  return meta;
}

}  // namespace overseer
