// `dlockctl lock PATH` with no command (also read-lock, semaphore, elect): the hold is kept until
// dlockctl is interrupted, as `etcdctl lock NAME` does, for a person at a terminal (maintenance by
// hand while every service waits) or a script that backgrounds dlockctl and kills it when done.
#pragma once

#include <boost/asio/io_context.hpp>
#include <stop_token>

#include "hold.hpp"
#include "signals.hpp"

namespace dlockctl {

// Prints what a command would get in its environment (DLOCK_FENCING_TOKEN=..., DLOCK_PATH=...,
// DLOCK_NODE=..., and the hold's own, one per line) on stdout, flushed, and a line on stderr;
// then waits on `io` (which runs `signals`) until:
//   * SIGINT, SIGTERM or SIGHUP: the hold is released; returns kOk;
//   * the hold is lost (its session expired, or the connection dropped): returns kHoldLost;
//   * `revoked` is requested (--revocable): the hold is released; returns kRevoked.
// A hold already lost or revoked when this is called is released and reported at once (kNotStarted,
// kRevoked), as run_under does when nothing could be run.
int hold_until_interrupted(Hold& hold, std::stop_token revoked, SignalWatch& signals, boost::asio::io_context& io);

}  // namespace dlockctl
