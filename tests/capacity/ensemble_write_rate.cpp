// ensemble_write_rate: the write rate a local 3-member ZooKeeper ensemble sustains (docs/CAPACITY.md).
//
//   build/tests/capacity/ensemble_write_rate [seconds=5] [sessions=4] [outstanding=200]
//
// Starts a 3-member ensemble from the Debian packages on loopback (include/dlock/testing/ensemble.hpp,
// stopped by PID at exit), then `sessions` raw C-client sessions each keep `outstanding`
// asynchronous creates of EPHEMERAL_SEQUENTIAL nodes in flight for `seconds`. Prints one JSON line
// with the completed creates per second: every create is a quorum write, fsync'd on a majority,
// the same kind of write a lock node's create or delete is.
#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dlock/testing/ensemble.hpp"
#include "plain_client.hpp"

namespace {

std::atomic<std::uint64_t> completed{0};
std::atomic<std::uint64_t> failed{0};
std::atomic<bool> stopping{false};

struct Writer {
  std::unique_ptr<dlock::testing::PlainClient> client;
  std::string base;
};

void issue(Writer* writer);

void on_created(int rc, const char*, const void* data) {
  auto* writer = static_cast<Writer*>(const_cast<void*>(data));
  if (rc == ZOK) {
    completed.fetch_add(1, std::memory_order_relaxed);
  } else {
    failed.fetch_add(1, std::memory_order_relaxed);
  }
  if (!stopping.load()) issue(writer);
}

void issue(Writer* writer) {
  const int rc = writer->client->call([&](zhandle_t* zh) {
    return zoo_acreate(zh, writer->base.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, on_created,
                       writer);
  });
  if (rc != ZOK) failed.fetch_add(1, std::memory_order_relaxed);
}

// The persistent parent of a writer's nodes.
void make_base(Writer& writer) {
  dlock::testing::PlainReply<int> reply;
  const auto done = [](int rc, const char*, const void* data) { dlock::testing::PlainReply<int>::of(data).set(rc); };
  const int sent = writer.client->call([&](zhandle_t* zh) {
    return zoo_acreate(zh, writer.base.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, done, reply.tag());
  });
  const int rc = sent == ZOK ? reply.get().first : sent;
  if (rc != ZOK && rc != ZNODEEXISTS) throw std::runtime_error("creating " + writer.base + ": " + zerror(rc));
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::stod(argv[1]) : 5;
  const int sessions = argc > 2 ? std::stoi(argv[2]) : 4;
  const int outstanding = argc > 3 ? std::stoi(argv[3]) : 200;
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  dlock::testing::TestingEnsemble ensemble;
  const std::string connect = ensemble.connect_string();
  std::vector<Writer> writers(static_cast<std::size_t>(sessions));
  for (int i = 0; i < sessions; ++i) {
    writers[i].client = std::make_unique<dlock::testing::PlainClient>(connect, std::chrono::seconds(10));
    if (!writers[i].client->wait_connected(std::chrono::seconds(10))) {
      std::fprintf(stderr, "ensemble_write_rate: no session with %s within 10 s\n", connect.c_str());
      return 1;
    }
    writers[i].base = "/write-rate-" + std::to_string(i);
    make_base(writers[i]);
    writers[i].base += "/n-";
  }
  for (auto& writer : writers) {
    for (int j = 0; j < outstanding; ++j) issue(&writer);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // warm-up
  const auto start_count = completed.load();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const auto end_count = completed.load();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stopping = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (auto& writer : writers) writer.client.reset();
  std::printf(
      "{\"ensemble_members\":%d,\"sessions\":%d,\"outstanding_per_session\":%d,\"seconds\":%.3f,"
      "\"writes\":%llu,\"writes_per_s\":%.1f,\"failed\":%llu}\n",
      ensemble.member_count(), sessions, outstanding, elapsed, static_cast<unsigned long long>(end_count - start_count),
      (end_count - start_count) / elapsed, static_cast<unsigned long long>(failed.load()));
  return 0;
}
