// The key encoding of dlock/key.hpp: examples of every rule, the length limit, and the strings
// decode_key must refuse. No ZooKeeper needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/key.hpp"

namespace keytest {

using dlock::KeyPart;
using Parts = std::vector<KeyPart>;

std::string encode(const Parts& parts) { return dlock::encode_key(parts); }

// The message of the InvalidKey that `f` throws; fails the test if it throws nothing or else.
template <class F>
std::string invalid_key_message(F&& f) {
  try {
    f();
  } catch (const dlock::InvalidKey& e) {
    EXPECT_EQ(e.code(), dlock::errc::invalid_key);
    return e.what();
  }
  ADD_FAILURE() << "no InvalidKey thrown";
  return "";
}

TEST(KeyEncoding, CommonKeysAreReadable) {
  EXPECT_EQ(encode({42, "shop"}), "42,shop");
  EXPECT_EQ(encode({"orders", -7, true, false, std::nullopt}), "orders,-7,~true,~false,~null");
  EXPECT_EQ(encode({"user@example.com", "a-b_c.d~e"}), "user@example.com,a-b_c.d~e");
}

TEST(KeyEncoding, SplittingAStringDifferentlyGivesAnotherKey) {
  EXPECT_EQ(encode({"ab", "c"}), "ab,c");
  EXPECT_EQ(encode({"a", "bc"}), "a,bc");
  EXPECT_NE(encode({"a,b"}), encode({"a", "b"}));
  EXPECT_EQ(encode({"a,b"}), "a%2Cb");
  EXPECT_NE(encode({""}), encode({"", ""}));
  EXPECT_EQ(encode({"", ""}), "~empty,~empty");
}

TEST(KeyEncoding, KindsNeverShareASpelling) {
  EXPECT_EQ(encode({"42"}), "%342");
  EXPECT_EQ(encode({"-7"}), "%2D7");
  EXPECT_EQ(encode({"~true"}), "%7Etrue");
  EXPECT_EQ(encode({"~null"}), "%7Enull");
  EXPECT_EQ(encode({"~empty"}), "%7Eempty");
  EXPECT_EQ(encode({""}), "~empty");
  EXPECT_EQ(encode({"true"}), "true");  // a string "true" is not the bool
  EXPECT_NE(encode({"true"}), encode({true}));
  EXPECT_NE(encode({"42"}), encode({42}));
}

TEST(KeyEncoding, SlashPercentAndSeparatorAreEscaped) {
  EXPECT_EQ(encode({"a/b"}), "a%2Fb");
  EXPECT_EQ(encode({"/"}), "%2F");
  EXPECT_EQ(encode({"100%"}), "%3100%25");
  EXPECT_EQ(encode({"%2F"}), "%252F");  // an escape-looking string is not decoded twice
  EXPECT_EQ(encode({","}), "%2C");
}

TEST(KeyEncoding, ControlSpaceDelAndNonAsciiBytesAreEscaped) {
  EXPECT_EQ(encode({std::string("a\0b", 3)}), "a%00b");
  EXPECT_EQ(encode({"line\nnext\ttab\r"}), "line%0Anext%09tab%0D");
  EXPECT_EQ(encode({"two words"}), "two%20words");
  EXPECT_EQ(encode({"del\x7f"}), "del%7F");
  EXPECT_EQ(encode({"h\xC3\xA9llo"}), "h%C3%A9llo");  // UTF-8 'é'
  EXPECT_EQ(encode({"\xff\x80"}), "%FF%80");          // not even UTF-8: still one spelling
}

TEST(KeyEncoding, DotAndDotDotAreNeverTheKey) {
  EXPECT_EQ(encode({"."}), "%2E");
  EXPECT_EQ(encode({".."}), "%2E.");
  EXPECT_EQ(encode({".hidden"}), "%2Ehidden");
  EXPECT_EQ(encode({"a.b"}), "a.b");  // only a leading '.' is escaped
}

TEST(KeyEncoding, OnlyTheFirstByteOfAStringIsEscapedForItsKind) {
  EXPECT_EQ(encode({"1a1"}), "%31a1");
  EXPECT_EQ(encode({"a1-~."}), "a1-~.");
  EXPECT_EQ(encode({"~~"}), "%7E~");
}

TEST(KeyEncoding, IntegerExtremes) {
  EXPECT_EQ(encode({std::numeric_limits<std::int64_t>::min()}), "-9223372036854775808");
  EXPECT_EQ(encode({std::numeric_limits<std::int64_t>::max()}), "9223372036854775807");
  EXPECT_EQ(encode({std::numeric_limits<std::uint64_t>::max()}), "18446744073709551615");
  EXPECT_EQ(encode({0}), "0");
}

TEST(KeyEncoding, OutputIsOneZnodeNameOfPrintableAscii) {
  const std::string key = encode({"/a/b/", std::string("\0\x01\x1f \x7f\x80\xff", 7), "..", "x"});
  for (const char c : key) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x21) << key;
    EXPECT_LE(static_cast<unsigned char>(c), 0x7e) << key;
    EXPECT_NE(c, '/') << key;
  }
}

TEST(KeyEncoding, AnEmptyPartListHasNoKey) {
  const auto message = invalid_key_message([] { dlock::encode_key({}); });
  EXPECT_NE(message.find("at least one part"), std::string::npos) << message;
}

