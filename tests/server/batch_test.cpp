// BatchLock (dlock/batch.hpp): the holder serves the queue. Each request gets its own result;
// batches exclude each other and every other holder of the path, across clients; a batch costs
// one lock use; failures stay with their request unless the handler throws; queued requests time
// out without running. Negative controls: with the lock's exclusion switched off, two clients'
// batches overlap and lose updates; with batching off (max_batch 1), requests cost a lock use each.
#include "dlock/batch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/eventually.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "scoped_callback.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

using Doubler = BatchLock<int, int>;

// A resource updated by read, pause, write: concurrent writers lose updates.
struct Counter {
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  int value = 0;  // written only inside batches
  void add(int n) {
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    const int read = value;
    std::this_thread::sleep_for(200us);
    value = read + n;
    inside.fetch_sub(1);
  }
};

struct Served {
  std::uint64_t requests = 0;
  std::uint64_t batches = 0;
  std::uint64_t zk_requests = 0;
  int wrong_results = 0;
};

// `clients` Sessions, each a BatchLock on `path` submitted to by `threads` threads `each` times;
// every batch adds its size to `counter` once.
Served hammer(const std::string& path, Counter& counter, int clients, int threads, int each,
              BatchOptions options = {}) {
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<Doubler>> locks;
  std::atomic<std::uint64_t> batches{0};
  for (int c = 0; c < clients; ++c) {
    sessions.push_back(std::make_unique<Session>(session_options()));
    locks.push_back(std::make_unique<Doubler>(
        *sessions.back(), path,
        [&](Doubler::Batch& batch) {
          batches.fetch_add(1);
          counter.add(static_cast<int>(batch.size()));
          for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, batch.request(i) * 2);
        },
        options));
  }
  std::uint64_t before = 0;
  for (auto& session : sessions) before += session->stats().requests;
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < clients * threads; ++t) {
    workers.emplace_back([&, lock = locks[t % clients].get(), t] {
      for (int i = 0; i < each; ++i) {
        const int request = t * 100000 + i;
        if (lock->submit(request) != request * 2) wrong.fetch_add(1);
      }
    });
  }
  for (auto& worker : workers) worker.join();
  std::uint64_t after = 0;
  for (auto& session : sessions) after += session->stats().requests;
  return {static_cast<std::uint64_t>(clients * threads * each), batches.load(), after - before, wrong.load()};
}

TEST(Batch, EachRequestGetsItsOwnResultAndBatchesCostOneLockUseEach) {
  Counter counter;
  const Served served = hammer(test_root(), counter, 1, 8, 50);
  EXPECT_EQ(served.wrong_results, 0);
  EXPECT_EQ(counter.value, 400) << "every request served exactly once";
  EXPECT_EQ(counter.overlaps.load(), 0);
  EXPECT_LT(served.batches * 2, served.requests) << served.batches << " batches for " << served.requests;
  // A lock use costs a create, a listing and a delete when no hand-off happens (the eight
  // threads submit in step, so each batch takes the whole queue and nobody waits for the next).
  EXPECT_LE(served.zk_requests, 3 * served.batches + 10) << served.zk_requests << " ZooKeeper requests";
  EXPECT_LT(served.zk_requests * 2, served.requests) << served.zk_requests << " ZooKeeper requests";
}

TEST(Batch, NegativeControlWithBatchesOfOneEveryRequestIsALockUse) {
  Counter counter;
  const Served served = hammer(test_root(), counter, 1, 8, 50, BatchOptions{.max_batch = 1});
  EXPECT_EQ(counter.value, 400);
  EXPECT_EQ(served.batches, served.requests) << "max_batch 1 serves one request per batch";
}

TEST(Batch, BatchesOfTwoClientsExcludeEachOtherAndLoseNoUpdate) {
  Counter counter;
  const Served served = hammer(test_root(), counter, 2, 4, 40);
  EXPECT_EQ(served.wrong_results, 0);
  EXPECT_EQ(counter.overlaps.load(), 0);
  EXPECT_EQ(counter.value, 320);
}

