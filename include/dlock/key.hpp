// dlock/key.hpp: lock keys built from request fields, decided at compile time.
//
// A service locks "user 42 in app shop" by naming the fields that identify the resource once, on
// the request type, instead of formatting a path by hand at every call site:
//
//   struct LoginRequest {
//     dlock::key<std::int64_t, 1> uid;   // reads like an int64: req.uid == 42, *req.uid, ...
//     dlock::key<std::string, 2> app;
//     std::string password;              // not tagged: not part of the key
//   };
//   LoginRequest req{.uid = 42, .app = "shop", .password = "..."};
//   dlock::make_key(req);                // "42,shop": one znode name
//
// Later, `DLOCK_SCOPE(service, "namespace", sources...)` locks `<base>/<namespace>/<key>`.
//
// Key sources. `key_parts(sources...)` / `make_key(sources...)` take any number of sources and
// concatenate their parts in argument order. A source is
//   * an aggregate struct with fields tagged `dlock::key<T, Order>`, found through Boost.PFR (so
//     the struct may not have base classes or C-array fields; use DLOCK_KEY_FIELDS there);
//   * any class listed with `DLOCK_KEY_FIELDS(Type, (member, order), ...)` (below);
//   * a plain value: a string (std::string, std::string_view, const char*, a string literal), an
//     integer (not a character type: `char` is refused, `std::int8_t` / `std::uint8_t` are
//     integers), a bool, an enum, or `std::optional` of one of these.
// Within a struct, the tagged fields give their parts sorted by Order (any int, negative too),
// fields of equal Order in declaration order; all decided at compile time. A tagged field whose
// type is itself a struct with tagged fields (or listed with DLOCK_KEY_FIELDS) contributes its
// own parts, in its own order, at its place. Untagged fields are ignored, structs or not.
//
//   struct Address { dlock::key<std::string, 2> city; dlock::key<int, 1> zip; };
//   struct Ship { dlock::key<Address, 1> to; dlock::key<std::optional<int>, 2> slot; };
//   dlock::key_parts(Ship{.to = Address{.city = "Oslo", .zip = 150}, .slot = std::nullopt})
//       == {150, "Oslo", null}                  // make_key gives "150,Oslo,~null"
//
// Compile-time errors: a struct source (or the T of a tagged struct field) without any tagged
// field fails with "dlock key source has no field tagged dlock::key<T, Order>"; a part of another
// type (double, a pointer, char, std::optional of a struct, ...) with "dlock key part must be ...";
// both name the offending type in the compiler's note.
//
// Part kinds. A key is a list of typed parts (`KeyPart`): string, integer, bool, or null (an
// empty std::optional). Integers are one kind, whatever their C++ type: int 42, std::uint16_t 42
// and std::int64_t 42 are the same part, so widening a field does not move its locks (which would
// break mutual exclusion between old and new instances during a rolling upgrade). Enums: if the
// enum is described with BOOST_DESCRIBE_ENUM (visible where the key is built), a value with an
// enumerator name gives that name as a string part, and any other value its underlying integer;
// an enum without description always gives its underlying integer. So describing an enum, or
// renaming a described enumerator, changes its keys.
//
// Encoding: `encode_key` writes a part list as ONE znode name (never a nested path: a lock
// directory nested inside another makes Curator's waiters on the outer one wait on it). Parts are
// joined with ','; each part is written by kind:
//   integer   decimal, '-' for negatives: 42, -7, 18446744073709551615
//   bool      ~true, ~false
//   null      ~null
//   string    its bytes, except that these are written %XX (two uppercase hex digits):
//               - bytes outside 0x21-0x7E: space, control characters, DEL, every byte of a
//                 non-ASCII (UTF-8) character;
//               - '%' (the escape), '/' (it would nest the path), ',' (the separator);
//               - a FIRST byte that is a digit, '-', '.' or '~' (it would read as an integer or a
//                 token, and "." / ".." are not node names);
//             the empty string is ~empty.
// So ',' only ever separates parts, a part's first character tells its kind (digit or '-':
// integer; '~': token; anything else: string), and every part list has exactly one spelling:
// different part lists never give the same key, and decode_key(encode_key(p)) == p.
//   {42, "shop"}                           -> 42,shop
//   {"ab", "c"} / {"a", "bc"}              -> ab,c / a,bc
//   {"a/b", "100%", -7, true, null}        -> a%2Fb,%3100%25,-7,~true,~null
//   {"", ".", "h\xC3\xA9 x"}                -> ~empty,%2E,h%C3%A9%20x
// The result is printable ASCII without '/', never empty, never "." or "..", at most
// `kMaxKeyLength` bytes. An empty part list has no key: `encode_key` throws, and `key_parts` /
// `make_key` refuse zero sources at compile time (a source always gives at least one part).
// A key may contain `lock-`, `__READ__`, `__WRIT__`, `__lock__` or `__rlock__`: Curator and kazoo
// look for those markers in the names of a lock directory's children, and the key is the name of
// the lock directory itself.
// The encoding is part of dlock's contract: two builds that encode differently would lock
// different nodes for the same request. Another language can produce the same keys from the rules
// above.
//
// Thread-safety: every function here is pure and may be called concurrently. A `dlock::key<T, N>`
// is exactly as thread-safe as a T.
//
// Errors: `InvalidKey` (an `Error`, code `errc::invalid_key`) when an encoded key would be longer
// than `kMaxKeyLength` (the message names the limit and the length), when `decode_key` is given a
// string that `encode_key` could not have produced (naming the string and the rule), for a null
// `const char*` part, and when `check_key_namespace` rejects a namespace.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <boost/describe/enum_to_string.hpp>
#include <boost/describe/enumerators.hpp>

