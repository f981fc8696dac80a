#ifndef OVERSEER_CLIENT_TRAINING_MANAGED_THREAD_H_
#define OVERSEER_CLIENT_TRAINING_MANAGED_THREAD_H_

// ManagedThread: a named thread running one function, whose end can be awaited with a
// deadline on an injected Clock. It is what a Coordinator joins (TensorFlow's
// threading.Thread with is_alive() and join(timeout)): QueueRunner and LooperThread
// hand these out, and any function can be run in one.
//
//   std::shared_ptr<ManagedThread> t = ManagedThread::Start("reader", [&] { Read(); });
//   coord.RegisterThread(t);
//   ...
//   RETURN_IF_ERROR(coord.Join());

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace overseer {

// Thread-safe. Held by std::shared_ptr: whoever drops the last reference joins the OS
// thread (the destructor blocks until the function has returned, if it was started);
// dropping the last reference on the thread itself detaches it instead, which is safe
// because the running thread only touches state it co-owns.
class ManagedThread {
 public:
  // A thread that will run `body` once Start() is called. `name` identifies it in
  // errors and logs (e.g. Coordinator::Join's list of threads still running).
  static std::shared_ptr<ManagedThread> Create(std::string name, std::function<void()> body);
  // Create followed by Start.
  static std::shared_ptr<ManagedThread> Start(std::string name, std::function<void()> body);

  ~ManagedThread();
  ManagedThread(const ManagedThread&) = delete;
  ManagedThread& operator=(const ManagedThread&) = delete;

  // Starts running the body on a new OS thread. Later calls do nothing.
  void Start();

  const std::string& name() const { return state_->name; }
  // Whether Start() was called.
  bool started() const { return state_->started.load(std::memory_order_acquire); }
  // Whether the body has returned.
  bool finished() const { return state_->finished.load(std::memory_order_acquire); }
  // Started and not finished (TensorFlow's is_alive()).
  bool IsAlive() const { return started() && !finished(); }

  // Blocks until the body has returned or `clock` reaches `deadline` (use
  // absl::InfiniteFuture() to wait without limit). Returns finished(). A thread that
  // was never started does not finish: the wait runs to the deadline.
  bool WaitUntilFinished(Clock* clock, absl::Time deadline);

  // Calls `observer` once, on the thread, right after the body returns; if it has
  // returned already, calls it now on the caller's thread. Observers run while an
  // internal lock is held: they must be quick and must not call this thread's methods.
  // An observer is kept until the body returns, so it must stay safe to call until
  // then (capture a weak_ptr to what it touches).
  void AddFinishObserver(std::function<void()> observer);

 private:
  struct State {
    std::string name;
    std::function<void()> body;
    std::atomic<bool> started{false};
    std::atomic<bool> finished{false};
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;  // `finished`, for Condition waits.
    std::vector<std::function<void()>> observers ABSL_GUARDED_BY(mu);
  };

  explicit ManagedThread(std::shared_ptr<State> state) : state_(std::move(state)) {}
  static void Run(const std::shared_ptr<State>& state);

  const std::shared_ptr<State> state_;
  absl::Mutex start_mu_;
  std::thread thread_ ABSL_GUARDED_BY(start_mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_MANAGED_THREAD_H_