TEST(Batch, NegativeControlWithoutExclusionTwoClientsBatchesOverlap) {
  ScopedHook broken(detail::test_hooks::ignore_queue);
  Counter counter;
  hammer(test_root(), counter, 2, 4, 40);
  EXPECT_GT(counter.overlaps.load(), 0) << "the overlap check cannot see two clients' batches at once";
  EXPECT_LT(counter.value, 320) << "no update was lost: the check cannot fail";
}

// The most batches that began during one of five waits of another client's Mutex for the lock,
// counted from the moment BatchLock's node first saw that client behind it
// (test_hooks::handoff_saw_other_client), while `threads` threads keep BatchLock's batches coming
// (one thread: every batch is a lone request, passed on to the next one by the parked hold).
// From the sighting, not from the start of the wait: until then the batches go on for the other's
// create, its child event and a listing, which hand-off bounds in time (a round trip), not in
// batches, and a slower machine runs more batches in it.
int most_batches_after_another_client_is_seen(const std::string& path, int threads) {
  std::atomic<bool> stop{false};
  std::atomic<bool> other_waits{false};
  std::atomic<bool> seen{false};
  std::atomic<int> batches_meanwhile{0};
  // Only BatchLock's cohort runs it: the other client takes its lock without hand-off (below).
  ScopedCallback saw(detail::test_hooks::handoff_saw_other_client, [&] {
    if (other_waits.load()) seen.store(true);
  });
  Session session(session_options());
  // A parked lock waits up to 5 s (not 200 us) for the next runner: the submitters always come back,
  // but on a loaded machine not always within 200 us, and a lock released for want of a runner
  // would let the other client in whether or not hand-off bounds the passes (the negative control
  // would then pass by luck). Once hand-off will not pass it, the lock is released at once.
  Doubler doubler(
      session, path,
      [&](Doubler::Batch& batch) {
        if (other_waits.load() && seen.load()) batches_meanwhile.fetch_add(1);
        std::this_thread::sleep_for(200us);
        for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, 0);
      },
      BatchOptions{.pass_wait = 5s});
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) (void)doubler.submit(1);
    });
  }
  std::this_thread::sleep_for(100ms);
  // The other client without hand-off: its acquisitions go through no cohort, so every sighting is
  // BatchLock's (the other's own would fire at its grant, with the batches' next node behind it).
  auto other_options = session_options();
  other_options.handoff.local = false;
  Session other(other_options);
  Mutex mutex(other, path);
  int most = 0;
  int waits_seen = 0;  // the other's waits that BatchLock's node saw: none would leave the bound untested
  for (int i = 0; i < 5; ++i) {
    batches_meanwhile.store(0);
    seen.store(false);
    other_waits.store(true);
    const bool got = mutex.try_lock_for(20s);
    other_waits.store(false);
    most = std::max(most, batches_meanwhile.load());
    waits_seen += seen.load() ? 1 : 0;
    EXPECT_TRUE(got) << "the other client never got the lock";
    if (!got) break;
    mutex.unlock();
    std::this_thread::sleep_for(20ms);
  }
  stop.store(true);
  for (auto& worker : workers) worker.join();
  std::printf("[batch] at most %d batches after another client was seen (%d submitting threads, %d waits seen)\n", most,
              threads, waits_seen);
  EXPECT_GE(waits_seen, 1) << "the other client was never seen waiting: hand-off's bound was not exercised";
  return most;
}

TEST(Batch, AnotherClientWaitsNoMoreBatchesThanHandOffAllows) {
  // Hand-off's bound once the other client is seen (dlock/handoff.hpp): max_passes more passes,
  // here batches, plus the batch whose pass was granted before the sighting and began after it.
  const int bound = static_cast<int>(HandoffOptions{}.max_passes) + 1;
  for (const int threads : {6, 1}) {
    EXPECT_LE(most_batches_after_another_client_is_seen(test_root() + "/" + std::to_string(threads), threads), bound)
        << threads << " submitting threads";
  }
}

