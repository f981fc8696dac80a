#include "master/placer.h"

#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cluster/device_name.h"
#include "core/graph/prune.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"
#include "core/types.h"

namespace overseer {
namespace {

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

bool SharesState(DataType t) { return IsRefType(t) || t == DT_RESOURCE; }

// What one colocation group asks for, with the node that first set each part.
struct GroupConstraint {
  DeviceName name;
  std::string first_node;  // The node whose constraint was merged first.
};

}  // namespace

absl::StatusOr<std::vector<std::string>> PlaceGraph(const Graph& graph,
                                                    const std::vector<std::string>& devices,
                                                    const std::string& default_device,
                                                    bool allow_soft_placement) {
  const int n = graph.num_nodes();
  std::vector<DeviceName> parsed;
  for (const std::string& d : devices) {
    ASSIGN_OR_RETURN(DeviceName dn, DeviceName::Parse(d));
    parsed.push_back(std::move(dn));
  }
  ASSIGN_OR_RETURN(DeviceName default_name, DeviceName::Parse(default_device));

  // 1. Colocation groups.
  UnionFind groups(n);
  for (int id = 0; id < n; ++id) {
    const GraphNode& node = graph.node(id);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (SharesState(node.input_types[i])) groups.Union(id, node.inputs[i].node);
    }
    auto it = node.def->attr().find("_class");
    if (it == node.def->attr().end()) continue;
    for (const std::string& loc : it->second.list().s()) {
      if (!absl::StartsWith(loc, "loc:@")) continue;
      // A colocation target pruned away from this step does not constrain it.
      const int other = graph.FindNode(loc.substr(5));
      if (other >= 0) groups.Union(id, other);
    }
  }

  // 2. Merge constraints per group.
  absl::flat_hash_map<int, GroupConstraint> constraints;
  for (int id = 0; id < n; ++id) {
    const GraphNode& node = graph.node(id);
    if (node.def->op() == kFeedOp || node.def->device().empty()) continue;
    auto dn = DeviceName::Parse(node.def->device());
    if (!dn.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name(), "': ", dn.status().message()));
    }
    GroupConstraint& c = constraints[groups.Find(id)];
    if (c.first_node.empty()) c.first_node = node.name();
    absl::Status merged = c.name.MergeFrom(*dn);
    if (!merged.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot colocate node '", node.name(), "' (device '", node.def->device(),
                       "') with node '", c.first_node, "': ", merged.message()));
    }
  }

  // 3. Choose a device per group.
  absl::flat_hash_map<int, std::string> chosen;
  std::vector<std::string> result(n);
  for (int id = 0; id < n; ++id) {
    const GraphNode& node = graph.node(id);
    if (node.def->op() == kFeedOp) {
      result[id] = default_device;
      continue;
    }
    const int g = groups.Find(id);
    auto done = chosen.find(g);
    if (done != chosen.end()) {
      result[id] = done->second;
      continue;
    }
    auto c = constraints.find(g);
    std::string device;
    if (c == constraints.end()) {
      device = default_device;
    } else {
      auto pick = [&](const DeviceName& wanted) {
        DeviceName preferred = wanted;
        const bool can_prefer = preferred.MergeFrom(default_name).ok();
        for (size_t i = 0; i < parsed.size() && device.empty(); ++i) {
          if (can_prefer && preferred.Matches(parsed[i])) device = devices[i];
        }
        for (size_t i = 0; i < parsed.size() && device.empty(); ++i) {
          if (wanted.Matches(parsed[i])) device = devices[i];
        }
      };
      pick(c->second.name);
      if (device.empty() && allow_soft_placement) {
        DeviceName soft = c->second.name;
        soft.type.clear();
        soft.has_id = false;
        soft.id = 0;
        pick(soft);
      }
      if (device.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node '", c->second.first_node, "' requests device '", c->second.name.ToString(),
            "', which matches no device of the session (devices: ", absl::StrJoin(devices, ", "),
            ")"));
      }
    }
    chosen[g] = device;
    result[id] = device;
  }
  return result;
}

}  // namespace overseer
