// bench/shared_counter.hpp: W8's counter and overlap detector, in a file every process maps.
//
// Layout (little-endian int64 at byte offsets, the same in CuratorBench.java):
//   0  counter   plain load-then-store increments under the lock: lost increments show overlaps
//   8  inside    holders inside the critical section now (atomic add)
//   16 overlaps  entries that found another holder inside (atomic add)
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace bench {

class SharedCounter {
 public:
  explicit SharedCounter(const std::string& file) {
    const int fd = ::open(file.c_str(), O_RDWR);
    if (fd < 0) throw std::runtime_error("cannot open shared counter " + file);
    void* mapped = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (mapped == MAP_FAILED) throw std::runtime_error("cannot map shared counter " + file);
    words_ = static_cast<std::int64_t*>(mapped);
  }
  ~SharedCounter() { ::munmap(words_, 4096); }
  SharedCounter(const SharedCounter&) = delete;
  SharedCounter& operator=(const SharedCounter&) = delete;

  // The critical section: detects another holder inside, increments the counter non-atomically.
  void critical_section() {
    std::atomic_ref<std::int64_t> inside(words_[1]), overlaps(words_[2]), counter(words_[0]);
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    inside.fetch_sub(1);
  }

 private:
  std::int64_t* words_ = nullptr;
};

}  // namespace bench
