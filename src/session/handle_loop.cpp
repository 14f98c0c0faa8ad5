// HandleLoop: the Asio loop driving a handle of the C client's single-threaded library.
#include "src/session/handle_loop.hpp"

#include <pthread.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <string>
#include <utility>

#include "dlock/error.hpp"
#include "src/base/log_bridge.hpp"
#include "src/session/may_block.hpp"

namespace dlock::detail {
namespace {

// After an error from zookeeper_interest() (no address resolved, a connect that failed at once),
// the time to the next try: the C client names none then, and would be asked again at once.
constexpr auto kRetryAfterError = std::chrono::milliseconds(50);

// The batch the C client's callbacks go to while it runs on this thread inside the loop.
thread_local std::vector<std::function<void()>>* t_collecting = nullptr;
// Set while this thread runs completions (on the loop thread, while it runs the queue).
thread_local bool t_running_completions = false;

// Marks the calling thread as running completions for a scope.
class CallbackScope {
 public:
  CallbackScope() : outer_(std::exchange(t_running_completions, true)) {}
  ~CallbackScope() { t_running_completions = outer_; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

 private:
  bool outer_;
};

// A slice of drive_until(): it looks at `done()` at least this often, also while another thread
// runs the handlers.
constexpr auto kDriveSlice = std::chrono::milliseconds(10);

// The application's io_contexts that live loops run on, for check_may_block(): counted, since
// several Sessions may share one.
struct ExternalContexts {
  Mutex mutex;
  std::vector<boost::asio::io_context*> contexts DLOCK_GUARDED_BY(mutex);
};
ExternalContexts& external_contexts() {
  static auto* registry = new ExternalContexts;  // never destroyed: Sessions may outlive statics
  return *registry;
}

std::uint64_t inode_of(int fd) {
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

}  // namespace

HandleLoop::Collecting::Collecting(Batch& batch) : outer_(std::exchange(t_collecting, &batch)) {}
HandleLoop::Collecting::~Collecting() { t_collecting = outer_; }

LoopThread::LoopThread() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "dlock-zk");
    auto work = boost::asio::make_work_guard(io_);
    io_.run();
  });
}

LoopThread::~LoopThread() {
  io_.stop();
  thread_.join();
}  // io_'s destructor destroys the handlers still pending, and with them their HandleLoop

std::shared_ptr<HandleLoop> HandleLoop::make(boost::asio::io_context& io, bool external) {
  return std::shared_ptr<HandleLoop>(new HandleLoop(io, external));
}

HandleLoop::HandleLoop(boost::asio::io_context& io, bool external) : io_(io), external_(external) {
  if (!external_) return;
  auto& registry = external_contexts();
  MutexLock lock(registry.mutex);
  registry.contexts.push_back(&io_);
  registered_ = true;
}

HandleLoop::~HandleLoop() { unregister_external(); }

void HandleLoop::stop() {
  {
    MutexLock lock(io_mutex_);
    stopped_ = true;
    zh_ = nullptr;  // the Client closed it (one still here would be left to the process's end)
    follow_socket(-1);
    timer_.cancel();
    timing_ = false;
    ++timer_epoch_;
  }
  // Completions still queued name the Client, which may be going: dropped (the Client failed
  // its requests already), and destroyed here, unlocked.
  std::deque<std::function<void()>> dropped;
  {
    MutexLock lock(queue_mutex_);
    dropped.swap(queue_);
  }
  unregister_external();
}

void HandleLoop::unregister_external() {
  if (!registered_.exchange(false)) return;
  auto& registry = external_contexts();
  MutexLock lock(registry.mutex);
  const auto it = std::find(registry.contexts.begin(), registry.contexts.end(), &io_);
  if (it != registry.contexts.end()) registry.contexts.erase(it);
}

bool HandleLoop::drive_until(const std::function<bool()>& done,
                             std::optional<std::chrono::steady_clock::time_point> until) {
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (until && now >= *until) return false;
    // Stopped: its run() returned for want of work (no handle waits yet), or the application
    // stopped it; it runs nothing until restarted.
    if (io_.stopped()) io_.restart();
    const auto slice = until ? std::min<std::chrono::steady_clock::duration>(kDriveSlice, *until - now) : kDriveSlice;
    io_.run_one_for(slice);
  }
  return true;
}

