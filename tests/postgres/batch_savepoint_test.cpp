// A BatchLock's batch in one PostgreSQL transaction, with dlock::postgres::for_each_request: a
// request that violates a constraint fails alone and its batch-mates' writes commit. The negative
// control serves the same batch without savepoints: the first failure aborts the transaction and
// every write of the batch is lost.
#include "dlock/postgres/savepoint.hpp"

#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "dlock/batch.hpp"
#include "dlock/dlock.hpp"
#include "postgres/postgres_suite.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;
using Inserts = BatchLock<std::int64_t, std::int64_t>;

class PostgresBatchSavepoint : public PostgresSuite {
 protected:
  void SetUp() override {
    PostgresSuite::SetUp();
    server().execute("DROP TABLE IF EXISTS item; CREATE TABLE item (id bigint PRIMARY KEY)");
    server().execute("INSERT INTO item VALUES (3), (6)");  // requests 3 and 6 will collide
  }

  struct Outcome {
    int succeeded = 0;
    int failed = 0;
    std::int64_t rows = 0;  // committed rows in item afterwards
    std::size_t batches = 0;
  };

  // Requests 1..8 in one batch (the runner lingers until all eight are queued).
  Outcome serve(bool savepoints) {
    Session session(session_options());
    std::size_t batches = 0;
    Inserts inserts(
        session, test_root(),
        [&](Inserts::Batch& batch) {
          ++batches;
          postgres::Transaction tx(conn());
          tx.fence(test_root(), batch.fencing_token());
          const auto insert = [&](std::size_t i) {
            tx.exec("INSERT INTO item VALUES ($1)", {batch.request(i)});
            return batch.request(i);
          };
          if (savepoints) {
            postgres::for_each_request(tx, batch, insert);
          } else {
            for (std::size_t i = 0; i < batch.size(); ++i) {
              try {
                batch.set_result(i, insert(i));
              } catch (...) {
                batch.fail(i, std::current_exception());
              }
            }
          }
          tx.commit();
        },
        BatchOptions{.max_batch = 8, .max_linger = 10s});
    std::vector<std::future<std::int64_t>> results;
    for (std::int64_t id = 1; id <= 8; ++id) {
      results.push_back(std::async(std::launch::async, [&inserts, id] { return inserts.submit(id); }));
    }
    Outcome out;
    for (auto& result : results) {
      try {
        result.get();
        ++out.succeeded;
      } catch (const Error&) {
        ++out.failed;
      }
    }
    out.rows = committed("SELECT count(*) FROM item");
    out.batches = batches;
    return out;
  }
};

TEST_F(PostgresBatchSavepoint, AFailingRequestFailsAloneAndItsBatchMatesCommit) {
  const Outcome out = serve(true);
  EXPECT_EQ(out.batches, 1u);
  EXPECT_EQ(out.succeeded, 6);
  EXPECT_EQ(out.failed, 2) << "requests 3 and 6 collide with existing rows";
  EXPECT_EQ(out.rows, 8) << "the six new rows and the two that were there";
}

TEST_F(PostgresBatchSavepoint, NegativeControlWithoutSavepointsOneFailureLosesTheWholeBatch) {
  const Outcome out = serve(false);
  EXPECT_EQ(out.batches, 1u);
  EXPECT_EQ(out.rows, 2) << "the batch's writes committed though a statement failed: the check cannot fail";
  EXPECT_EQ(out.succeeded, 0) << "the aborted transaction's COMMIT must fail the batch";
}

}  // namespace
}  // namespace dlock::testing
