// Compile-failure case (see ../CMakeLists.txt): a dlock::key field of a type that is not a key
// part (here a double) must not compile, even before a key is built from it, and the error must
// name the allowed kinds. Built with DLOCK_KEY_CONTROL the field is an integer and the file must
// compile.
#include <string>

#include "dlock/key.hpp"

#ifdef DLOCK_KEY_CONTROL
using Price = long;
#else
using Price = double;
#endif

struct Quote {
  dlock::key<std::string, 1> symbol;
  dlock::key<Price, 2> price;
};

std::string quote_key(const Quote& quote) { return dlock::make_key(quote); }