#include "dlock/error.hpp"
#include "dlock/detail/key.hpp"

namespace dlock {

// The longest key `encode_key` produces (and `decode_key` accepts), in bytes. ZooKeeper itself has
// no per-name limit, but the key is repeated in the path of every lock node and watch, and humans
// read it in logs and zkCli; a longer key usually means a field that should not be in it.
inline constexpr std::size_t kMaxKeyLength = 400;

// The longest namespace `check_key_namespace` accepts, in bytes.
inline constexpr std::size_t kMaxKeyNamespaceLength = 100;

// Tags a field of a request struct as part `Order` of its lock key, and otherwise reads like a T:
// it converts implicitly to `const T&`, and has `*k`, `k->`, `k.value()`, comparisons with T (and
// with what T compares with), construction from anything T can be built from (implicit when T's
// own conversion is), and assignment from anything T can be assigned from. A default-constructed
// key holds a value-initialized T (0, "", an empty optional). A struct holding keys stays an
// aggregate, so designated initializers work: `LoginRequest{.uid = 42, .app = "shop"}`.
//
// T is a part type (string, integer, bool, enum, or std::optional of one of these) or a struct
// with tagged fields of its own (or listed with DLOCK_KEY_FIELDS), which is then read
// recursively. Member access on a struct T goes through `->`: `req.to->city`.
template <class T, int Order>
struct key {
  static_assert(!std::is_reference_v<T> && !std::is_const_v<T> && !std::is_volatile_v<T>,
                "dlock::key<T, Order>: T must be a plain value type (no reference, no const)");
  static_assert(!detail::is_key_wrapper_v<T>, "dlock::key<dlock::key<...>, Order>: tag the field once");
  static_assert(detail::is_supported_key_field_type<T>,
                "dlock::key<T, Order>: T must be a string (std::string, std::string_view, const char*), an integer "
                "(not a character type), bool, an enum, std::optional of one of these, or a struct with "
                "dlock::key fields");

 public:
  using value_type = T;
  static constexpr int order = Order;

