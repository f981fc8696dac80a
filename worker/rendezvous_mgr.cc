#include "worker/rendezvous_mgr.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cluster/device_name.h"
#include "core/status_macros.h"

namespace overseer {

absl::StatusOr<std::string> TaskOfDevice(absl::string_view device) {
  ASSIGN_OR_RETURN(DeviceName name, DeviceName::Parse(device));
  if (name.job.empty() || !name.has_task) {
    return absl::InvalidArgumentError(absl::StrCat("device '", device, "' names no job and task"));
  }
  return name.TaskName();
}

RendezvousMgr::RendezvousMgr(int max_cleaned_steps)
    : max_cleaned_steps_(std::max(0, max_cleaned_steps)) {}

RendezvousMgr::Entry& RendezvousMgr::CreateLocked(int64_t step_id) {
  Entry& entry = steps_[step_id];
  if (entry.state.rendezvous == nullptr) {
    entry.state.rendezvous = LocalRendezvous::Create();
    entry.state.cancellation = std::make_shared<CancellationManager>();
  }
  return entry;
}

StepState RendezvousMgr::FindOrCreate(int64_t step_id) {
  absl::MutexLock lock(&mu_);
  cleaned_.erase(step_id);
  Entry& entry = CreateLocked(step_id);
  entry.ran = true;
  return entry.state;
}

absl::StatusOr<StepState> RendezvousMgr::FindForRecv(int64_t step_id) {
  absl::MutexLock lock(&mu_);
  if (cleaned_.contains(step_id)) {
    return absl::CancelledError(absl::StrCat("step ", step_id, " was already cleaned up"));
  }
  Entry& entry = CreateLocked(step_id);
  ++entry.receivers;
  return entry.state;
}

void RendezvousMgr::EndRecv(int64_t step_id, const StepState& state) {
  Entry gone;  // Destroyed outside the lock.
  absl::MutexLock lock(&mu_);
  auto it = steps_.find(step_id);
  // The step may have been cleaned up, or cleaned up and created again, meanwhile.
  if (it == steps_.end() || it->second.state.rendezvous != state.rendezvous) return;
  Entry& entry = it->second;
  if (--entry.receivers > 0 || entry.ran) return;
  gone = std::move(entry);
  steps_.erase(it);
}

bool RendezvousMgr::Ran(int64_t step_id, const StepState& state) const {
  absl::MutexLock lock(&mu_);
  auto it = steps_.find(step_id);
  return it != steps_.end() && it->second.state.rendezvous == state.rendezvous && it->second.ran;
}

void RendezvousMgr::Cleanup(int64_t step_id) {
  StepState state;
  {
    absl::MutexLock lock(&mu_);
    auto it = steps_.find(step_id);
    if (it != steps_.end()) {
      state = std::move(it->second.state);
      steps_.erase(it);
    }
    if (max_cleaned_steps_ > 0 && cleaned_.insert(step_id).second) {
      cleaned_order_.push_back(step_id);
      if (static_cast<int>(cleaned_order_.size()) > max_cleaned_steps_) {
        cleaned_.erase(cleaned_order_.front());
        cleaned_order_.pop_front();
      }
    }
  }
  if (state.rendezvous != nullptr) {
    const absl::Status cancelled =
        absl::CancelledError(absl::StrCat("step ", step_id, " was cleaned up"));
    state.rendezvous->StartAbort(cancelled);
    state.cancellation->StartCancel(cancelled);
  }
}

void RendezvousMgr::Release(int64_t step_id) {
  Entry gone;  // Destroyed outside the lock.
  absl::MutexLock lock(&mu_);
  auto it = steps_.find(step_id);
  if (it == steps_.end()) return;
  gone = std::move(it->second);
  steps_.erase(it);
}

int RendezvousMgr::num_steps() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(steps_.size());
}

StepRendezvous::StepRendezvous(int64_t step_id, std::string local_task, StepState state,
                               WorkerCacheInterface* peers)
    : step_id_(step_id),
      local_task_(std::move(local_task)),
      state_(std::move(state)),
      peers_(peers) {}

