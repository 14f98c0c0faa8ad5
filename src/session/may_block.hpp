// Internal: the check every blocking dlock call makes before it waits for ZooKeeper.
//
// A Session driven by the application's io_context (SessionOptions::io_context) reads its replies
// only in that io_context's handlers. A thread running that io_context that blocks waiting for a
// reply would wait forever: it is the thread that would read it. So a blocking call there throws
// instead (handle_loop.cpp keeps the registry of such io_contexts).
#pragma once

#include <string_view>

namespace dlock::detail {

// Throws dlock::WouldDeadlock, naming `what` ("lock()", ...), if the calling thread is running an
// application's io_context that a live Session is driven by. Any thread.
void check_may_block(std::string_view what);

}  // namespace dlock::detail