TEST(KeyEncoding, TheLengthLimitCountsEncodedBytes) {
  static_assert(dlock::kMaxKeyLength == 400);
  EXPECT_EQ(encode({std::string(400, 'a')}).size(), 400u);
  EXPECT_EQ(encode({std::string(199, 'a'), std::string(200, 'b')}).size(), 400u);

  auto message = invalid_key_message([] { encode({std::string(401, 'a')}); });
  EXPECT_NE(message.find("401 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("limit of 400 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("kMaxKeyLength"), std::string::npos) << message;

  // 134 spaces are 134 bytes of input but 402 encoded.
  message = invalid_key_message([] { encode({std::string(134, ' ')}); });
  EXPECT_NE(message.find("402 bytes"), std::string::npos) << message;
}

TEST(KeyDecoding, GivesBackPartsWithTheirKinds) {
  EXPECT_EQ(dlock::decode_key("42,shop"), (Parts{42, "shop"}));
  EXPECT_EQ(dlock::decode_key("%342,~true,~false,~null,~empty,-1"), (Parts{"42", true, false, std::nullopt, "", -1}));
  EXPECT_EQ(dlock::decode_key("a%2Fb,%3100%25,h%C3%A9llo,%2E."), (Parts{"a/b", "100%", "h\xC3\xA9llo", ".."}));
  EXPECT_EQ(dlock::decode_key("18446744073709551615,-9223372036854775808"),
            (Parts{std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::int64_t>::min()}));
  EXPECT_EQ(dlock::decode_key(std::string(400, 'x')), (Parts{std::string(400, 'x')}));
}

TEST(KeyDecoding, RefusesWhatEncodeCannotProduce) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {std::string(401, 'x'), "limit of 400"},
      {"a/b", "0x2f"},
      {"a b", "0x20"},
      {"a\nb", "0x0a"},
      {"caf\xC3\xA9", "0xc3"},
      {",", "part 1"},
      {"a,", "part 2"},
      {"a,,b", "is empty"},
      {"~", "not one of the tokens"},
      {"~maybe", "not one of the tokens"},
      {"~True", "not one of the tokens"},
      {"007", "leading zero"},
      {"-0", "-0"},
      {"-", "without digits"},
      {"1a", "not one"},
      {"--1", "not one"},
      {"18446744073709551616", "out of range"},
      {"-9223372036854775809", "out of range"},
      {"%2f", "two uppercase hex"},
      {"%2", "two uppercase hex"},
      {"a%", "two uppercase hex"},
      {"%G1", "two uppercase hex"},
      {"%61", "written as itself"},   // 'a' needs no escape
      {"a%2E", "written as itself"},  // a '.' after the first byte needs no escape
      {".", "starts with '.'"},
      {"..", "starts with '.'"},
      {".x", "starts with '.'"},
  };
  for (const auto& [text, rule] : cases) {
    const std::string key = text;  // a copy: Clang 14 cannot capture a structured binding
    const auto message = invalid_key_message([&] { dlock::decode_key(key); });
    EXPECT_NE(message.find("invalid lock key"), std::string::npos) << message;
    EXPECT_NE(message.find(rule), std::string::npos) << "key \"" << key << "\": " << message;
  }
}

TEST(KeyDecoding, TheMessageNamesTheKeyPrintably) {
  const auto message = invalid_key_message([] { dlock::decode_key("ok,\x01"); });
  EXPECT_NE(message.find("\"ok,\\x01\""), std::string::npos) << message;
}

TEST(KeyNamespace, AcceptsOnePrintableZnodeName) {
  EXPECT_NO_THROW(dlock::check_key_namespace("orders"));
  EXPECT_NO_THROW(dlock::check_key_namespace("user-sessions.v2_~@:"));
  EXPECT_NO_THROW(dlock::check_key_namespace("..."));
  EXPECT_NO_THROW(dlock::check_key_namespace(std::string(dlock::kMaxKeyNamespaceLength, 'n')));
}

TEST(KeyNamespace, RefusesWithTheValueAndTheRule) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {".", "not znode names"},
      {"..", "not znode names"},
      {"a/b", "cannot contain '/'"},
      {"/orders", "cannot contain '/'"},
      {"two words", "0x20"},
      {"tab\t", "0x09"},
      {"caf\xC3\xA9", "0xc3"},
      {std::string(101, 'n'), "limit of 100 bytes"},
  };
  for (const auto& [text, rule] : cases) {
    const std::string name = text;  // a copy: Clang 14 cannot capture a structured binding
    const auto message = invalid_key_message([&] { dlock::check_key_namespace(name); });
    EXPECT_NE(message.find("invalid key namespace"), std::string::npos) << message;
    EXPECT_NE(message.find(rule), std::string::npos) << "namespace \"" << name << "\": " << message;
  }
  const auto message = invalid_key_message([] { dlock::check_key_namespace("a/b"); });
  EXPECT_NE(message.find("\"a/b\""), std::string::npos) << message;
}

TEST(KeyErrors, InvalidKeyIsADlockError) {
  try {
    dlock::decode_key("");
    FAIL() << "no exception";
  } catch (const dlock::Error& e) {
    EXPECT_EQ(e.code(), dlock::errc::invalid_key);
    EXPECT_EQ(e.code().category(), dlock::dlock_category());
    EXPECT_EQ(e.code().message(), "invalid lock key");
  }
}

}  // namespace keytest
