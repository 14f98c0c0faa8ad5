// HeadObserver: logs each change of a lock queue's head (dlock/testing/history.hpp).
#include <atomic>
#include <cstdio>
#include <optional>
#include <thread>

#include "dlock/inspect.hpp"
#include "dlock/testing/history.hpp"

namespace dlock::testing {
namespace {

std::string hex(std::int64_t id) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(id));
  return buffer;
}

}  // namespace

struct HeadObserver::State {
  State(Session& session, std::string path, const std::string& log_file)
      : watch(session, std::move(path)), log(log_file) {}
  QueueWatch watch;
  HoldLogWriter log;
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> changes{0};
  std::thread thread;
};

HeadObserver::HeadObserver(Session& session, std::string path, const std::string& log_file)
    : state_(std::make_unique<State>(session, std::move(path), log_file)) {
  state_->thread = std::thread([state = state_.get()] {
    std::optional<std::string> last;  // the head node logged last ("" for an empty queue)
    while (!state->stopping.load()) {
      try {
        // Short waits, so that stop() is prompt.
        const auto queue = state->watch.next(std::chrono::milliseconds(100));
        if (!queue) continue;
        const auto holders = queue->holders();
        const QueuedContender* head = holders.empty() ? nullptr : holders.front();
        const std::string name = head ? head->node : "";
        if (last == name) continue;
        last = name;
        state->log.record(HoldEvent{.client = "observer",
                                    .session = head ? hex(head->session_id) : "",
                                    .event = "head",
                                    .what = name,
                                    .at_ns = HoldLogWriter::now_ns(),
                                    .asked_ns = 0,
                                    .token = head ? head->fencing_token : 0});
        state->changes.fetch_add(1);
      } catch (const std::exception& e) {
        try {
          state->log.record(HoldEvent{.client = "observer",
                                      .session = "",
                                      .event = "observer-error",
                                      .what = e.what(),
                                      .at_ns = HoldLogWriter::now_ns(),
                                      .asked_ns = 0,
                                      .token = 0});
        } catch (...) {  // the log itself failed (a full disk): nothing more to tell
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    }
  });
}

void HeadObserver::stop() {
  state_->stopping.store(true);
  if (state_->thread.joinable()) state_->thread.join();
}

HeadObserver::~HeadObserver() { stop(); }

std::size_t HeadObserver::changes() const { return state_->changes.load(); }

}  // namespace dlock::testing