absl::Status StepRendezvous::Send(const RendezvousKey& key, const Tensor& value) {
  return state_.rendezvous->Send(key, value);
}

absl::StatusOr<Tensor> StepRendezvous::Recv(const RendezvousKey& key, const RendezvousWait& wait) {
  ASSIGN_OR_RETURN(std::string task, TaskOfDevice(key.parsed.src_device));
  if (IsLocal(task, key)) return state_.rendezvous->Recv(key, wait);
  ASSIGN_OR_RETURN(std::shared_ptr<PeerRecv> recv, StartPeerRecv(task, key, wait));
  Tensor value;
  absl::Status status = recv->cancel->IsCancelled()
                            ? recv->cancel->status()
                            : recv->peer->RecvTensor(recv->request, recv->cancel.get(), &value);
  RETURN_IF_ERROR(recv->End(status));
  return value;
}

void StepRendezvous::RecvAsync(const RendezvousKey& key, const RendezvousWait& wait,
                               RecvDone done) {
  absl::StatusOr<std::string> task = TaskOfDevice(key.parsed.src_device);
  if (!task.ok()) {
    done(task.status());
    return;
  }
  if (IsLocal(*task, key)) {
    state_.rendezvous->RecvAsync(key, wait.cancellation, std::move(done));
    return;
  }
  absl::StatusOr<std::shared_ptr<PeerRecv>> recv = StartPeerRecv(*task, key, wait);
  if (!recv.ok()) {
    done(recv.status());
    return;
  }
  if ((*recv)->cancel->IsCancelled()) {
    done((*recv)->End((*recv)->cancel->status()));
    return;
  }
  WorkerInterface* peer = (*recv)->peer.get();
  CancellationManager* cancel = (*recv)->cancel.get();
  peer->RecvTensorAsync((*recv)->request, cancel,
                        [recv = *recv, done = std::move(done)](absl::StatusOr<Tensor> value) {
                          absl::Status status = recv->End(value.status());
                          if (!status.ok()) {
                            done(std::move(status));
                          } else {
                            done(std::move(value));
                          }
                        });
}

absl::StatusOr<std::shared_ptr<StepRendezvous::PeerRecv>> StepRendezvous::StartPeerRecv(
    const std::string& task, const RendezvousKey& key, const RendezvousWait& wait) {
  if (peers_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("tensor '", key.parsed.tensor_name, "' comes from task ", task,
                     " but the worker session has no cluster to reach it"));
  }
  auto recv = std::make_shared<PeerRecv>();
  ASSIGN_OR_RETURN(recv->peer, peers_->GetWorker(task));
  recv->task = task;
  recv->tensor_name = key.parsed.tensor_name;
  // Cancelled when the kernel's step or this worker's step is cancelled.
  recv->cancel = std::make_shared<CancellationManager>();
  for (CancellationManager* parent : {wait.cancellation, state_.cancellation.get()}) {
    if (parent == nullptr) continue;
    const CancellationManager::Token token = parent->RegisterCallback(
        [cancel = recv->cancel, parent] { cancel->StartCancel(parent->status()); });
    if (token == CancellationManager::kInvalidToken) {
      recv->cancel->StartCancel(parent->status());
    } else {
      recv->links.push_back({parent, token});
    }
  }
  recv->request.set_step_id(step_id_);
  recv->request.set_rendezvous_key(key.full);
  if (wait.deadline != absl::InfiniteFuture()) {
    const int64_t left_ms = wait.clock == nullptr  // The deadline is InfinitePast.
                                ? 0
                                : absl::ToInt64Milliseconds(wait.deadline - wait.clock->Now());
    recv->request.set_timeout_in_ms(std::max<int64_t>(1, left_ms));
  }
  return recv;
}

absl::Status StepRendezvous::PeerRecv::End(const absl::Status& status) {
  for (const Link& link : links) link.parent->DeregisterCallback(link.token);
  links.clear();
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("receiving tensor '", tensor_name, "' from task ",
                                                  task, ": ", status.message()));
}

void StepRendezvous::StartAbort(absl::Status status) {
  state_.rendezvous->StartAbort(status);
  state_.cancellation->StartCancel(std::move(status));
}

}  // namespace overseer
