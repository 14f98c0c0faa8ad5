// The compile-time half of dlock/key.hpp: which fields make the key, in which order, and how
// each value becomes a part. No ZooKeeper needed.
#include <gtest/gtest.h>

#include <boost/describe/enum.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dlock/key.hpp"

namespace keytest {

using dlock::key;
using dlock::KeyPart;
using Parts = std::vector<KeyPart>;

struct LoginRequest {
  key<std::int64_t, 1> uid;
  key<std::string, 2> app;
  std::string password;  // not tagged
};

// Declared out of order on purpose.
struct Shuffled {
  key<std::string, 3> c;
  key<std::string, 1> a;
  int untagged = 0;
  key<std::string, 2> b;
};

struct Ties {
  key<std::string, 5> first;
  key<std::string, -1> negative;
  key<std::string, 5> second;
  key<std::string, 0> zero;
  key<std::string, 5> third;
};

struct Address {
  key<std::string, 2> city;
  key<int, 1> zip;
  std::string street;  // not tagged
};

struct Shipment {
  key<std::string, 3> carrier;
  key<Address, 1> to;
  key<std::optional<int>, 2> slot;
  Address from;  // a struct with key fields, but not tagged here: ignored
};

struct Parcel {
  key<Shipment, 2> shipment;
  key<int, 1> number;
};

struct Optionals {
  key<std::optional<int>, 1> count;
  key<std::optional<std::string>, 2> name;
  key<std::optional<bool>, 3> flag;
};

enum class Channel { Web, Mobile };
BOOST_DESCRIBE_ENUM(Channel, Web, Mobile)

enum Color : std::uint8_t { Red = 7, Green = 200 };  // not described
enum class Offset : std::int16_t { Back = -3 };      // not described, signed
enum class Grade : char { A = 'A' };                 // char underlying type: an integer here

struct Kinds {
  key<Channel, 1> channel;
  key<Color, 2> color;
  key<bool, 3> active;
  key<Offset, 4> offset;
  key<std::string_view, 5> view;
  key<std::uint64_t, 6> big;
  key<std::int8_t, 7> small;
  key<Grade, 8> grade;
};

// A class that is not an aggregate: a private field behind an accessor, a public member, and a
// struct member that contributes its own key fields.
class Order {
 public:
  Order(std::int64_t id, std::string region_, Address warehouse_)
      : region(std::move(region_)), warehouse(std::move(warehouse_)), id_(id) {}
  std::int64_t id() const { return id_; }

  std::string region;
  Address warehouse;
  std::string note = "ignored";

 private:
  std::int64_t id_;
};
DLOCK_KEY_FIELDS(Order, (id, 2), (region, 1), (warehouse, 3));

// Ties in a DLOCK_KEY_FIELDS list keep list order.
class Pair {
 public:
  Pair(int x, int y) : x_(x), y_(y) {}
  int x() const { return x_; }
  int y() const { return y_; }

