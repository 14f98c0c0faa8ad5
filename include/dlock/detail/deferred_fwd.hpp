// dlock/detail/deferred_fwd.hpp: Boost.Asio's default completion token, declared for the headers
// whose asynchronous forms default to it (lock_handle.hpp, semaphore.hpp, leader_latch.hpp), so
// that they do not need Asio. dlock/async.hpp checks that the declaration names Asio's type. Not
// public API.
#pragma once

namespace boost::asio {
class deferred_t;
}  // namespace boost::asio