  // Constrained rather than defaulted: for a T without a default constructor, key<T> is then
  // simply not default-constructible, instead of ill-formed (Boost.PFR probes that when it counts
  // a struct's fields).
  constexpr key() noexcept(std::is_nothrow_default_constructible_v<T>)
    requires std::is_default_constructible_v<T>
      : value_() {}

  template <class U = T>
    requires(!std::is_same_v<std::remove_cvref_t<U>, key> && std::is_constructible_v<T, U&&>)
  constexpr explicit(!std::is_convertible_v<U&&, T>) key(U&& value) : value_(std::forward<U>(value)) {}

  template <class U = T>
    requires(!std::is_same_v<std::remove_cvref_t<U>, key> && std::is_assignable_v<T&, U&&>)
  constexpr key& operator=(U&& value) {
    value_ = std::forward<U>(value);
    return *this;
  }

  constexpr const T& value() const noexcept { return value_; }
  constexpr T& value() noexcept { return value_; }
  constexpr operator const T&() const noexcept { return value_; }
  constexpr const T& operator*() const noexcept { return value_; }
  constexpr T& operator*() noexcept { return value_; }
  constexpr const T* operator->() const noexcept { return &value_; }
  constexpr T* operator->() noexcept { return &value_; }

  friend constexpr bool operator==(const key& a, const key& b)
    requires std::equality_comparable<T>
  {
    return a.value_ == b.value_;
  }
  template <class U>
    requires(!detail::is_key_wrapper_v<U>) && requires(const T& t, const U& u) {
      { t == u } -> std::convertible_to<bool>;
    }
  friend constexpr bool operator==(const key& a, const U& b) {
    return a.value_ == b;
  }
  friend constexpr auto operator<=>(const key& a, const key& b)
    requires std::three_way_comparable<T>
  {
    return a.value_ <=> b.value_;
  }
  template <class U>
    requires(!detail::is_key_wrapper_v<U>) && requires(const T& t, const U& u) { t <=> u; }
  friend constexpr auto operator<=>(const key& a, const U& b) {
    return a.value_ <=> b;
  }

 private:
  T value_;
};

// One part of a key: null, a bool, an integer or a string. Two parts are equal exactly when
// their encodings are, which is why integers have one canonical representation: a value that fits
// std::int64_t is always held as std::int64_t, and only values above INT64_MAX as std::uint64_t,
// whatever C++ type it was built from.
//
//   std::vector<dlock::KeyPart> parts{42, "shop", true, std::nullopt};
class KeyPart {
 public:
  // std::monostate is the null part (an empty std::optional).
  using Value = std::variant<std::monostate, bool, std::int64_t, std::uint64_t, std::string>;
  enum class Kind { null, boolean, integer, string };

  KeyPart() noexcept = default;  // null
  KeyPart(std::nullopt_t) noexcept {}
  // Templates, so that a pointer or a double does not quietly become a bool or an integer.
  template <std::same_as<bool> B>
  KeyPart(B b) noexcept : value_(std::in_place_type<bool>, b) {}
  template <class I>
    requires detail::is_key_integer_v<I>
  KeyPart(I i) noexcept : value_(canonical(i)) {}
  KeyPart(std::string s) : value_(std::move(s)) {}
  KeyPart(std::string_view s) : value_(std::string(s)) {}
  // `s` must not be null (a null pointer throws InvalidKey).
  KeyPart(const char* s);
  KeyPart(std::nullptr_t) = delete;

  Kind kind() const noexcept;
  const Value& value() const noexcept { return value_; }

  friend bool operator==(const KeyPart&, const KeyPart&) = default;

 private:
  template <class I>
  static Value canonical(I i) noexcept {
    if constexpr (std::is_signed_v<I>) {
      return Value(std::in_place_type<std::int64_t>, static_cast<std::int64_t>(i));
    } else if (static_cast<std::uint64_t>(i) <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Value(std::in_place_type<std::int64_t>, static_cast<std::int64_t>(i));
    } else {
      return Value(std::in_place_type<std::uint64_t>, static_cast<std::uint64_t>(i));
    }
  }

