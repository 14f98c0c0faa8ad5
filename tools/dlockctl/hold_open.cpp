#include "hold_open.hpp"

#include <string.h>

#include <boost/asio/post.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "dlock/inspect.hpp"
#include "exit_codes.hpp"

namespace dlockctl {

int hold_until_interrupted(Hold& hold, std::stop_token revoked, SignalWatch& signals, boost::asio::io_context& io) {
  const auto what = "the " + std::string(hold.kind()) + " on " + dlock::escape_text(hold.path());
  if (hold.stop_token().stop_requested()) {
    hold.release();
    std::cerr << "dlockctl: " << what << " was lost as soon as it was granted\n";
    return kNotStarted;
  }
  if (revoked.stop_requested()) {
    hold.release();
    std::cerr << "dlockctl: exit " << kRevoked << ": " << what << " was revoked as soon as it was granted\n";
    return kRevoked;
  }
  // The line for people first: once a script reads the variables, it is on stderr already.
  std::string releasing;
  for (const int signo : signals.watched_stops()) {
    if (!releasing.empty()) releasing += signo == signals.watched_stops().back() ? " or " : ", ";
    releasing += signo == SIGINT ? "Ctrl-C" : signo == SIGTERM ? "SIGTERM" : "SIGHUP";
  }
  std::cerr << "dlockctl: holding " << what << " until interrupted (" << releasing << " releases it)\n";
  std::cout << "DLOCK_FENCING_TOKEN=" << hold.fencing_token() << "\nDLOCK_PATH=" << hold.path()
            << "\nDLOCK_NODE=" << hold.node() << "\n";
  for (const auto& variable : hold.environment()) std::cout << variable << "\n";
  std::cout.flush();

  enum class End { Signal, Lost, Revoked };
  std::optional<End> end;
  int signal_number = 0;
  // Came between the grant and now: no handler saw it.
  if (const auto pending = signals.take_pending_stop()) {
    end = End::Signal;
    signal_number = *pending;
  }
  signals.set_handler([&](const SignalWatch::Signal& s) {
    if (s.number == SIGCHLD || end) return;  // no command: no child of ours
    end = End::Signal;
    signal_number = s.number;
  });
  {
    // On a dlock thread, or here if already requested: only handed over to the io_context.
    std::stop_callback on_loss(hold.stop_token(), [&] {
      boost::asio::post(io, [&] {
        if (!end) end = End::Lost;
      });
    });
    std::stop_callback on_revocation(revoked, [&] {
      boost::asio::post(io, [&] {
        if (!end) end = End::Revoked;
      });
    });
    while (!end) io.run_one();
  }
  signals.set_handler(nullptr);
  io.poll();  // what the callbacks posted still runs while `end` exists
  hold.release();
  switch (*end) {
    case End::Signal:
      std::cerr << "dlockctl: " << ::strsignal(signal_number) << ": released " << what << "\n";
      return kOk;
    case End::Lost:
      std::cerr << "dlockctl: exit " << kHoldLost << ": " << what
                << " was lost (its session expired, or the connection to ZooKeeper dropped)\n";
      return kHoldLost;
    case End::Revoked:
      std::cerr << "dlockctl: exit " << kRevoked << ": " << what
                << " was revoked (a client asked its holder to give it up: dlockctl revoke, Curator's Revoker); "
                   "released it\n";
      return kRevoked;
  }
  return kOk;
}

}  // namespace dlockctl
