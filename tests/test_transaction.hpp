// A transaction as dlock's Transaction concept describes it, for the tests: commit() only runs
// the completion hooks (the end-to-end test binds guards to real PostgreSQL transactions).
#pragma once

#include <functional>
#include <utility>

#include "dlock/scope.hpp"

namespace dlock::testing {

class TestTransaction {
 public:
  void on_complete(std::function<void()> hook) { hooks_.add(std::move(hook)); }
  void commit() { hooks_.run(); }

 private:
  CompletionHooks hooks_;
};
static_assert(Transaction<TestTransaction>);

}  // namespace dlock::testing
