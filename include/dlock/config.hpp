// dlock/config.hpp: the language requirement, checked before anything else.
//
// dlock's public headers use C++20 (concepts, char8_t, std::stop_token, designated initialisers).
// Compiled as an older standard they would fail somewhere deep inside, with an error about
// char8_t or `concept` that does not say what is wrong. Every public header includes this one
// first, so the first error a C++17 build sees names the requirement and the fix.
//
// With CMake, linking `dlock::dlock` (find_package(dlock)) already requests C++20 for the target
// that links it; this check is for builds that set an older standard explicitly, or do not use
// the CMake package.
#pragma once

#if __cplusplus < 202002L
// After the #error the compiler would go on and print a hundred errors about char8_t and
// concepts; including a header that does not exist is fatal, so the #error below stays the
// first and nearly the only thing printed.
#error \
    "dlock requires C++20: compile with -std=c++20 (or gnu++20); with CMake, link dlock::dlock and do not set CMAKE_CXX_STANDARD below 20"
#include <dlock/stop_here_dlock_requires_cxx20>  // deliberately missing: stops the compilation
#endif
