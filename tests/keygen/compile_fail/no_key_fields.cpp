// Compile-failure case (see ../CMakeLists.txt): a struct used as a key source with no field
// tagged dlock::key<T, Order> must not compile, and the error must say why. Built with
// DLOCK_KEY_CONTROL the struct gets one tagged field and the file must compile, which shows that
// the failure comes from the missing tag and nothing else.
#include <cstdint>
#include <string>

#include "dlock/key.hpp"

struct LoginRequest {
  std::int64_t uid = 0;
  std::string app;
#ifdef DLOCK_KEY_CONTROL
  dlock::key<std::string, 1> tagged;
#endif
};

std::string login_key(const LoginRequest& request) { return dlock::make_key(request); }
