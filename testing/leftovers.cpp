#include "dlock/testing/leftovers.hpp"

#include <zookeeper/zookeeper.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "plain_client.hpp"

namespace dlock::testing {
namespace {

// How long a check waits for a server. An ensemble whose leader was just killed can take more
// than 10 s to elect another on a loaded machine (a fresh-clone run saw 11.2 s); the wait ends as
// soon as one answers.
constexpr auto kConnectWait = std::chrono::seconds(30);

// A connection of the C client's, connected, closed when it goes out of scope.
std::unique_ptr<PlainClient> connect_to(const std::string& connect) {
  auto client = std::make_unique<PlainClient>(connect, std::chrono::seconds(10));
  if (!client->wait_connected(kConnectWait)) {
    throw std::runtime_error("dlock::testing: no ZooKeeper server answered at " + connect + " within " +
                             std::to_string(kConnectWait.count()) + " s");
  }
  return client;
}

std::vector<std::string> lock_nodes(PlainClient& client, const std::string& root) {
  std::vector<std::string> found;
  std::vector<std::string> todo{root};
  while (!todo.empty()) {
    const std::string path = todo.back();
    todo.pop_back();
    // Only a node that went meanwhile may be skipped: any other error would make the check pass
    // without having looked.
    const auto check = [&](int rc, const char* what) {
      if (rc == ZOK) return true;
      if (rc == ZNONODE) return false;
      throw std::runtime_error(std::string("dlock::testing: ") + what + " " + path + " failed: " + zerror(rc));
    };
    PlainReply<std::int64_t> owner;
    const auto on_stat = [](int rc, const Stat* stat, const void* data) {
      PlainReply<std::int64_t>::of(data).set(rc, rc == ZOK && stat != nullptr ? stat->ephemeralOwner : 0);
    };
    int sent = client.call([&](zhandle_t* zh) { return zoo_aexists(zh, path.c_str(), 0, on_stat, owner.tag()); });
    const auto [stat_rc, ephemeral_owner] = sent == ZOK ? owner.get() : std::pair<int, std::int64_t>{sent, 0};
    if (!check(stat_rc, "exists")) continue;
    if (ephemeral_owner > 0) found.push_back(path);  // a container's owner is negative
    PlainReply<std::vector<std::string>> names;
    const auto on_children = [](int rc, const String_vector* strings, const void* data) {
      std::vector<std::string> out;
      if (rc == ZOK && strings != nullptr) out.assign(strings->data, strings->data + strings->count);
      PlainReply<std::vector<std::string>>::of(data).set(rc, std::move(out));
    };
    sent = client.call([&](zhandle_t* zh) { return zoo_aget_children(zh, path.c_str(), 0, on_children, names.tag()); });
    auto [children_rc, children] = sent == ZOK ? names.get() : std::pair<int, std::vector<std::string>>{sent, {}};
    if (!check(children_rc, "getChildren")) continue;
    for (const auto& name : children) todo.push_back((path == "/" ? "" : path) + "/" + name);
  }
  return found;
}

}  // namespace

std::vector<std::string> lock_nodes_under(const std::string& connect, const std::string& path) {
  const auto client = connect_to(connect);
  return lock_nodes(*client, path);
}

std::vector<std::string> wait_for_no_lock_nodes_under(const std::string& connect, const std::string& path,
                                                      std::chrono::milliseconds timeout) {
  const auto client = connect_to(connect);
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = lock_nodes(*client, path);
    if (left.empty() || std::chrono::steady_clock::now() > give_up) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace dlock::testing
