// Internal: clang's thread-safety annotations (-Wthread-safety), as macros that are empty for
// other compilers. A member a mutex guards is DLOCK_GUARDED_BY it; a function that needs a mutex
// held (the `_locked` suffix) is DLOCK_REQUIRES it. The test command compiles the library with
// clang and -Wthread-safety -Werror (tests/compile), so an access outside the mutex, or a
// `_locked` call without it, fails the build. Only the mutexes of src/base/mutex.hpp (Mutex,
// SharedMutex, RecursiveMutex) carry the capability: the annotations cover the mutexes declared
// with them, which every internal mutex of the library is.
#pragma once

#if defined(__clang__)
#define DLOCK_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DLOCK_THREAD_ANNOTATION(x)
#endif

#define DLOCK_CAPABILITY(name) DLOCK_THREAD_ANNOTATION(capability(name))
#define DLOCK_SCOPED_CAPABILITY DLOCK_THREAD_ANNOTATION(scoped_lockable)
#define DLOCK_GUARDED_BY(m) DLOCK_THREAD_ANNOTATION(guarded_by(m))
#define DLOCK_PT_GUARDED_BY(m) DLOCK_THREAD_ANNOTATION(pt_guarded_by(m))
#define DLOCK_REQUIRES(...) DLOCK_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define DLOCK_EXCLUDES(...) DLOCK_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define DLOCK_ACQUIRE(...) DLOCK_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define DLOCK_ACQUIRE_SHARED(...) DLOCK_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define DLOCK_RELEASE(...) DLOCK_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define DLOCK_RELEASE_SHARED(...) DLOCK_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define DLOCK_NO_THREAD_SAFETY_ANALYSIS DLOCK_THREAD_ANNOTATION(no_thread_safety_analysis)
