// dlock::inspect: a lock directory's queue as data (dlock/inspect.hpp).
#include "dlock/inspect.hpp"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "dlock/error.hpp"
#include "dlock/fencing.hpp"
#include "dlock/session.hpp"
#include "recipes/handoff/lock_site.hpp"
#include "recipes/inspect/inspect_on.hpp"
#include "recipes/queue/contender.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/queue/node_name.hpp"
#include "recipes/queue/policies.hpp"
#include "src/base/path.hpp"
#include "src/base/printable.hpp"
#include "src/session/client.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"

namespace dlock {

using detail::printable;

std::string_view to_string(LockClient client) noexcept {
  switch (client) {
    case LockClient::Dlock:
      return "dlock";
    case LockClient::Curator:
      return "curator";
    case LockClient::Kazoo:
      return "kazoo";
    case LockClient::Unknown:
      break;
  }
  return "unknown";
}

std::string_view to_string(LockKind kind) noexcept {
  switch (kind) {
    case LockKind::Read:
      return "read";
    case LockKind::Write:
      return "write";
    case LockKind::Lease:
      return "lease";
    case LockKind::Exclusive:
      break;
  }
  return "exclusive";
}

void check_lock_path(std::string_view path) { detail::check_lock_path(path); }

bool is_contender_name(std::string_view name) { return detail::parse_contender(name).has_value(); }

std::string escape_text(std::string_view text, std::size_t max_bytes, bool keep_quotes) {
  return printable(text, max_bytes, keep_quotes ? detail::Quotes::Keep : detail::Quotes::Escape);
}

namespace {

// Text fields taken from other clients' data are cut after this many input bytes.
constexpr std::size_t kMaxField = 256;
// dlock's own JSON is about 150 bytes; larger data is not parsed as JSON at all, so odd data (a
// megabyte of nested brackets) costs nothing.
constexpr std::size_t kMaxJson = 4096;

LockKind kind_of(detail::ContenderKind kind) {
  switch (kind) {
    case detail::ContenderKind::Read:
      return LockKind::Read;
    case detail::ContenderKind::Write:
      return LockKind::Write;
    case detail::ContenderKind::Exclusive:
      break;
  }
  return LockKind::Exclusive;
}

const detail::LockPolicy& policy_of(detail::ContenderKind kind) {
  switch (kind) {
    case detail::ContenderKind::Read:
      return detail::kReadPolicy;
    case detail::ContenderKind::Write:
      return detail::kWritePolicy;
    case detail::ContenderKind::Exclusive:
      break;
  }
  return detail::kExclusivePolicy;
}

std::optional<std::int64_t> integer_field(const nlohmann::json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::string text_field(const nlohmann::json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) return {};
  return printable(it->get_ref<const std::string&>(), kMaxField, detail::Quotes::Keep);
}

// A list of node names, each escaped; nullopt unless the field is an array of strings (at most 64).
std::optional<std::vector<std::string>> names_field(const nlohmann::json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_array() || it->size() > 64) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& name : *it) {
    if (!name.is_string()) return std::nullopt;
    names.push_back(printable(name.get_ref<const std::string&>(), kMaxField, detail::Quotes::Keep));
  }
  return names;
}

// Fills in what the node's name and data tell about the client that made it. Never throws.
void identify(QueuedContender& c, const std::string& data) {
  c.data = printable(data, kMaxField, detail::Quotes::Keep);  // dlock's JSON stays readable
  if (detail::node_name::is_protected(c.node)) {
    if (!data.empty() && data.size() <= kMaxJson && data.front() == '{') {
      const auto doc = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
      const auto client = doc.is_object() ? doc.find("client") : doc.end();
      if (doc.is_object() && client != doc.end() && client->is_string() && *client == "dlock") {
        c.client = LockClient::Dlock;
        c.host = text_field(doc, "host");
        c.pid = integer_field(doc, "pid");
        c.thread = integer_field(doc, "thread");
        c.thread_name = text_field(doc, "thread_name");
        c.acquired_at = text_field(doc, "acquired_at");
        if (const auto shared = doc.find("shared"); shared != doc.end() && shared->is_boolean()) {
          c.shared = shared->get<bool>();
        }
        c.holding = names_field(doc, "holding");
        return;
      }
    }
    c.client = LockClient::Curator;
    c.host = c.data;
    return;
  }
  if (detail::node_name::is_kazoo(c.node)) {
    c.client = LockClient::Kazoo;
    c.identifier = c.data;
    return;
  }
  c.client = LockClient::Unknown;
}

}  // namespace

LockQueue inspect(Session& session, std::string_view path) {
  return detail::inspect_on(detail::SessionAccess::client(session), path);
}