 private:
  int x_;
  int y_;
};
DLOCK_KEY_FIELDS(Pair, (y, 0), (x, 0));

// An aggregate listed with DLOCK_KEY_FIELDS takes its parts from the list only.
struct Listed {
  int plain = 1;
  key<int, 1> tagged = 2;
};
DLOCK_KEY_FIELDS(Listed, (plain, 1));

// A char buffer member is read up to its first NUL, and never past its end.
struct Fixed {
  char full[4] = {'a', 'b', 'c', 'd'};
  char padded[8] = "xy";
};
DLOCK_KEY_FIELDS(Fixed, (full, 1), (padded, 2));

// A tagged field whose type is a class listed with DLOCK_KEY_FIELDS.
struct HoldsOrder {
  key<int, 2> priority;
  key<Order, 1> order;
};

TEST(KeyWrapper, ReadsLikeItsValue) {
  static_assert(std::is_aggregate_v<LoginRequest>);
  LoginRequest req{.uid = 42, .app = "shop", .password = "secret"};
  const std::int64_t& uid = req.uid;  // implicit conversion to const T&
  EXPECT_EQ(uid, 42);
  EXPECT_EQ(*req.uid, 42);
  EXPECT_EQ(req.app.value(), "shop");
  EXPECT_EQ(req.app->size(), 4u);
  EXPECT_TRUE(req.uid == 42);
  EXPECT_TRUE(42 == req.uid);
  EXPECT_TRUE(req.app == "shop");
  EXPECT_TRUE(req.app == std::string("shop"));
  EXPECT_TRUE(req.uid < 43);
  EXPECT_TRUE(req.app > "apple");
  EXPECT_FALSE(req.uid != 42);

  req.uid = 7;
  req.app = std::string_view("cart");  // explicit-only conversion, through assignment
  *req.app += "s";
  EXPECT_EQ(req.uid, 7);
  EXPECT_EQ(req.app, "carts");

  LoginRequest copy = req;
  EXPECT_TRUE(copy.uid == req.uid);
  EXPECT_TRUE(copy.app == req.app);
  EXPECT_EQ(LoginRequest{}.uid, 0);  // value-initialized
  LoginRequest uninitialized;        // default-initialized: the key fields are still 0 and ""
  EXPECT_EQ(uninitialized.uid, 0);
  EXPECT_EQ(uninitialized.app, "");
  EXPECT_EQ((key<std::string, 1>{}), "");

  static_assert(key<int, 3>::order == 3);
  static_assert(std::is_same_v<key<int, 3>::value_type, int>);
  static_assert(std::is_convertible_v<const char*, key<std::string, 1>>);
  static_assert(!std::is_convertible_v<std::string_view, key<std::string, 1>>);  // as for std::string
  static_assert(std::is_constructible_v<key<std::string, 1>, std::string_view>);
  static_assert(std::is_trivially_copyable_v<key<int, 1>>);
}

TEST(KeyBuilder, DesignatedInitializersAndOrder) {
  EXPECT_EQ(dlock::key_parts(LoginRequest{.uid = 42, .app = "shop", .password = "x"}), (Parts{42, "shop"}));
  EXPECT_EQ(dlock::make_key(LoginRequest{.uid = 42, .app = "shop", .password = "x"}), "42,shop");
}

TEST(KeyBuilder, PartsSortByOrderNotDeclaration) {
  EXPECT_EQ(dlock::key_parts(Shuffled{.c = "c", .a = "a", .untagged = 9, .b = "b"}), (Parts{"a", "b", "c"}));
}

TEST(KeyBuilder, TiesKeepDeclarationOrderAndNegativeOrdersComeFirst) {
  const Ties t{.first = "first", .negative = "negative", .second = "second", .zero = "zero", .third = "third"};
  EXPECT_EQ(dlock::key_parts(t), (Parts{"negative", "zero", "first", "second", "third"}));
}

TEST(KeyBuilder, OrderIsDecidedAtCompileTime) {
  // The field indices of Shuffled's tagged fields, sorted by Order, are a constant expression.
  constexpr auto plan = dlock::detail::tagged_field_plan<Shuffled>;
  static_assert(plan.size() == 3);
  static_assert(plan[0] == 1 && plan[1] == 3 && plan[2] == 0);
  constexpr auto ties = dlock::detail::tagged_field_plan<Ties>;
  static_assert(ties[0] == 1 && ties[1] == 3 && ties[2] == 0 && ties[3] == 2 && ties[4] == 4);
}

TEST(KeyBuilder, TaggedStructFieldsContributeTheirOwnPartsInTheirOwnOrder) {
  const Shipment s{.carrier = "dhl",
                   .to = Address{.city = "Oslo", .zip = 150, .street = "x"},
                   .slot = 3,
                   .from = Address{.city = "Bergen", .zip = 5003, .street = "y"}};
  EXPECT_EQ(dlock::key_parts(s), (Parts{150, "Oslo", 3, "dhl"}));
  EXPECT_EQ(dlock::make_key(s), "150,Oslo,3,dhl");
}

TEST(KeyBuilder, RecursionGoesDeeperThanOneLevel) {
  const Parcel p{.shipment = Shipment{.carrier = "ups",
                                      .to = Address{.city = "Rome", .zip = 118, .street = ""},
                                      .slot = std::nullopt,
                                      .from = Address{}},
                 .number = 9};
  EXPECT_EQ(dlock::key_parts(p), (Parts{9, 118, "Rome", std::nullopt, "ups"}));
  EXPECT_EQ(p.shipment->to->city, "Rome");
}

TEST(KeyBuilder, OptionalsGiveNullWhenEmpty) {
  EXPECT_EQ(dlock::key_parts(Optionals{}), (Parts{std::nullopt, std::nullopt, std::nullopt}));
  EXPECT_EQ(dlock::key_parts(Optionals{.count = 0, .name = "", .flag = false}), (Parts{0, "", false}));
  EXPECT_EQ(dlock::make_key(Optionals{}), "~null,~null,~null");
  EXPECT_EQ(dlock::make_key(Optionals{.count = 0, .name = "", .flag = false}), "0,~empty,~false");
}

TEST(KeyBuilder, EnumsBoolsAndIntegerWidths) {
  const Kinds k{.channel = Channel::Mobile,
                .color = Green,
                .active = true,
                .offset = Offset::Back,
                .view = "v",
                .big = std::numeric_limits<std::uint64_t>::max(),
                .small = -5,
                .grade = Grade::A};
  EXPECT_EQ(dlock::key_parts(k),
            (Parts{"Mobile", 200, true, -3, "v", std::numeric_limits<std::uint64_t>::max(), -5, 65}));
  EXPECT_EQ(dlock::make_key(k), "Mobile,200,~true,-3,v,18446744073709551615,-5,65");
}

TEST(KeyBuilder, ADescribedEnumValueWithoutANameGivesItsInteger) {
  EXPECT_EQ(dlock::key_parts(static_cast<Channel>(9)), (Parts{9}));
  EXPECT_EQ(dlock::key_parts(Channel::Web), (Parts{"Web"}));
}

TEST(KeyBuilder, IntegersAreOneKindWhateverTheirType) {
  EXPECT_EQ(KeyPart(42), KeyPart(std::uint64_t{42}));
  EXPECT_EQ(KeyPart(std::int8_t{42}), KeyPart(42L));
  EXPECT_EQ(dlock::make_key(std::uint16_t{42}), dlock::make_key(std::int64_t{42}));
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(KeyPart(std::uint64_t{42}).value()));
  EXPECT_TRUE(std::holds_alternative<std::uint64_t>(KeyPart(std::uint64_t{1} << 63).value()));
  EXPECT_EQ(KeyPart(std::uint64_t{1} << 63).kind(), KeyPart::Kind::integer);
  EXPECT_EQ(KeyPart(-1).kind(), KeyPart::Kind::integer);
  EXPECT_EQ(KeyPart(true).kind(), KeyPart::Kind::boolean);
  EXPECT_EQ(KeyPart("x").kind(), KeyPart::Kind::string);
  EXPECT_EQ(KeyPart().kind(), KeyPart::Kind::null);
  EXPECT_NE(KeyPart(1), KeyPart(true));
  EXPECT_NE(KeyPart(42), KeyPart("42"));
  // A pointer or a double must not quietly become a bool or an integer.
  static_assert(!std::is_constructible_v<KeyPart, double>);
  static_assert(!std::is_constructible_v<KeyPart, const int*>);
  static_assert(!std::is_constructible_v<KeyPart, char>);
  static_assert(!std::is_constructible_v<KeyPart, std::nullptr_t>);
}

