#include "raw_zk.hpp"

#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "src/session/session_access.hpp"

namespace dlock::testing {

RawZk::RawZk(const std::string& connect, std::chrono::milliseconds session_timeout, const clientid_t* session) {
  zh_ = zookeeper_init(connect.c_str(), nullptr, static_cast<int>(session_timeout.count()), session, nullptr, 0);
  if (zh_ == nullptr) throw std::runtime_error("RawZk: zookeeper_init failed for " + connect);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (zoo_state(zh_) != ZOO_CONNECTED_STATE) {
    if (zoo_state(zh_) == ZOO_EXPIRED_SESSION_STATE || std::chrono::steady_clock::now() > give_up) {
      zookeeper_close(zh_);
      throw std::runtime_error("RawZk: cannot connect to " + connect);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

RawZk::~RawZk() { zookeeper_close(zh_); }

std::vector<std::string> RawZk::children(const std::string& path) {
  String_vector names{};
  std::vector<std::string> out;
  if (zoo_get_children(zh_, path.c_str(), 0, &names) == ZOK) {
    for (int i = 0; i < names.count; ++i) out.emplace_back(names.data[i]);
    deallocate_String_vector(&names);
  }
  return out;
}

std::optional<Stat> RawZk::stat(const std::string& path) {
  Stat stat{};
  if (zoo_exists(zh_, path.c_str(), 0, &stat) != ZOK) return std::nullopt;
  return stat;
}

std::optional<std::string> RawZk::data(const std::string& path) {
  std::string buffer(1 << 16, '\0');
  int length = static_cast<int>(buffer.size());
  if (zoo_get(zh_, path.c_str(), 0, buffer.data(), &length, nullptr) != ZOK) return std::nullopt;
  buffer.resize(length < 0 ? 0 : static_cast<std::size_t>(length));
  return buffer;
}

int RawZk::create(const std::string& path, const std::string& data, int mode, std::string* created) {
  char buffer[1024] = {};
  const int rc = zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE, mode,
                            buffer, sizeof buffer);
  if (created != nullptr && rc == ZOK) *created = buffer;
  return rc;
}

int RawZk::remove(const std::string& path) { return zoo_delete(zh_, path.c_str(), -1); }

int RawZk::add_auth(const std::string& scheme, const std::string& secret) {
  std::promise<int> answered;
  auto answer = answered.get_future();
  const int rc = zoo_add_auth(
      zh_, scheme.c_str(), secret.data(), static_cast<int>(secret.size()),
      [](int reply, const void* data) { static_cast<std::promise<int>*>(const_cast<void*>(data))->set_value(reply); },
      &answered);
  if (rc != ZOK) return rc;
  if (answer.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return ZOPERATIONTIMEOUT;
  return answer.get();
}

int RawZk::set_world_acl(const std::string& path, int perms) {
  char world[] = "world", anyone[] = "anyone";
  ACL entry{perms, Id{world, anyone}};
  ACL_vector acl{1, &entry};
  return zoo_set_acl(zh_, path.c_str(), -1, &acl);
}

std::optional<std::string> RawZk::acl(const std::string& path) {
  ACL_vector acl{};
  Stat stat{};
  if (zoo_get_acl(zh_, path.c_str(), &acl, &stat) != ZOK) return std::nullopt;
  std::string out;
  for (int i = 0; i < acl.count; ++i) {
    static constexpr const char* kLetters[] = {"c", "d", "r", "w", "a"};
    const int kBits[] = {ZOO_PERM_CREATE, ZOO_PERM_DELETE, ZOO_PERM_READ, ZOO_PERM_WRITE, ZOO_PERM_ADMIN};
    if (!out.empty()) out += ',';
    out += std::string(acl.data[i].id.scheme) + ":" + acl.data[i].id.id + ":";
    for (int b = 0; b < 5; ++b) {
      if ((acl.data[i].perms & kBits[b]) != 0) out += kLetters[b];
    }
  }
  deallocate_ACL_vector(&acl);
  return out;
}

int RawZk::remove_together(const std::vector<std::string>& paths) {
  std::vector<zoo_op_t> ops(paths.size());
  std::vector<zoo_op_result_t> results(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) zoo_delete_op_init(&ops[i], paths[i].c_str(), -1);
  return zoo_multi(zh_, static_cast<int>(ops.size()), ops.data(), results.data());
}

std::int64_t RawZk::session_id() const { return zoo_client_id(zh_)->client_id; }

void expire_session(const std::string& connect, const clientid_t& id) {
  try {
    RawZk joined(connect, std::chrono::seconds(10), &id);
  } catch (const std::runtime_error&) {
    // The session is already gone (the joining handle saw it expired): nothing left to do.
  }
}

std::vector<std::string> ephemeral_nodes_under(RawZk& zk, const std::string& root) {
  std::vector<std::string> found;
  std::vector<std::string> todo{root};
  while (!todo.empty()) {
    const std::string path = todo.back();
    todo.pop_back();
    if (auto stat = zk.stat(path); stat && stat->ephemeralOwner > 0) found.push_back(path);
    for (const auto& child : zk.children(path)) todo.push_back(path + "/" + child);
  }
  return found;
}

std::vector<std::string> wait_for_no_ephemeral_nodes(RawZk& zk, const std::string& root,
                                                     std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = ephemeral_nodes_under(zk, root);
    if (left.empty() || std::chrono::steady_clock::now() > give_up) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void delete_tree(RawZk& zk, const std::string& root) {
  for (const auto& child : zk.children(root)) delete_tree(zk, root + "/" + child);
  zk.remove(root);
}

int make_lasting_path(RawZk& zk, const std::string& path) {
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const int rc = zk.create(path.substr(0, slash), "", 0);
    if (rc != ZOK && rc != ZNODEEXISTS) return rc;
    if (slash == std::string::npos) return ZOK;
  }
}

bool expire_until_lost(Session& session, const std::string& connect, std::chrono::milliseconds wait_each) {
  std::promise<void> lost;
  std::once_flag once;
  auto subscription = session.subscribe([&](SessionState s) {
    if (s == SessionState::Lost) std::call_once(once, [&] { lost.set_value(); });
  });
  auto lost_seen = lost.get_future();
  const auto id = detail::SessionAccess::client(session)->client_id();
  const auto ready = [&] { return lost_seen.wait_for(std::chrono::seconds(0)) == std::future_status::ready; };
  for (int attempt = 0; attempt < 5 && !ready(); ++attempt) {
    expire_session(connect, id);
    lost_seen.wait_for(wait_each);
  }
  return ready();
}

}  // namespace dlock::testing
