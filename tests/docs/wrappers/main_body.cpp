// Statements as they stand in main() (a Session set up as docs/SECURITY.md shows it): the block
// is the body of main, and its run connects to the test's server.
#include <dlock/dlock.hpp>

int main() {
  // @snippet
}
