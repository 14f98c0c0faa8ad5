// Client: the requests. Each is registered in the Inflight set, sent on the current handle under
// handle_mutex_ (shared) by the calling thread, and completed by a C-client trampoline that
// claims it back; the waiting, if any, is the caller's (Pending).
#include "src/session/client.hpp"

#include <array>
#include <memory>
#include <type_traits>
#include <utility>

#include "src/base/log_bridge.hpp"
#include "src/session/client_internal.hpp"
#include "src/session/janitor.hpp"
#include "src/session/test_hooks.hpp"

namespace dlock::detail {
namespace {

// One request's completion callback, registered in the Client's Inflight set until it runs.
template <class Result>
struct RequestOf : Inflight::Request {
  explicit RequestOf(std::function<void(Result)> callback) : done(std::move(callback)) {}
  void fail(int rc) override {
    if constexpr (std::is_same_v<Result, int>) {
      done(rc);
    } else {
      Result result{};
      result.rc = rc;
      done(std::move(result));
    }
  }
  std::function<void(Result)> done;
};

// Completion trampolines: `data` is a RequestOf; whoever claims it from the Inflight set owns it.
// They copy the reply out of the C client's buffers and hand the completion to the loop, which
// runs it once the C client has returned (HandleLoop::defer).
template <class Result>
std::unique_ptr<RequestOf<Result>> claim(const void* data) {
  auto* request = static_cast<RequestOf<Result>*>(const_cast<void*>(data));
  if (!request->owner->claim(request)) return nullptr;
  return std::unique_ptr<RequestOf<Result>>(request);
}

template <class Result>
void complete(std::unique_ptr<RequestOf<Result>> request, Result result) {
  HandleLoop::defer([request = request.release(), result = std::move(result)]() mutable {
    std::unique_ptr<RequestOf<Result>>(request)->done(std::move(result));
  });
}

void on_created(int rc, const char* path, const Stat* stat, const void* data) {
  auto request = claim<CreateResult>(data);
  if (!request) return;
  CreateResult result{rc, {}, 0, request->generation.load(std::memory_order_relaxed)};
  if (rc == ZOK) {
    result.path = path ? path : "";
    result.czxid = stat ? stat->czxid : 0;
  }
  complete(std::move(request), std::move(result));
}

void on_children(int rc, const String_vector* strings, const void* data) {
  auto request = claim<ChildrenResult>(data);
  if (!request) return;
  ChildrenResult result{rc, {}, 0};
  if (rc == ZOK && strings) {
    result.names.reserve(static_cast<std::size_t>(strings->count));
    for (int i = 0; i < strings->count; ++i) result.names.emplace_back(strings->data[i]);
  }
  // The mark where the completion runs: the child events the C client delivered before this
  // reply have been handed to the child watches by then (they are deferred in the same order).
  HandleLoop::defer([request = request.release(), result = std::move(result)]() mutable {
    result.event_mark = ChildWatches::last_mark();
    std::unique_ptr<RequestOf<ChildrenResult>>(request)->done(std::move(result));
  });
}

void on_stat(int rc, const Stat* stat, const void* data) {
  auto request = claim<StatResult>(data);
  if (!request) return;
  StatResult result{rc, {}};
  if (rc == ZOK && stat) result.stat = *stat;
  complete(std::move(request), result);
}

void on_data_stat(int rc, const char* value, int length, const Stat* stat, const void* data) {
  auto request = claim<DataResult>(data);
  if (!request) return;
  DataResult result;
  result.rc = rc;
  if (rc == ZOK) {
    if (value && length > 0) result.data.assign(value, static_cast<std::size_t>(length));
    if (stat) result.stat = *stat;
  }
  complete(std::move(request), std::move(result));
}

// A guarded write's request: the multi's operations and results live as long as it does.
struct GuardedWriteRequest final : RequestOf<GuardedWriteResult> {
  using RequestOf::RequestOf;
  std::string guard;
  std::string path;
  std::string data;
  std::array<zoo_op_t, 2> ops{};
  std::array<zoo_op_result_t, 2> results{};
  Stat stat{};
  std::array<char, 1024> created{};  // a create's path, as the C client fills it in
};

void on_guarded_write(int rc, const void* data) {
  auto request = claim<GuardedWriteResult>(data);
  if (!request) return;
  const auto& write = static_cast<const GuardedWriteRequest&>(*request);
  GuardedWriteResult result;
  result.rc = rc;
  // A refused multi reports the failing operation's error in its result (the others: ZOK before
  // it, ZRUNTIMEINCONSISTENCY after); a connection loss marks them all ZCONNECTIONLOSS.
  result.guard_gone = rc != ZOK && write.results[0].err == ZNONODE;
  if (rc == ZOK) result.stat = write.stat;
  complete(std::move(request), result);
}

void on_data(int rc, const char*, int, const Stat*, const void* data) {
  if (auto request = claim<int>(data)) complete(std::move(request), rc);
}

void on_string(int rc, const char*, const void* data) {
  if (auto request = claim<int>(data)) complete(std::move(request), rc);
}

void on_void(int rc, const void* data) {
  if (auto request = claim<int>(data)) complete(std::move(request), rc);
}

}  // namespace

template <class Result, class Submit>
void Client::queue_request(std::function<void(Result)> done, Submit&& submit) {
  auto* request = new RequestOf<Result>(std::move(done));
  inflight_.add(request);
  const int rc = submit(static_cast<const void*>(request), static_cast<Inflight::Request*>(request));
  // Refused outright: the completion will not run. (If it somehow ran, it claimed the request.)
  if (rc != ZOK && inflight_.claim(request)) {
    std::unique_ptr<RequestOf<Result>> owned(request);
    owned->fail(rc);
  }
}

template <class Submit>
int Client::submit(Inflight::Request* request, RequestKind kind, Submit&& submit) {
  ReaderLock lock(handle_mutex_);
  if (zh_ == nullptr) return ZCLOSING;
  request->generation.store(context_->generation, std::memory_order_relaxed);
  requests_.fetch_add(1, std::memory_order_relaxed);
  metrics_.emit([kind](MetricsSink& sink) { sink.on_request(kind); });
  return loop_->with(zh_, submit);
}

void Client::create(const std::string& path, std::string_view data, int mode, CreateCallback done) {
  queue_request<CreateResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::Create, [&](zhandle_t* zh) {
      return zoo_acreate2(zh, path.c_str(), data.empty() ? "" : data.data(), static_cast<int>(data.size()),
                          &acl_vector_, mode, on_created, ctx);
    });
  });
}

