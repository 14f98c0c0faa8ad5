#include "raw_zk.hpp"

#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "src/session/session_access.hpp"

namespace dlock::testing {

namespace {

std::vector<std::string> names_of(const String_vector* strings) {
  std::vector<std::string> out;
  if (strings != nullptr) out.assign(strings->data, strings->data + strings->count);
  return out;
}

}  // namespace

RawZk::RawZk(const std::string& connect, std::chrono::milliseconds session_timeout, const clientid_t* session)
    : client_(std::make_unique<PlainClient>(connect, session_timeout, session)) {
  if (!client_->wait_connected(std::chrono::seconds(10)))
    throw std::runtime_error("RawZk: cannot connect to " + connect);
}

RawZk::~RawZk() = default;

std::vector<std::string> RawZk::children(const std::string& path) {
  PlainReply<std::vector<std::string>> reply;
  const auto done = [](int rc, const String_vector* strings, const void* data) {
    PlainReply<std::vector<std::string>>::of(data).set(rc, rc == ZOK ? names_of(strings) : std::vector<std::string>{});
  };
  if (client_->call([&](zhandle_t* zh) { return zoo_aget_children(zh, path.c_str(), 0, done, reply.tag()); }) != ZOK) {
    return {};
  }
  return reply.get().second;
}

std::optional<Stat> RawZk::stat(const std::string& path) {
  PlainReply<Stat> reply;
  const auto done = [](int rc, const Stat* stat, const void* data) {
    PlainReply<Stat>::of(data).set(rc, rc == ZOK && stat != nullptr ? *stat : Stat{});
  };
  if (client_->call([&](zhandle_t* zh) { return zoo_aexists(zh, path.c_str(), 0, done, reply.tag()); }) != ZOK) {
    return std::nullopt;
  }
  auto [rc, stat] = reply.get();
  if (rc != ZOK) return std::nullopt;
  return stat;
}

std::optional<std::string> RawZk::data(const std::string& path) {
  PlainReply<std::string> reply;
  const auto done = [](int rc, const char* value, int length, const Stat*, const void* data) {
    PlainReply<std::string>::of(data).set(
        rc, rc == ZOK && value != nullptr && length > 0 ? std::string(value, static_cast<std::size_t>(length)) : "");
  };
  if (client_->call([&](zhandle_t* zh) { return zoo_aget(zh, path.c_str(), 0, done, reply.tag()); }) != ZOK) {
    return std::nullopt;
  }
  auto [rc, data] = reply.get();
  if (rc != ZOK) return std::nullopt;
  return data;
}

int RawZk::create(const std::string& path, const std::string& data, int mode, std::string* created) {
  PlainReply<std::string> reply;
  const auto done = [](int rc, const char* value, const void* tag) {
    PlainReply<std::string>::of(tag).set(rc, rc == ZOK && value != nullptr ? value : "");
  };
  const int sent = client_->call([&](zhandle_t* zh) {
    return zoo_acreate(zh, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE, mode, done,
                       reply.tag());
  });
  if (sent != ZOK) return sent;
  auto [rc, name] = reply.get();
  if (created != nullptr && rc == ZOK) *created = name;
  return rc;
}

int RawZk::remove(const std::string& path) {
  PlainReply<int> reply;
  const auto done = [](int rc, const void* data) { PlainReply<int>::of(data).set(rc); };
  const int sent = client_->call([&](zhandle_t* zh) { return zoo_adelete(zh, path.c_str(), -1, done, reply.tag()); });
  return sent != ZOK ? sent : reply.get().first;
}

int RawZk::add_auth(const std::string& scheme, const std::string& secret) {
  PlainReply<int> reply;
  const auto done = [](int rc, const void* data) { PlainReply<int>::of(data).set(rc); };
  const int sent = client_->call([&](zhandle_t* zh) {
    return zoo_add_auth(zh, scheme.c_str(), secret.data(), static_cast<int>(secret.size()), done, reply.tag());
  });
  return sent != ZOK ? sent : reply.get().first;
}

int RawZk::set_world_acl(const std::string& path, int perms) {
  char world[] = "world", anyone[] = "anyone";
  ACL entry{perms, Id{world, anyone}};
  ACL_vector acl{1, &entry};
  PlainReply<int> reply;
  const auto done = [](int rc, const void* data) { PlainReply<int>::of(data).set(rc); };
  const int sent =
      client_->call([&](zhandle_t* zh) { return zoo_aset_acl(zh, path.c_str(), -1, &acl, done, reply.tag()); });
  return sent != ZOK ? sent : reply.get().first;
}

std::optional<std::string> RawZk::acl(const std::string& path) {
  PlainReply<std::string> reply;
  const auto done = [](int rc, ACL_vector* acl, Stat*, const void* data) {
    std::string out;
    for (int i = 0; rc == ZOK && acl != nullptr && i < acl->count; ++i) {
      static constexpr const char* kLetters[] = {"c", "d", "r", "w", "a"};
      const int kBits[] = {ZOO_PERM_CREATE, ZOO_PERM_DELETE, ZOO_PERM_READ, ZOO_PERM_WRITE, ZOO_PERM_ADMIN};
      if (!out.empty()) out += ',';
      out += std::string(acl->data[i].id.scheme) + ":" + acl->data[i].id.id + ":";
      for (int b = 0; b < 5; ++b) {
        if ((acl->data[i].perms & kBits[b]) != 0) out += kLetters[b];
      }
    }
    PlainReply<std::string>::of(data).set(rc, out);
  };
  if (client_->call([&](zhandle_t* zh) { return zoo_aget_acl(zh, path.c_str(), done, reply.tag()); }) != ZOK) {
    return std::nullopt;
  }
  auto [rc, out] = reply.get();
  if (rc != ZOK) return std::nullopt;
  return out;
}

int RawZk::remove_together(const std::vector<std::string>& paths) {
  std::vector<zoo_op_t> ops(paths.size());
  std::vector<zoo_op_result_t> results(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) zoo_delete_op_init(&ops[i], paths[i].c_str(), -1);
  PlainReply<int> reply;
  const auto done = [](int rc, const void* data) { PlainReply<int>::of(data).set(rc); };
  const int sent = client_->call([&](zhandle_t* zh) {
    return zoo_amulti(zh, static_cast<int>(ops.size()), ops.data(), results.data(), done, reply.tag());
  });
  return sent != ZOK ? sent : reply.get().first;
}

std::int64_t RawZk::session_id() { return client_->client_id().client_id; }

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
  const auto id = dlock::detail::SessionAccess::client(session)->client_id();
  const auto ready = [&] { return lost_seen.wait_for(std::chrono::seconds(0)) == std::future_status::ready; };
  for (int attempt = 0; attempt < 5 && !ready(); ++attempt) {
    expire_session(connect, id);
    lost_seen.wait_for(wait_each);
  }
  return ready();
}

}  // namespace dlock::testing
