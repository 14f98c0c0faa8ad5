// Property tests of the key encoding, on thousands of random typed part lists (fixed seed, so a
// failure reproduces): distinct lists give distinct keys, decode_key inverts encode_key, every key
// is one printable znode name, and decode_key accepts only what encode_key produces. A negative
// control shows the distinctness check catches an encoding that is not injective.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dlock/key.hpp"

namespace keytest {
namespace {

using dlock::KeyPart;
using Parts = std::vector<KeyPart>;

constexpr std::uint64_t kSeed = 20240611;
constexpr int kLists = 5000;

// Bytes chosen to collide if any rule were missing: the separator, the escape, the token mark,
// '/', '.', '-', digits, uppercase hex letters, space, NUL, controls, DEL and non-ASCII bytes,
// plus a few plain letters. Strings are short so that near-collisions are frequent.
const std::string kTrickyBytes = std::string(",%~/.-09AF az\0\n\x7f\x80\xc3\xa9\xff", 19);

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  std::string string() {
    std::string s;
    const auto length = pick(0, 5);
    for (int i = 0; i < length; ++i) s.push_back(kTrickyBytes[static_cast<std::size_t>(pick(0, 18))]);
    return s;
  }

  KeyPart part() {
    switch (pick(0, 9)) {
      case 0:
        return KeyPart();
      case 1:
        return KeyPart(pick(0, 1) == 1);
      case 2:
        return KeyPart(static_cast<std::int64_t>(pick(-20, 20)));
      case 3: {
        static const std::int64_t extremes[] = {std::numeric_limits<std::int64_t>::min(),
                                                std::numeric_limits<std::int64_t>::min() + 1,
                                                std::numeric_limits<std::int64_t>::max(),
                                                -1,
                                                0,
                                                1};
        return KeyPart(extremes[pick(0, 5)]);
      }
      case 4: {
        static const std::uint64_t big[] = {std::uint64_t{1} << 63, (std::uint64_t{1} << 63) + 1,
                                            std::numeric_limits<std::uint64_t>::max()};
        return KeyPart(big[pick(0, 2)]);
      }
      case 5:
        return KeyPart(static_cast<std::int64_t>(rng_()));
      default:
        return KeyPart(string());
    }
  }

  Parts parts() {
    Parts parts;
    const auto count = pick(1, 5);
    for (int i = 0; i < count; ++i) parts.push_back(part());
    return parts;
  }

  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }

 private:
  std::mt19937_64 rng_;
};

// Random lists, and for each list with two adjacent strings, the same text split at another
// place and the two strings merged: exactly the regroupings a separator-based encoding confuses.
std::vector<Parts> corpus() {
  Generator gen(kSeed);
  std::vector<Parts> lists;
  for (int i = 0; i < kLists; ++i) {
    auto parts = gen.parts();
    for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
      const auto* a = std::get_if<std::string>(&parts[k].value());
      const auto* b = std::get_if<std::string>(&parts[k + 1].value());
      if (a == nullptr || b == nullptr) continue;
      const std::string joined = *a + *b;
      const auto cut = static_cast<std::size_t>(gen.pick(0, static_cast<int>(joined.size())));
      Parts moved = parts;
      moved[k] = KeyPart(joined.substr(0, cut));
      moved[k + 1] = KeyPart(joined.substr(cut));
      lists.push_back(std::move(moved));
      Parts merged = parts;
      merged[k] = KeyPart(joined);
      merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      lists.push_back(std::move(merged));
      break;
    }
    lists.push_back(std::move(parts));
  }
  return lists;
}

struct Census {
  int lists = 0;        // distinct part lists (by value and by alternative)
  int keys = 0;         // distinct keys
  int collisions = 0;   // lists whose key an earlier, different list already had
  std::string example;  // the first such key
};

template <class Encode>
Census census(const std::vector<Parts>& lists, Encode encode) {
  Census c;
  std::map<std::string, Parts> by_key;
  std::set<std::string> distinct_lists;
  for (const auto& parts : lists) {
    const auto key = encode(parts);
    const auto [it, inserted] = by_key.emplace(key, parts);
    if (!inserted && it->second != parts) {
      if (c.collisions++ == 0) c.example = key;
    }
    std::ostringstream repr;
    for (const auto& p : parts) repr << p << '|' << p.value().index() << ';';
    distinct_lists.insert(repr.str());
  }
  c.lists = static_cast<int>(distinct_lists.size());
  c.keys = static_cast<int>(by_key.size());
  return c;
}

TEST(KeyProperty, DistinctPartListsGiveDistinctKeys) {
  const auto c = census(corpus(), [](const Parts& p) { return dlock::encode_key(p); });
  EXPECT_EQ(c.collisions, 0) << "first shared key: " << c.example;
  EXPECT_EQ(c.keys, c.lists);
  EXPECT_GE(c.lists, 4000);  // the corpus is large and varied enough to mean something
}

TEST(KeyProperty, DecodeInvertsEncode) {
  for (const auto& parts : corpus()) {
    const auto key = dlock::encode_key(parts);
    ASSERT_EQ(dlock::decode_key(key), parts) << key;
  }
}

TEST(KeyProperty, EveryKeyIsOnePrintableZnodeName) {
  for (const auto& parts : corpus()) {
    const auto key = dlock::encode_key(parts);
    ASSERT_FALSE(key.empty());
    ASSERT_NE(key, ".");
    ASSERT_NE(key, "..");
    ASSERT_LE(key.size(), dlock::kMaxKeyLength);
    for (const char c : key) {
      const auto u = static_cast<unsigned char>(c);
      ASSERT_TRUE(u >= 0x21 && u <= 0x7e && c != '/') << "byte " << int(u) << " in " << key;
    }
    // The separator appears exactly between parts.
    ASSERT_EQ(static_cast<std::size_t>(std::count(key.begin(), key.end(), ',')), parts.size() - 1) << key;
  }
}

// decode_key accepts a string only if it is the encoding of what it returns, so no key has two
// spellings (which would let two processes lock different nodes for the same request).
TEST(KeyProperty, DecodeAcceptsOnlyCanonicalKeys) {
  static const std::string alphabet = ",%~.-019AFaf~x/ \x01\x80";
  std::mt19937_64 rng(kSeed + 1);
  int accepted = 0;
  int rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const int length = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int k = 0; k < length; ++k) {
      s.push_back(alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)]);
    }
    try {
      const auto parts = dlock::decode_key(s);
      ASSERT_EQ(dlock::encode_key(parts), s);
      ++accepted;
    } catch (const dlock::InvalidKey&) {
      ++rejected;
    }
  }
  // Both outcomes must occur, or the property says nothing.
  EXPECT_GE(accepted, 500);
  EXPECT_GE(rejected, 500);
}

// Negative control: the same corpus under a naive encoding (strings and numbers joined with ',',
// no escaping, no kinds) is full of collisions, so the check above can see one.
TEST(KeyProperty, NegativeControlANaiveJoinCollides) {
  const auto naive = [](const Parts& parts) {
    std::ostringstream out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) out << ',';
      if (const auto* s = std::get_if<std::string>(&parts[i].value())) {
        out << *s;
      } else if (const auto* b = std::get_if<bool>(&parts[i].value())) {
        out << (*b ? "true" : "false");
      } else if (std::holds_alternative<std::monostate>(parts[i].value())) {
        out << "";
      } else {
        out << parts[i];
      }
    }
    return out.str();
  };
  const auto c = census(corpus(), naive);
  EXPECT_GT(c.collisions, 100);
  EXPECT_LT(c.keys, c.lists);
}

}  // namespace
}  // namespace keytest