  Value value_;
};

// Writes the part for people (and test failure messages): null, true, -7, "shop" (a string in
// double quotes, with \xNN for bytes outside printable ASCII). Not the key encoding.
std::ostream& operator<<(std::ostream& out, const KeyPart& part);

namespace detail {

template <class T>
KeyPart scalar_key_part(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    if constexpr (boost::describe::has_describe_enumerators<T>::value) {
      if (const char* name = boost::describe::enum_to_string(value, nullptr)) return KeyPart(std::string_view(name));
    }
    using U = std::underlying_type_t<T>;
    if constexpr (std::is_signed_v<U>) {
      return KeyPart(static_cast<std::int64_t>(value));
    } else {
      return KeyPart(static_cast<std::uint64_t>(value));
    }
  } else {
    return KeyPart(value);
  }
}

template <class T>
KeyPart to_key_part(const T& value) {
  if constexpr (is_optional<T>::value) {
    return value ? scalar_key_part(*value) : KeyPart();
  } else {
    return scalar_key_part(value);
  }
}

}  // namespace detail

// The parts of `sources`, each source's parts in its key order, sources in argument order (see
// "Key sources" above). At least one source.
template <class... Sources>
std::vector<KeyPart> key_parts(const Sources&... sources) {
  static_assert(sizeof...(Sources) > 0, "dlock::key_parts needs at least one key source");
  std::vector<KeyPart> parts;
  auto append = [&parts](const auto& value) { parts.push_back(detail::to_key_part(value)); };
  (detail::visit_key_values(sources, append), ...);
  return parts;
}

// The key of `parts`: one znode name, following the encoding rules above. Throws `InvalidKey`
// for an empty list or when the key would be longer than `kMaxKeyLength`.
std::string encode_key(std::span<const KeyPart> parts);

// The parts `key` encodes, with their kinds: the inverse of `encode_key`. Throws `InvalidKey`
// (naming the key and the rule) for any string encode_key cannot produce: empty, longer than
// kMaxKeyLength, a character outside 0x21-0x7E or '/', an empty part, an unknown ~token, a
// malformed or out-of-range integer ("007", "-0"), a bad or needless %XX escape ("%2f", "%61").
std::vector<KeyPart> decode_key(std::string_view key);

// encode_key(key_parts(sources...)).
template <class... Sources>
std::string make_key(const Sources&... sources) {
  static_assert(sizeof...(Sources) > 0, "dlock::make_key needs at least one key source");
  return encode_key(key_parts(sources...));
}

// Checks that `name` can be the namespace level of `<base>/<namespace>/<key>`: one znode name,
// written by hand, so the rule is strict and simple. Throws `InvalidKey` naming the value and the
// rule when it is empty, "." or "..", longer than kMaxKeyNamespaceLength, contains '/', or has a
// byte outside printable ASCII without space (0x21-0x7E).
void check_key_namespace(std::string_view name);

}  // namespace dlock

// Lists the key fields of a class that is not an aggregate (or whose fields cannot carry
// dlock::key), with their orders:
//
//   class Order {
//    public:
//     std::int64_t id() const;
//     std::string region;
//     ...
//   };
//   DLOCK_KEY_FIELDS(Order, (region, 1), (id, 2));
//
// Write it at namespace scope, in the namespace of the class (the key builder finds it by
// argument-dependent lookup), after the class and before any key is built from it. Each entry is
// `(member, order)`: a public data member, or a public const member function taking no argument
// (an accessor, which is how a private field is exposed) that is not overloaded. The listed
// members are plain types (not dlock::key), of any kind a dlock::key may hold, structs with key
// fields included. Entries sort by order, ties in list order. A class listed here takes its parts
// from the list only, even if it also has dlock::key fields. Type must name the class without a
// top-level comma (use an alias for a template specialization).
#define DLOCK_KEY_FIELDS(Type, ...) DLOCK_DETAIL_KEY_FIELDS(Type, __VA_ARGS__)
