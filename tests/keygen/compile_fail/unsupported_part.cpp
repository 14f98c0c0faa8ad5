// Compile-failure case (see ../CMakeLists.txt): a plain value of a type that is not a key part
// (here a double) must not compile, and the error must name the allowed kinds. Built with
// DLOCK_KEY_CONTROL the value is an integer and the file must compile.
#include <string>

#include "dlock/key.hpp"

#ifdef DLOCK_KEY_CONTROL
using Price = long;
#else
using Price = double;
#endif

std::string price_key(Price price) { return dlock::make_key("prices", price); }
