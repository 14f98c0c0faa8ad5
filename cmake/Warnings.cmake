# The warnings every target of this project is built with, in one place: link dlock_warnings
# PRIVATE (through $<BUILD_INTERFACE:...> where the target is installed, so the installed package
# does not ask for it). -Wshadow: a local that hides a member or an outer name has hidden bugs here
# before (a captured `lock` shadowing the guard). tests/consumer is a user's project and keeps its
# own flags.
add_library(dlock_warnings INTERFACE)
target_compile_options(dlock_warnings INTERFACE -Wall -Wextra -Wshadow -Werror)