void check_may_block(std::string_view what) {
  auto& registry = external_contexts();
  MutexLock lock(registry.mutex);
  for (auto* io : registry.contexts) {
    if (!io->get_executor().running_in_this_thread()) continue;
    throw WouldDeadlock(std::string(what) +
                        " would block the thread running the io_context a Session was given "
                        "(SessionOptions::io_context), and the reply it waits for can only be read by a thread "
                        "running that io_context: use the async_ form on that thread, or call it from another one");
  }
}

zhandle_t* HandleLoop::install(zhandle_t* zh) {
  Batch batch;
  bool queued = false;
  zhandle_t* old = nullptr;
  {
    MutexLock lock(io_mutex_);
    Collecting collecting(batch);
    old = std::exchange(zh_, zh);
    follow_socket(-1);  // the old handle's socket is not waited on any more
    timer_.cancel();
    timing_ = false;
    ++timer_epoch_;
    arm();
    queued = enqueue(batch);
  }
  run_soon(queued);
  return old;
}

void HandleLoop::close(zhandle_t* zh) {
  Batch batch;
  {
    Collecting collecting(batch);
    zookeeper_close(zh);
  }
  run_soon(enqueue(batch));
}

void HandleLoop::quiesce() {
  if (t_running_completions && on_loop_thread()) return;
  if (!external_) {
    // The loop's own thread runs everything posted before this, the queue's runs included.
    if (on_loop_thread()) return;
    std::promise<void> done;
    boost::asio::post(io_, [&done] { done.set_value(); });
    done.get_future().wait();
    return;
  }
  // The application's io_context may not be running (its run() returned, or it is never run
  // again): run here what no loop thread has begun, after a run under way ends.
  {
    UniqueLock lock(queue_mutex_);
    queue_idle_.wait(lock, [&]() DLOCK_REQUIRES(queue_mutex_) { return queue_state_ != QueueState::running; });
    if (queue_.empty()) return;
    queue_state_ = QueueState::running;  // a posted run finds it taken
  }
  run_queue();
}

void HandleLoop::defer(std::function<void()> run) {
  if (t_collecting != nullptr) {
    t_collecting->push_back(std::move(run));
  } else {
    CallbackScope scope;
    run();
  }
}

bool HandleLoop::on_callback_thread() noexcept { return t_running_completions; }

bool HandleLoop::after_request(zhandle_t* zh, Batch& batch) {
  if (zh != nullptr && zh == zh_ && fd_ >= 0) arm();
  return enqueue(batch);
}

void HandleLoop::turn(int events, std::uint64_t epoch, bool socket_wait, bool write) {
  Batch batch;
  bool queued = false;
  {
    MutexLock lock(io_mutex_);
    if (stopped_) return;
    if (socket_wait) {
      if (epoch != socket_epoch_) return;  // a wait of an earlier socket
      (write ? writing_ : reading_) = false;
    } else {
      if (epoch != timer_epoch_) return;
      timing_ = false;
    }
    if (events < 0) return;  // cancelled
    Collecting collecting(batch);
    // Its errors (a lost connection, an expired session) come back through the watcher and the
    // completions; arm() asks the handle what to wait for next.
    if (zh_ != nullptr) zookeeper_process(zh_, events);
    arm();
    queued = enqueue(batch);
  }
  run_here(queued);
}

void HandleLoop::arm() {
  if (zh_ == nullptr || stopped_) return;
  int fd = -1, interest = 0;
  timeval tv{};
  const int rc = zookeeper_interest(zh_, &fd, &interest, &tv);
  if (rc == ZINVALIDSTATE) {
    // The session expired or its credentials were refused: the handle waits for nothing more
    // (the Client replaces it).
    follow_socket(-1);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (rc != ZOK) {
    // What it said of its socket cannot be trusted (a resolution that failed says nothing; a
    // timeout names the socket it just closed): keep the socket only while it is still open,
    // and ask again shortly.
    if (!socket_still_open()) follow_socket(-1);
    if (fd_ >= 0 && !reading_) wait_socket(false);
    wait_until(now + kRetryAfterError);
    return;
  }
  follow_socket(fd);
  if (fd_ >= 0 && (interest & ZOOKEEPER_READ) != 0 && !reading_) wait_socket(false);
  if (fd_ >= 0 && (interest & ZOOKEEPER_WRITE) != 0 && !writing_) wait_socket(true);
  wait_until(now + std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec));
}