LockQueue detail::inspect_on(const std::shared_ptr<Client>& client, std::string_view path_view) {
  detail::check_lock_path(path_view);
  const std::string path(path_view);
  const std::string what = "inspecting the lock " + printable(path);
  detail::throw_if_session_ended(*client, what);

  LockQueue result;
  result.path = path;

  detail::Pending<detail::ChildrenResult> listing;
  client->children(path, listing.callback());
  const auto children = listing.get();
  if (children.rc != ZOK && children.rc != ZNONODE)
    detail::fail(*client, children.rc, what + ": listing its children", {kRead, path});
  result.exists = children.rc == ZOK;

  auto queue = detail::queue_of(children.names);
  bool leases = false;
  if (queue.empty()) {
    // A semaphore's leases: listed in sequence order, each holding (see inspect.hpp).
    for (const auto& name : children.names) {
      if (const auto sequence = detail::node_name::lease_sequence(name)) {
        queue.push_back(detail::Contender{name, *sequence, detail::ContenderKind::Exclusive});
      }
    }
    std::stable_sort(queue.begin(), queue.end(),
                     [](const detail::Contender& a, const detail::Contender& b) { return a.sequence < b.sequence; });
    leases = !queue.empty();
  }
  result.ignored_children = children.names.size() - queue.size();
  if (const auto defect = detail::order_defect(queue); defect && !leases) result.order_defect = printable(*defect);

  // Every read at once: one round trip for the whole queue.
  std::vector<detail::Pending<detail::DataResult>> reads(queue.size());
  for (std::size_t i = 0; i < queue.size(); ++i) {
    client->get(path + "/" + std::string(queue[i].name), reads[i].callback());
  }
  std::vector<detail::DataResult> data;
  data.reserve(queue.size());
  for (auto& read : reads) data.push_back(read.get());
  // A node this identity may not read (a creator-only ACL) is still in the queue: its stat, which
  // exists() gives without an ACL check, says enough (session, token, since).
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (data[i].rc != ZNOAUTH) continue;
    detail::Pending<detail::StatResult> stat;
    client->exists(path + "/" + std::string(queue[i].name), stat.callback());
    const auto found = stat.get();
    data[i].rc = found.rc;
    data[i].stat = found.stat;
    data[i].data = "(not readable by this identity)";
  }

  std::vector<detail::Contender> present;  // the listed contenders still there when read
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const auto& reply = data[i];
    if (reply.rc == ZNONODE) continue;  // released (or its session ended) since the listing
    if (reply.rc != ZOK)
      detail::fail(*client, reply.rc, what + ": reading its node " + printable(queue[i].name),
                   {kRead, path + "/" + std::string(queue[i].name)});
    present.push_back(queue[i]);
    QueuedContender c;
    c.node = std::string(queue[i].name);
    c.kind = kind_of(queue[i].kind);
    identify(c, reply.data);
    c.session_id = reply.stat.ephemeralOwner;
    c.czxid = reply.stat.czxid;
    c.fencing_token = c.czxid >= 0 && c.czxid <= max_fenced_czxid() ? fencing_token_of(c.czxid) : 0;
    c.created = std::chrono::system_clock::time_point(std::chrono::milliseconds(reply.stat.ctime));
    if (leases) {
      c.kind = LockKind::Lease;
      c.holds = true;
    }
    result.contenders.push_back(std::move(c));
  }
  if (leases) {
    if (const auto site = detail::find_site(client, path)) result.local_waiters = site->local_waiters();
    return result;
  }
  // Who holds, by the locks' own rules, over the contenders still there. A downgrade's read node
  // ties with its own write node (same sequence; their order in the listing is arbitrary): it is
  // decided without the read node, which shares the write node's verdict.
  std::vector<std::ptrdiff_t> partner(present.size(), -1);
  for (std::size_t i = 0; i < present.size(); ++i) {
    if (present[i].kind != detail::ContenderKind::Read) continue;
    for (std::size_t j = 0; j < present.size(); ++j) {
      if (present[j].kind == detail::ContenderKind::Write && present[j].sequence == present[i].sequence) {
        partner[i] = static_cast<std::ptrdiff_t>(j);
      }
    }
  }
  std::vector<detail::Contender> decided;
  std::vector<std::size_t> at(present.size(), 0);
  for (std::size_t i = 0; i < present.size(); ++i) {
    if (partner[i] >= 0) continue;
    at[i] = decided.size();
    decided.push_back(present[i]);
  }
  for (std::size_t i = 0; i < present.size(); ++i) {
    if (partner[i] < 0) result.contenders[i].holds = policy_of(present[i].kind).decide(decided, at[i]).holds;
  }
  for (std::size_t i = 0; i < present.size(); ++i) {
    if (partner[i] >= 0) result.contenders[i].holds = result.contenders[static_cast<std::size_t>(partner[i])].holds;
  }

  if (const auto site = detail::find_site(client, path)) result.local_waiters = site->local_waiters();
  return result;
}

}  // namespace dlock
