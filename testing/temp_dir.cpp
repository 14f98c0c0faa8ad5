#include "dlock/testing/temp_dir.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace dlock::testing {

std::string make_temp_dir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  const std::string wanted = std::string(base && *base ? base : "/tmp") + "/" + std::string(prefix) + "-XXXXXX";
  std::string templ = wanted;  // mkdtemp fills in the XXXXXX, also when it fails
  if (::mkdtemp(templ.data()) == nullptr) {
    const int error = errno;  // before the allocations below
    throw std::runtime_error("cannot make a temporary directory " + wanted + ": " + std::strerror(error) +
                             " (it goes under $TMPDIR, or /tmp when TMPDIR is unset)");
  }
  // Absolute, so that the directory is found (and removed) after a chdir too; normal, so that a
  // TMPDIR spelled with a trailing slash gives the same path as without.
  return std::filesystem::absolute(templ).lexically_normal().string();
}

TempDir::TempDir(std::string_view prefix) : path_(make_temp_dir(prefix)) {}

TempDir::~TempDir() { remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

void TempDir::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ignored;  // never throws: what cannot be removed stays (see the header)
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

}  // namespace dlock::testing
