#include "db_server.hpp"

#include <pwd.h>
#include <unistd.h>

#include <stdexcept>
#include <thread>

namespace dlock::testing {

ServerAccount server_account(const char* system_user, const char* product, const char* package) {
  ServerAccount account;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam(system_user);
    if (pw == nullptr) {
      throw std::runtime_error(std::string("running as root, and there is no `") + system_user + "` user to run " +
                               product + " as (the " + package + " package creates it)");
    }
    account = {true, pw->pw_uid, pw->pw_gid, pw->pw_name};
  } else {
    const passwd* pw = ::getpwuid(::geteuid());
    account.name = pw != nullptr ? pw->pw_name : std::to_string(::geteuid());
  }
  return account;
}

SpawnOptions as_server_owner(const std::string& dir, const std::string& log_name, const ServerAccount& account) {
  SpawnOptions options;
  options.log_file = dir + "/" + log_name;
  options.working_dir = dir;
  if (account.drop) {
    options.uid = account.uid;
    options.gid = account.gid;
  }
  return options;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::int64_t first_integer(const std::string& output, const char* product, const std::string& sql) {
  const std::string text = trimmed(output.substr(0, output.find('\n')));
  if (text.empty()) throw std::runtime_error(std::string(product) + ": no value returned by: " + sql);
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return value;
  } catch (const std::logic_error&) {
    throw std::runtime_error(std::string(product) + ": not an integer: '" + text + "' from: " + sql);
  }
}

void start_with_retries(const std::function<void()>& start_once, const std::function<void()>& stop) {
  for (int attempt = 1;; ++attempt) {
    try {
      start_once();
      return;
    } catch (const std::exception&) {
      stop();
      if (attempt == 3) throw;
    }
  }
}

void await_ready(pid_t& pid, const std::function<bool()>& ready, std::chrono::steady_clock::time_point give_up,
                 const std::string& what, int port, const std::string& log_file) {
  while (std::chrono::steady_clock::now() < give_up) {
    if (ready()) return;
    if (reap_if_exited(pid)) {
      pid = -1;
      throw std::runtime_error(what + " exited during start-up: " + file_tail(log_file));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error(what + " did not accept connections on port " + std::to_string(port) +
                           " in time: " + file_tail(log_file));
}

}  // namespace dlock::testing
