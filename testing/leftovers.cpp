#include "dlock/testing/leftovers.hpp"

#include <zookeeper/zookeeper.h>

#include <stdexcept>
#include <string>
#include <thread>

namespace dlock::testing {
namespace {

// A connection of the C client's, closed when it goes out of scope.
class Connection {
 public:
  explicit Connection(const std::string& connect) {
    zh_ = zookeeper_init(connect.c_str(), nullptr, 10000, nullptr, nullptr, 0);
    if (zh_ == nullptr) throw std::runtime_error("dlock::testing: cannot open a connection to " + connect);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (zoo_state(zh_) != ZOO_CONNECTED_STATE) {
      if (std::chrono::steady_clock::now() > give_up) {
        zookeeper_close(zh_);
        throw std::runtime_error("dlock::testing: no ZooKeeper server answered at " + connect + " within 10 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~Connection() { zookeeper_close(zh_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  zhandle_t* get() const { return zh_; }

 private:
  zhandle_t* zh_ = nullptr;
};

std::vector<std::string> lock_nodes(zhandle_t* zh, const std::string& root) {
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
    Stat stat{};
    if (!check(zoo_exists(zh, path.c_str(), 0, &stat), "exists")) continue;
    if (stat.ephemeralOwner > 0) found.push_back(path);  // a container's owner is negative
    String_vector names{};
    if (!check(zoo_get_children(zh, path.c_str(), 0, &names), "getChildren")) continue;
    for (int i = 0; i < names.count; ++i) todo.push_back((path == "/" ? "" : path) + "/" + names.data[i]);
    deallocate_String_vector(&names);
  }
  return found;
}

}  // namespace

std::vector<std::string> lock_nodes_under(const std::string& connect, const std::string& path) {
  const Connection connection(connect);
  return lock_nodes(connection.get(), path);
}

std::vector<std::string> wait_for_no_lock_nodes_under(const std::string& connect, const std::string& path,
                                                      std::chrono::milliseconds timeout) {
  const Connection connection(connect);
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = lock_nodes(connection.get(), path);
    if (left.empty() || std::chrono::steady_clock::now() > give_up) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace dlock::testing