TEST(KeyBuilder, PlainValuesAreSourcesInArgumentOrder) {
  const std::string region = "eu";
  const std::string_view view = "view";
  char buffer[] = "buf";
  char* mutable_ptr = buffer;
  const char* ptr = "ptr";
  EXPECT_EQ(dlock::key_parts("orders", 42, true, region, view, ptr, mutable_ptr, std::optional<int>(),
                             std::optional<std::string>("o"), Channel::Web, -1L),
            (Parts{"orders", 42, true, "eu", "view", "ptr", "buf", std::nullopt, "o", "Web", -1}));
  EXPECT_EQ(dlock::make_key("orders", 42), "orders,42");
}

TEST(KeyBuilder, StructsAndValuesMix) {
  const LoginRequest req{.uid = 42, .app = "shop", .password = ""};
  EXPECT_EQ(dlock::key_parts("login", req, 7), (Parts{"login", 42, "shop", 7}));
  EXPECT_EQ(dlock::key_parts(req, req), (Parts{42, "shop", 42, "shop"}));
  // A tagged field given on its own is its value.
  EXPECT_EQ(dlock::key_parts(req.app, req.uid), (Parts{"shop", 42}));
}

TEST(KeyBuilder, NullCharPointerThrowsInvalidKey) {
  const char* missing = nullptr;
  EXPECT_THROW(dlock::key_parts(missing), dlock::InvalidKey);
}

TEST(KeyFieldsMacro, ListsAccessorsAndMembersInOrder) {
  const Order order(7, "eu", Address{.city = "Oslo", .zip = 150, .street = ""});
  EXPECT_EQ(dlock::key_parts(order), (Parts{"eu", 7, 150, "Oslo"}));
  EXPECT_EQ(dlock::make_key(order), "eu,7,150,Oslo");
}

TEST(KeyFieldsMacro, TiesKeepListOrder) { EXPECT_EQ(dlock::key_parts(Pair(1, 2)), (Parts{2, 1})); }

TEST(KeyFieldsMacro, AListedAggregateUsesTheListOnly) { EXPECT_EQ(dlock::key_parts(Listed{}), (Parts{1})); }

TEST(KeyFieldsMacro, CharBuffersStopAtNulOrTheirEnd) { EXPECT_EQ(dlock::key_parts(Fixed{}), (Parts{"abcd", "xy"})); }

TEST(KeyFieldsMacro, AListedClassCanBeATaggedField) {
  const HoldsOrder h{.priority = 5, .order = Order(3, "us", Address{.city = "NYC", .zip = 10001, .street = ""})};
  EXPECT_EQ(dlock::key_parts(h), (Parts{"us", 3, 10001, "NYC", 5}));
}

}  // namespace keytest
