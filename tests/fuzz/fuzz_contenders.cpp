// libFuzzer target: arbitrary bytes -> the children of a lock directory, as other clients (Curator,
// kazoo, anything else with access to the directory) named them -> dlock::detail::queue_of and
// order_defect (recipes/queue/contender.cpp), which every acquisition and participants() run on the
// server's listing.
//
// The input is split on '\n' into child names. Nothing may crash or throw, and the result must
// obey the documented rules (contender.hpp): every contender is one of the names and parses on its
// own (parse_contender) to the same kind and sequence; the queue is sorted by sequence byte-wise
// with ties in listing order; a queue with two contenders of one sequence is reported by
// order_defect unless they are the one legitimate tie (a __READ__ beside a __WRIT__ below the
// counter's end).
//
// Built and run by tests/fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_report.hpp"
#include "recipes/queue/contender.hpp"

namespace {

[[noreturn]] void fail(std::string_view what, std::string_view input) {
  dlock::fuzz::report_finding("fuzz_contenders", what, "names", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> names;
  for (std::size_t start = 0;;) {
    const auto newline = input.find('\n', start);
    names.emplace_back(
        input.substr(start, newline == std::string_view::npos ? std::string_view::npos : newline - start));
    if (newline == std::string_view::npos) break;
    start = newline + 1;
  }
  const auto queue = dlock::detail::queue_of(names);
  std::size_t parsed = 0;
  for (const auto& name : names) parsed += dlock::detail::parse_contender(name).has_value() ? 1 : 0;
  if (queue.size() != parsed) fail("the queue holds another number of contenders than the names that parse", input);
  std::size_t last_index = 0;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const auto& c = queue[i];
    const auto own = dlock::detail::parse_contender(c.name);
    if (!own || own->kind != c.kind || own->sequence != c.sequence) fail("a contender does not parse to itself", input);
    // Where in the listing it came from (views point into `names`).
    std::size_t index = names.size();
    for (std::size_t n = 0; n < names.size(); ++n) {
      if (names[n].data() == c.name.data()) index = n;
    }
    if (index == names.size()) fail("a contender is not a view into the listing", input);
    if (i > 0) {
      const auto& before = queue[i - 1];
      if (before.sequence > c.sequence) fail("the queue is not sorted by sequence", input);
      if (before.sequence == c.sequence && last_index > index) fail("a tie is not kept in listing order", input);
    }
    last_index = index;
  }
  (void)dlock::detail::order_defect(queue);  // must not crash or throw on any queue
  return 0;
}
