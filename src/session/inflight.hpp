// Internal: the requests handed to the ZooKeeper C client whose completion has not run yet.
//
// The C client does not promise to run every completion: a reply that arrives while the handle
// is being closed is dropped with its completion (and a thread waiting for it would wait forever).
// So every request is registered here until its completion claims it, and Client::close() fails
// whatever is left with ZCLOSING once the handle is gone.
#pragma once

#include <atomic>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "src/base/mutex.hpp"

namespace dlock::detail {

class Inflight {
 public:
  struct Request {
    virtual ~Request() = default;
    // Completes the request with `rc` and no result (refused, or dropped at close).
    virtual void fail(int rc) = 0;
    Inflight* owner = nullptr;
    // The handle it was submitted on (see Client::replace_handle). Atomic: it is stamped under
    // Client::handle_mutex_ after the request is registered here, and fail_generation reads it
    // under this registry's mutex only (ThreadSanitizer found the race: scripts/test-tsan.sh). A
    // request stamped with the handle being replaced is stamped before the replacement takes
    // handle_mutex_, so fail_generation sees that value; any other value it may read (0, or the
    // new handle's) does not match the old handle either way.
    std::atomic<std::uint64_t> generation{0};
  };

  void add(Request* request) {
    MutexLock lock(mutex_);
    request->owner = this;
    requests_.insert(request);
  }

  // True if `request` was still registered: the caller now owns it and must complete it.
  bool claim(Request* request) {
    MutexLock lock(mutex_);
    return requests_.erase(request) == 1;
  }

  // Completes (with `rc`) and frees every request still registered. Call once no completion can
  // run any more.
  void fail_all(int rc) {
    fail_if(rc, [](const Request*) { return true; });
  }

  // The same for the requests of one handle, once that handle is closed.
  void fail_generation(std::uint64_t generation, int rc) {
    fail_if(rc, [generation](const Request* r) { return r->generation.load(std::memory_order_relaxed) == generation; });
  }

 private:
  template <class Predicate>
  void fail_if(int rc, Predicate matches) {
    std::vector<Request*> left;
    {
      MutexLock lock(mutex_);
      for (auto it = requests_.begin(); it != requests_.end();) {
        if (matches(*it)) {
          left.push_back(*it);
          it = requests_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (Request* request : left) {
      request->fail(rc);
      delete request;
    }
  }

  Mutex mutex_;
  std::unordered_set<Request*> requests_ DLOCK_GUARDED_BY(mutex_);
};

}  // namespace dlock::detail
