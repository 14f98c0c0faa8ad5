// docs/GETTING-STARTED.md's service example, OrderService, needs an Order, a Database and a serve(); these are
// the least that make it a program. serve() hands the service one request, so the run takes the
// lock and charges the order under a fencing token, which must be a real one (> 0).
#include <cstdint>
#include <cstdio>
#include <cstdlib>

struct Order {
  std::int64_t id = 42;
};

class Database {
 public:
  void charge(Order& order, std::int64_t fencing_token) {
    std::printf("order %lld charged under fencing token %lld\n", static_cast<long long>(order.id),
                static_cast<long long>(fencing_token));
    if (fencing_token <= 0) std::exit(1);
  }
};

template <class Service>
void serve(Service& service) {
  Order order;
  service.charge(order);
}

// @snippet
