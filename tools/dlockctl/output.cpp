#include "output.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <vector>

namespace dlockctl {

std::string iso8601(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms % 1000));
  return buffer;
}

std::string session_hex(std::int64_t id) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(id));
  return buffer;
}

std::string who(const dlock::QueuedContender& c) {
  std::string out(dlock::to_string(c.client));
  switch (c.client) {
    case dlock::LockClient::Dlock:
      if (!c.host.empty()) out += " " + c.host;
      if (c.pid) out += " pid " + std::to_string(*c.pid);
      if (c.thread) out += " thread " + std::to_string(*c.thread);
      if (!c.thread_name.empty()) out += " (" + c.thread_name + ")";
      break;
    case dlock::LockClient::Curator:
      if (!c.host.empty()) out += " " + c.host;
      break;
    case dlock::LockClient::Kazoo:
      if (!c.identifier.empty()) out += " identifier '" + c.identifier + "'";
      break;
    case dlock::LockClient::Unknown:
      if (!c.data.empty()) out += " data '" + c.data + "'";
      break;
  }
  return out;
}

namespace {

nlohmann::ordered_json optional_number(const std::optional<std::int64_t>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// The host column: the host where the client writes one, kazoo's identifier otherwise.
std::string host_column(const dlock::QueuedContender& c) {
  if (!c.host.empty()) return c.host;
  if (!c.identifier.empty()) return "id:" + c.identifier;
  return "-";
}

}  // namespace

nlohmann::ordered_json contender_json(const dlock::QueuedContender& c, std::size_t position) {
  return {
      {"position", position},
      {"node", c.node},
      {"client", dlock::to_string(c.client)},
      {"kind", dlock::to_string(c.kind)},
      {"holds", c.holds},
      {"host", c.host.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.host)},
      {"pid", optional_number(c.pid)},
      {"thread", optional_number(c.thread)},
      {"thread_name", c.thread_name.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.thread_name)},
      {"shared",
       c.client == dlock::LockClient::Dlock ? nlohmann::ordered_json(c.shared) : nlohmann::ordered_json(nullptr)},
      {"holding", c.holding ? nlohmann::ordered_json(*c.holding) : nlohmann::ordered_json(nullptr)},
      {"acquired_at", c.acquired_at.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.acquired_at)},
      {"identifier", c.identifier.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.identifier)},
      {"data", c.data},
      {"session_id", session_hex(c.session_id)},
      {"czxid", c.czxid},
      {"fencing_token", c.fencing_token},
      {"since", iso8601(c.created)},
  };
}

nlohmann::ordered_json queue_json(const dlock::LockQueue& queue) {
  nlohmann::ordered_json contenders = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < queue.contenders.size(); ++i)
    contenders.push_back(contender_json(queue.contenders[i], i));
  return {
      {"path", queue.path},
      {"exists", queue.exists},
      {"queue_length", queue.contenders.size()},
      {"holding", queue.holders().size()},
      {"order_defect",
       queue.order_defect.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(queue.order_defect)},
      {"ignored_children", queue.ignored_children},
      {"contenders", std::move(contenders)},
  };
}

void print_queue(std::ostream& out, const dlock::LockQueue& queue) {
  const std::string path = dlock::escape_text(queue.path);
  if (!queue.exists) {
    out << path << ": no such lock directory (nobody holds or waits)\n";
    return;
  }
  out << path << ": " << queue.contenders.size() << (queue.contenders.size() == 1 ? " contender, " : " contenders, ")
      << queue.holders().size() << " holding";
  if (queue.ignored_children > 0) out << ", " << queue.ignored_children << " other children ignored";
  out << "\n";
  if (!queue.order_defect.empty()) {
    out << "WARNING: the queue's order cannot be trusted (dlock refuses to grant this lock; Curator and kazoo "
           "clients may still grant it, each in its own order, so HOLDS is only the listing's order): "
        << queue.order_defect << "\n";
  }
  if (queue.contenders.empty()) return;
  const std::vector<std::string> header{"#",      "HOLDS", "CLIENT",  "KIND",  "HOST", "PID",
                                        "THREAD", "SINCE", "SESSION", "TOKEN", "NODE"};
  std::vector<std::vector<std::string>> rows{header};
  for (std::size_t i = 0; i < queue.contenders.size(); ++i) {
    const auto& c = queue.contenders[i];
    rows.push_back({std::to_string(i), c.holds ? "yes" : "no", std::string(dlock::to_string(c.client)),
                    std::string(dlock::to_string(c.kind)), host_column(c), c.pid ? std::to_string(*c.pid) : "-",
                    c.thread ? std::to_string(*c.thread) : "-", iso8601(c.created), session_hex(c.session_id),
                    std::to_string(c.fencing_token), dlock::escape_text(c.node)});
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

void print_json(std::ostream& out, const nlohmann::ordered_json& doc) {
  out << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

}  // namespace dlockctl