TEST(Batch, NegativeControlIgnoringOtherClientsStarvesThemBehindBatches) {
  // Passes unbounded: the lock changes hands only once its node carried 1024 holds (batches).
  ScopedHook unfair(detail::test_hooks::handoff_ignore_other_clients);
  EXPECT_GE(most_batches_after_another_client_is_seen(test_root(), 6), 200);
}

TEST(Batch, AFailedRequestLeavesItsBatchMatesTheirResults) {
  Session session(session_options());
  Doubler doubler(session, test_root(), [](Doubler::Batch& batch) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (batch.request(i) % 2 != 0) {
        batch.fail(i, std::make_exception_ptr(std::invalid_argument("odd " + std::to_string(batch.request(i)))));
      } else {
        batch.set_result(i, batch.request(i) * 2);
      }
    }
  });
  std::vector<std::future<int>> results;
  for (int i = 0; i < 16; ++i) results.push_back(std::async(std::launch::async, [&, i] { return doubler.submit(i); }));
  for (int i = 0; i < 16; ++i) {
    if (i % 2 != 0) {
      EXPECT_THROW(results[i].get(), std::invalid_argument) << i;
    } else {
      EXPECT_EQ(results[i].get(), i * 2);
    }
  }
}

TEST(Batch, AThrowingHandlerFailsItsWholeBatchAndTheNextBatchRuns) {
  Session session(session_options());
  std::atomic<int> calls{0};
  Doubler doubler(session, test_root(), [&](Doubler::Batch& batch) {
    for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, 1);
    if (calls.fetch_add(1) == 0) throw std::runtime_error("the transaction rolled back");
  });
  EXPECT_THROW(doubler.submit(1), std::runtime_error);
  EXPECT_EQ(doubler.submit(2), 1);
}

TEST(Batch, ARequestLeftWithoutAResultFailsWithALogicError) {
  Session session(session_options());
  Doubler doubler(session, test_root(), [](Doubler::Batch&) {});
  try {
    (void)doubler.submit(1);
    FAIL() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("without a result"), std::string::npos) << e.what();
  }
}

TEST(Batch, MaxBatchBoundsEveryBatchAndTokensIncreaseBatchByBatch) {
  Session session(session_options());
  std::mutex record;
  std::vector<std::size_t> sizes;
  std::vector<std::int64_t> tokens;
  Doubler doubler(
      session, test_root(),
      [&](Doubler::Batch& batch) {
        {
          std::lock_guard lock(record);
          sizes.push_back(batch.size());
          tokens.push_back(batch.fencing_token());
        }
        std::this_thread::sleep_for(1ms);
        for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, 0);
      },
      BatchOptions{.max_batch = 3});
  std::vector<std::thread> workers;
  for (int t = 0; t < 8; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < 20; ++i) (void)doubler.submit(i);
    });
  }
  for (auto& worker : workers) worker.join();
  std::size_t served = 0;
  bool joined = false;
  for (auto size : sizes) {
    EXPECT_LE(size, 3u);
    served += size;
    joined = joined || size > 1;
  }
  EXPECT_EQ(served, 160u);
  EXPECT_TRUE(joined) << "no batch of more than one: the bound was never tested";
  for (std::size_t i = 1; i < tokens.size(); ++i) EXPECT_LT(tokens[i - 1], tokens[i]) << "batch " << i;
}