bool HandleLoop::socket_still_open() const { return fd_ >= 0 && inode_of(fd_) == inode_; }

void HandleLoop::follow_socket(int fd) {
  const std::uint64_t inode = inode_of(fd);
  if (fd == fd_ && inode == inode_) return;
  if (fd_ >= 0) socket_.release();  // its waits finish with operation_aborted; the C client closes it
  ++socket_epoch_;
  reading_ = writing_ = false;
  fd_ = -1;
  inode_ = 0;
  if (fd < 0 || inode == 0) return;
  boost::system::error_code ec;
  socket_.assign(fd, ec);
  if (ec) return;  // not waited on: the timer's turn finds out what became of it
  fd_ = fd;
  inode_ = inode;
}

void HandleLoop::wait_socket(bool write) {
  (write ? writing_ : reading_) = true;
  const auto wait =
      write ? boost::asio::posix::descriptor_base::wait_write : boost::asio::posix::descriptor_base::wait_read;
  socket_.async_wait(
      wait, [self = shared_from_this(), write, epoch = socket_epoch_](const boost::system::error_code& ec) {
        // Another error (the socket closed under the wait) is the C client's to find: it reads.
        const int events = ec == boost::asio::error::operation_aborted ? -1 : write ? ZOOKEEPER_WRITE : ZOOKEEPER_READ;
        self->turn(events, epoch, true, write);
      });
}

void HandleLoop::wait_until(std::chrono::steady_clock::time_point due) {
  if (timing_ && timer_due_ <= due) return;  // an earlier turn comes anyway: it arms again
  timing_ = true;
  timer_due_ = due;
  timer_.expires_at(due);  // a wait begun before finishes with operation_aborted
  timer_.async_wait([self = shared_from_this(), epoch = ++timer_epoch_](const boost::system::error_code& ec) {
    // The time the handle named: a ping, a connection attempt, a timeout.
    self->turn(ec == boost::asio::error::operation_aborted ? -1 : 0, epoch, false, false);
  });
}

bool HandleLoop::enqueue(Batch& batch) {
  if (batch.empty()) return false;
  MutexLock lock(queue_mutex_);
  for (auto& run : batch) queue_.push_back(std::move(run));
  batch.clear();
  return true;
}

void HandleLoop::run_here(bool queued) {
  if (!queued) return;
  {
    MutexLock lock(queue_mutex_);
    if (queue_state_ == QueueState::running) return;  // another loop thread runs it: it takes it
    queue_state_ = QueueState::running;               // a run posted and not begun finds it taken
  }
  run_queue();
}

void HandleLoop::run_soon(bool queued) {
  if (!queued) return;
  {
    MutexLock lock(queue_mutex_);
    if (queue_state_ != QueueState::idle) return;  // a run is posted or under way: it takes what was just queued
    queue_state_ = QueueState::posted;
  }
  boost::asio::post(io_, [self = shared_from_this()] { self->run_posted(); });
}

void HandleLoop::run_posted() {
  {
    MutexLock lock(queue_mutex_);
    if (queue_state_ != QueueState::posted) return;  // run meanwhile by another thread
    queue_state_ = QueueState::running;
  }
  run_queue();
}

void HandleLoop::run_queue() {
  CallbackScope scope;
  for (;;) {
    std::function<void()> next;
    {
      MutexLock lock(queue_mutex_);
      if (queue_.empty()) {
        queue_state_ = QueueState::idle;
        queue_idle_.notify_all();
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    // dlock's completions catch what users' code throws; anything else must not leave the queue
    // marked as running (no completion would run again, and a close would wait forever), nor
    // leave through the application's run().
    try {
      next();
    } catch (const std::exception& e) {
      log(LogLevel::Error, std::string("a ZooKeeper completion threw, ignored: ") + e.what());
    } catch (...) {
      log(LogLevel::Error, "a ZooKeeper completion threw a non-standard exception, ignored");
    }
  }
}

}  // namespace dlock::detail
