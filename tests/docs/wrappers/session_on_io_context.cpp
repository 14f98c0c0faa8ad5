// docs/LOCKS.md's Session on the application's io_context: statements of main(). Its run
// connects to the test's server, and returns only if the Session leaves io's run() nothing to do
// once it is closed.
#include <dlock/async.hpp>
#include <dlock/dlock.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>

namespace asio = boost::asio;

int main() {
  // @snippet
}