TEST(Batch, AQueuedRequestTimesOutWithoutRunningAndLeavesNoNode) {
  Session session(session_options());
  Session other(session_options());
  auto held = LockHandle::acquire(other, test_root());
  std::atomic<int> ran{0};
  Doubler doubler(session, test_root(), [&](Doubler::Batch& batch) {
    ran.fetch_add(static_cast<int>(batch.size()));
    for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, batch.request(i));
  });
  // The first submitter is the runner, waiting for the lock; the second waits in the queue.
  auto runner = std::async(std::launch::async, [&] { return doubler.submit_for(1, 5s); });
  std::this_thread::sleep_for(100ms);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)doubler.submit_for(2, 200ms);
    FAIL() << "no timeout";
  } catch (const LockTimeout& e) {
    EXPECT_NE(std::string(e.what()).find(test_root()), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  held.release();
  EXPECT_EQ(runner.get(), 1);
  EXPECT_EQ(ran.load(), 1) << "the timed-out request ran";
  // The runner itself times out when the lock stays held, and leaves nothing on the server.
  held = LockHandle::acquire(other, test_root());
  EXPECT_THROW((void)doubler.submit_for(3, 200ms), LockTimeout);
  held.release();
  EXPECT_TRUE(eventually([&] { return RawZk(zk_connect()).children(test_root()).empty(); }));
  EXPECT_EQ(doubler.submit_for(4, 5s), 4) << "the next runner after a timed-out one serves";
}

TEST(Batch, ASubmitFromInsideTheHandlerIsRefusedNotADeadlock) {
  Session session(session_options());
  Doubler* self = nullptr;
  Doubler doubler(session, test_root(), [&](Doubler::Batch& batch) {
    try {
      (void)self->submit_for(0, 1s);
      batch.set_result(0, 1);
    } catch (const WouldDeadlock&) {
      batch.set_result(0, 2);
    }
  });
  self = &doubler;
  EXPECT_EQ(doubler.submit(1), 2);
}

TEST(Batch, ASubmitBackToAnOuterBatchLockFromANestedHandlerIsRefused) {
  Session session(session_options());
  Doubler* outer = nullptr;
  Doubler inner(session, test_root() + "/inner", [&](Doubler::Batch& batch) {
    try {
      (void)outer->submit_for(0, 1s);  // X's handler -> Y.submit -> Y's handler -> X.submit
      batch.set_result(0, 1);
    } catch (const WouldDeadlock&) {
      batch.set_result(0, 2);
    }
  });
  Doubler doubler(session, test_root() + "/outer",
                  [&](Doubler::Batch& batch) { batch.set_result(0, inner.submit(0)); });
  outer = &doubler;
  EXPECT_EQ(doubler.submit(1), 2);
}

TEST(Batch, MaxLingerGathersLaterRequestsIntoTheBatch) {
  Session session(session_options());
  std::vector<std::size_t> sizes;
  Doubler doubler(
      session, test_root(),
      [&](Doubler::Batch& batch) {
        sizes.push_back(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i) batch.set_result(i, 0);
      },
      BatchOptions{.max_batch = 4, .max_linger = std::chrono::seconds(5)});
  std::vector<std::future<int>> results;
  results.push_back(std::async(std::launch::async, [&] { return doubler.submit(0); }));
  std::this_thread::sleep_for(50ms);  // the first holds the lock, lingering
  for (int i = 1; i < 4; ++i) results.push_back(std::async(std::launch::async, [&] { return doubler.submit(0); }));
  for (auto& result : results) result.get();
  EXPECT_EQ(sizes, std::vector<std::size_t>{4}) << "the linger did not wait for the batch to fill";
}

TEST(Batch, BadOptionsAreNamed) {
  Session session(session_options());
  const auto handler = [](Doubler::Batch&) {};
  try {
    Doubler bad(session, test_root(), handler, BatchOptions{.max_batch = 0});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_batch is 0"), std::string::npos) << e.what();
  }
  try {
    Doubler bad(session, test_root(), handler, BatchOptions{.mode = LockMode::Read});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Exclusive or Write"), std::string::npos) << e.what();
  }
  try {
    Doubler bad(session, test_root(), handler, BatchOptions{.pass_wait = std::chrono::microseconds(-1)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass_wait is -1 us"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Doubler(session, "no-slash", handler), InvalidPath);
  EXPECT_THROW(Doubler(session, test_root(), Doubler::Handler()), Error);
}

}  // namespace
}  // namespace dlock::testing
