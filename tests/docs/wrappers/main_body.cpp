// Statements as they stand in main() (a Session set up as README.md and docs/SECURITY.md show
// it): the block is the body of main, and its run connects to the test's server.
#include <dlock/dlock.hpp>

int main() {
  // @snippet
}
