#include "client/training/session_creator.h"

#include <utility>

#include "core/status_macros.h"

namespace overseer {
namespace {

// A SessionManager with the scaffold's (finalized) ops and the creator's options.
absl::StatusOr<std::unique_ptr<SessionManager>> NewManager(const Scope& scope,
                                                           const Scaffold& scaffold,
                                                           const SessionCreatorOptions& options) {
  SessionManagerOptions manager;
  manager.local_init_op = scaffold.local_init_op();
  manager.local_init_feeds = scaffold.local_init_feed_dict();
  manager.ready_op = scaffold.ready_op();
  if (scaffold.local_init_op().valid()) {
    manager.ready_for_local_init_op = scaffold.ready_for_local_init_op();
  }
  manager.readiness_key = options.readiness_key;
  manager.readiness_channel = options.readiness_channel;
  manager.session_options.config = options.config;
  manager.session_options.resource_mgr = options.resource_mgr;
  manager.clock = options.clock;
  return SessionManager::Create(scope, std::move(manager));
}

}  // namespace

ChiefSessionCreator::ChiefSessionCreator(const Scope& scope, Scaffold* scaffold,
                                         ChiefSessionCreatorOptions options)
    : scope_(scope),
      owned_scaffold_(scaffold == nullptr ? std::make_unique<Scaffold>(scope) : nullptr),
      scaffold_(scaffold == nullptr ? owned_scaffold_.get() : scaffold),
      options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<ClientSession>> ChiefSessionCreator::CreateSession() {
  RETURN_IF_ERROR(scaffold_->Finalize());
  if (manager_ == nullptr) {
    ASSIGN_OR_RETURN(manager_, NewManager(scope_, *scaffold_, options_));
  }
  PrepareSessionOptions prepare;
  prepare.saver = scaffold_->saver();
  prepare.checkpoint_dir = options_.checkpoint_dir;
  prepare.checkpoint_filename_with_path = options_.checkpoint_filename_with_path;
  prepare.init_op = scaffold_->init_op();
  prepare.init_feeds = scaffold_->init_feed_dict();
  prepare.init_fn = scaffold_->init_fn();
  prepare.restore_only_if_not_ready = options_.restore_only_if_not_ready && sessions_created_ > 0;
  ASSIGN_OR_RETURN(PreparedSession prepared,
                   manager_->PrepareSessionWithResult(options_.master, prepare));
  ++sessions_created_;
  last_restored_ = prepared.restored_checkpoint;
  last_kept_ = prepared.kept_ready_model;
  return std::move(prepared.session);
}

WorkerSessionCreator::WorkerSessionCreator(const Scope& scope, Scaffold* scaffold,
                                           WorkerSessionCreatorOptions options)
    : scope_(scope),
      owned_scaffold_(scaffold == nullptr ? std::make_unique<Scaffold>(scope) : nullptr),
      scaffold_(scaffold == nullptr ? owned_scaffold_.get() : scaffold),
      options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<ClientSession>> WorkerSessionCreator::CreateSession() {
  RETURN_IF_ERROR(scaffold_->Finalize());
  if (manager_ == nullptr) {
    ASSIGN_OR_RETURN(manager_, NewManager(scope_, *scaffold_, options_));
  }
  if (options_.metrics == nullptr) {
    return manager_->WaitForSession(options_.master, options_.max_wait, options_.config);
  }
  const absl::Time start = options_.clock->Now();
  options_.metrics->ReadinessWaitStarted();
  absl::StatusOr<std::unique_ptr<ClientSession>> session =
      manager_->WaitForSession(options_.master, options_.max_wait, options_.config);
  options_.metrics->ReadinessWaitEnded(options_.clock->Now() - start);
  return session;
}

}  // namespace overseer