void Client::children(const std::string& path, ChildrenCallback done, bool watch) {
  queue_request<ChildrenResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::GetChildren,
                  [&](zhandle_t* zh) { return zoo_aget_children(zh, path.c_str(), watch ? 1 : 0, on_children, ctx); });
  });
}

void Client::exists(const std::string& path, StatCallback done) {
  queue_request<StatResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::Exists,
                  [&](zhandle_t* zh) { return zoo_aexists(zh, path.c_str(), 0, on_stat, ctx); });
  });
}

void Client::get(const std::string& path, DataCallback done, bool watch) {
  queue_request<DataResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::GetData, [&](zhandle_t* zh) {
      if (!watch) return zoo_aget(zh, path.c_str(), 0, on_data_stat, ctx);
      return zoo_awget(zh, path.c_str(), &Client::on_event, const_cast<void*>(zoo_get_context(zh)), on_data_stat, ctx);
    });
  });
}

void Client::set(const std::string& path, std::string_view data, int version, StatCallback done) {
  queue_request<StatResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::SetData, [&](zhandle_t* zh) {
      return zoo_aset(zh, path.c_str(), data.empty() ? "" : data.data(), static_cast<int>(data.size()), version,
                      on_stat, ctx);
    });
  });
}

void Client::guarded_write(const std::string& guard, const std::string& path, std::string_view data,
                           std::optional<int> version, GuardedWriteCallback done) {
  auto* request = new GuardedWriteRequest(std::move(done));
  request->guard = guard;
  request->path = path;
  request->data = std::string(data);
  zoo_check_op_init(&request->ops[0], request->guard.c_str(), -1);
  if (version) {
    zoo_set_op_init(&request->ops[1], request->path.c_str(), request->data.data(),
                    static_cast<int>(request->data.size()), *version, &request->stat);
  } else {
    zoo_create_op_init(&request->ops[1], request->path.c_str(), request->data.data(),
                       static_cast<int>(request->data.size()), &acl_vector_, 0, request->created.data(),
                       static_cast<int>(request->created.size()));
  }
  inflight_.add(request);
  const int rc = submit(request, RequestKind::SetData, [&](zhandle_t* zh) {
    // zoo_amulti on a handle whose session expired (ZooKeeper 3.8's C client) does not return at
    // the first refused operation: it frees the next operation's path from a stale local, which
    // is the previous operation's path, the caller's memory (here `guard`): a double free when
    // the request goes. Its single-request calls check first; so does this one.
    // (ZSESSIONEXPIRED, not ZINVALIDSTATE: the Lost state may still be on its way to the loop.)
    if (is_unrecoverable(zh) != ZOK) return static_cast<int>(ZSESSIONEXPIRED);
    // The context is the base the trampoline's claim() expects.
    return zoo_amulti(zh, 2, request->ops.data(), request->results.data(), on_guarded_write,
                      static_cast<RequestOf<GuardedWriteResult>*>(request));
  });
  if (rc != ZOK && inflight_.claim(request)) {
    std::unique_ptr<GuardedWriteRequest> owned(request);
    owned->fail(rc);
  }
}

void Client::remove(const std::string& path, RcCallback done) {
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::Delete,
                  [&](zhandle_t* zh) { return zoo_adelete(zh, path.c_str(), -1, on_void, ctx); });
  });
}

void Client::sync(const std::string& path, RcCallback done) {
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::Sync,
                  [&](zhandle_t* zh) { return zoo_async(zh, path.c_str(), on_string, ctx); });
  });
}

void Client::watch(const std::string& path, RcCallback done) {
  // getData rather than exists: on NONODE it leaves no watch behind (as Curator does).
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::GetData, [&](zhandle_t* zh) {
      return zoo_awget(zh, path.c_str(), &Client::on_event, const_cast<void*>(zoo_get_context(zh)), on_data, ctx);
    });
  });
}

void Client::release_node(const std::string& path) {
  remove(path, [this, path](int rc) {
    if (reply_lost(rc)) {
      if (!test_hooks::no_release_retry.load()) janitor_->delete_node(path);
    }
    // ZOK, ZNONODE: gone. SESSIONEXPIRED, CLOSING, INVALIDSTATE: the session took it.
    else if (rc == ZNOAUTH) {
      log(LogLevel::Error, "could not delete node " + path + ": ZooKeeper refused it (" + zerror(rc) +
                               "): the session's identity (" + identity() +
                               ") lacks the DELETE permission on its lock directory (its ACL); the node stays, and "
                               "blocks the lock, until the session ends");
    } else if (rc != ZOK && rc != ZNONODE && rc != ZSESSIONEXPIRED && rc != ZCLOSING && rc != ZINVALIDSTATE) {
      log(LogLevel::Error, "could not delete node " + path + ": " + zerror(rc));
    }
  });
}

void Client::release_prefixed(const std::string& dir, const std::string& prefix) {
  janitor_->delete_prefixed(dir, prefix);
}

}  // namespace dlock::detail
