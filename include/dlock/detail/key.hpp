// dlock/detail/key.hpp: the compile-time half of the key builder. Not public API: include
// <dlock/key.hpp>, which documents everything here that callers see.
//
// This file decides, per type and at compile time, what a key source is (a part value, a struct
// with `dlock::key` fields, a class listed with DLOCK_KEY_FIELDS) and in which order its fields
// are read. It knows nothing about `KeyPart`: it hands each part value (a string, integer, bool,
// enum or optional of these) to a visitor, and key.hpp turns values into parts. That keeps the
// reflection separate from the encoding, and this header free of key.hpp's declarations.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/pfr/core.hpp>
#include <boost/pfr/tuple_size.hpp>
#include <boost/preprocessor/punctuation/comma_if.hpp>
#include <boost/preprocessor/seq/for_each_i.hpp>
#include <boost/preprocessor/tuple/elem.hpp>
#include <boost/preprocessor/variadic/to_seq.hpp>

namespace dlock {

template <class T, int Order>
struct key;

namespace detail {

// ---- part value kinds ------------------------------------------------------------------------

template <class T>
struct is_key_wrapper : std::false_type {};
template <class T, int Order>
struct is_key_wrapper<key<T, Order>> : std::true_type {};
template <class T>
inline constexpr bool is_key_wrapper_v = is_key_wrapper<T>::value;

template <class T>
inline constexpr int key_order_v = 0;
template <class T, int Order>
inline constexpr int key_order_v<key<T, Order>> = Order;

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// Character types are not integers here: whether `char c = '4'` means the text "4" or the number
// 52 is a guess dlock refuses to make. (std::int8_t / std::uint8_t are signed / unsigned char,
// which do count as integers.)
template <class T>
inline constexpr bool is_char_type_v =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;

template <class T>
inline constexpr bool is_key_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool> && !is_char_type_v<T>;

template <class T>
inline constexpr bool is_key_string_v = std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view> ||
                                        std::is_same_v<T, const char*> || std::is_same_v<T, char*>;

// One part, as a type: a string, an integer, a bool or an enum.
template <class T>
inline constexpr bool is_key_scalar_v =
    is_key_string_v<T> || is_key_integer_v<T> || std::is_same_v<T, bool> || std::is_enum_v<T>;

template <class T>
struct is_key_value : std::bool_constant<is_key_scalar_v<T>> {};
template <class T>
struct is_key_value<std::optional<T>> : std::bool_constant<is_key_scalar_v<T>> {};

// What `dlock::key<T, Order>` and a plain-value source may hold: one of the scalars above, or
// std::optional of one (an empty optional is the null part). The name is what a failed
// static_assert prints in its note, with the offending type.
template <class T>
inline constexpr bool is_supported_key_part_type = is_key_value<T>::value;

// What `dlock::key<T, Order>` accepts as T: a part type, or a class to be read recursively (which
// must then have key fields; that is checked where a key is built, after DLOCK_KEY_FIELDS had its
// chance to be declared).
template <class T>
inline constexpr bool is_supported_key_field_type = is_supported_key_part_type<T> ||
                                                    (std::is_class_v<T> && !is_optional<T>::value);

// ---- DLOCK_KEY_FIELDS ------------------------------------------------------------------------
//
// DLOCK_KEY_FIELDS(Type, ...) declares (never defines) a function
//   key_field_list<key_field<&Type::m, order>...> dlock_key_fields(fields_tag<Type>);
// in Type's namespace. Only its return type is used, in decltype, found by argument-dependent
// lookup on the tag (whose template argument brings Type's namespace in). A declaration, unlike a
// trait specialization, can be written in the user's own namespace, and nothing is emitted.

template <auto Member, int Order>
struct key_field {};

template <class... Fields>
struct key_field_list {};

template <class T>
struct fields_tag {};

// Gives ordinary lookup something to find, so the call below is always an ADL call; never chosen.
void dlock_key_fields() = delete;

template <class T>
concept has_listed_key_fields = requires {
  dlock_key_fields(fields_tag<T>{});
};

#define DLOCK_DETAIL_KEY_FIELD(r, Type, i, field) \
  BOOST_PP_COMMA_IF(                              \
      i)::dlock::detail::key_field<&Type::BOOST_PP_TUPLE_ELEM(2, 0, field), (BOOST_PP_TUPLE_ELEM(2, 1, field))>

#define DLOCK_DETAIL_KEY_FIELDS(Type, ...)                                                        \
  ::dlock::detail::key_field_list<BOOST_PP_SEQ_FOR_EACH_I(DLOCK_DETAIL_KEY_FIELD, Type,           \
                                                          BOOST_PP_VARIADIC_TO_SEQ(__VA_ARGS__))> \
      dlock_key_fields(::dlock::detail::fields_tag<Type>)

// ---- ordering ----------------------------------------------------------------------------------

struct FieldOrder {
  std::size_t index;  // position among the struct's fields (or in the DLOCK_KEY_FIELDS list)
  int order;
};

// Insertion sort: stable, so fields of equal order keep their declaration order, and constexpr
// (std::stable_sort is not, in C++20). Field counts are small.
template <std::size_t N>
constexpr std::array<std::size_t, N> sorted_indices(std::array<FieldOrder, N> fields) {
  for (std::size_t i = 1; i < N; ++i) {
    for (std::size_t j = i; j > 0 && fields[j - 1].order > fields[j].order; --j) {
      std::swap(fields[j - 1], fields[j]);
    }
  }
  std::array<std::size_t, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = fields[i].index;
  return out;
}

// ---- aggregates: tagged fields found through Boost.PFR ---------------------------------------

template <class S>
inline constexpr bool is_reflectable_aggregate_v = std::is_class_v<S>&& std::is_aggregate_v<S> && !std::is_union_v<S>;

template <class S, std::size_t I>
using field_t = std::remove_cv_t<boost::pfr::tuple_element_t<I, S>>;

template <class S, std::size_t... I>
constexpr std::size_t count_tagged(std::index_sequence<I...>) {
  return (std::size_t{0} + ... + (is_key_wrapper_v<field_t<S, I>> ? 1 : 0));
}

template <class S>
constexpr std::size_t tagged_field_count() {
  if constexpr (is_reflectable_aggregate_v<S>) {
    return count_tagged<S>(std::make_index_sequence<boost::pfr::tuple_size_v<S>>{});
  } else {
    return 0;
  }
}

template <class S, std::size_t... I>
constexpr auto tagged_plan(std::index_sequence<I...>) {
  std::array<FieldOrder, tagged_field_count<S>()> fields{};
  std::size_t k = 0;
  ((is_key_wrapper_v<field_t<S, I>> ? void(fields[k++] = FieldOrder{I, key_order_v<field_t<S, I>>}) : void()), ...);
  return sorted_indices(fields);
}

// The indices of S's tagged fields, in key order.
template <class S>
inline constexpr auto tagged_field_plan = tagged_plan<S>(std::make_index_sequence<boost::pfr::tuple_size_v<S>>{});

// ---- classes listed with DLOCK_KEY_FIELDS ------------------------------------------------------

template <class S, class List>
struct listed_plan;
template <class S, auto... Members, int... Orders>
struct listed_plan<S, key_field_list<key_field<Members, Orders>...>> {
  static constexpr auto members = std::make_tuple(Members...);
  static constexpr auto order = [] {
    std::array<FieldOrder, sizeof...(Members)> fields{};
    std::size_t k = 0;
    ((fields[k] = FieldOrder{k, Orders}, ++k), ...);
    return sorted_indices(fields);
  }();
  static constexpr bool all_plain =
      !(is_key_wrapper_v<std::remove_cvref_t<std::invoke_result_t<decltype(Members), const S&>>> || ...);
};

// A class template, not an alias template, around the decltype: GCC 12 resolves the call inside
// an alias template too early and picks the deleted declaration above.
template <class S>
struct listed_fields {
  using type = decltype(dlock_key_fields(fields_tag<S>{}));
};

template <class S>
using listed_plan_t = listed_plan<S, typename listed_fields<S>::type>;

// ---- what a source is ------------------------------------------------------------------------

template <class S>
inline constexpr bool is_char_array_v =
    std::is_array_v<S>&& std::rank_v<S> == 1 && std::is_same_v<std::remove_cv_t<std::remove_extent_t<S>>, char>;

// True for a class that contributes parts of its own: listed with DLOCK_KEY_FIELDS, or an
// aggregate with at least one `dlock::key` field. The name is what a failed static_assert prints
// in its note, with the offending type.
template <class S>
inline constexpr bool has_key_fields = has_listed_key_fields<S> || tagged_field_count<S>() > 0;

// Calls `visit(value)` for every part value of `source`, in key order. A value is one of the
// is_key_value types (an optional included); key.hpp turns it into a KeyPart.
template <class V, class Visit>
void visit_key_values(const V& source, Visit& visit);

template <class S, class Visit, std::size_t... K>
void visit_tagged(const S& source, Visit& visit, std::index_sequence<K...>) {
  constexpr auto& plan = tagged_field_plan<S>;
  (visit_key_values(boost::pfr::get<plan[K]>(source).value(), visit), ...);
}

template <class S, class Visit, std::size_t... K>
void visit_listed(const S& source, Visit& visit, std::index_sequence<K...>) {
  using Plan = listed_plan_t<S>;
  (visit_key_values(std::invoke(std::get<Plan::order[K]>(Plan::members), source), visit), ...);
}

template <class V, class Visit>
void visit_key_values(const V& source, Visit& visit) {
  using S = std::remove_cv_t<V>;
  if constexpr (is_key_wrapper_v<S>) {
    visit_key_values(source.value(), visit);
  } else if constexpr (is_char_array_v<S>) {
    // Up to the first NUL, but never past the array (a char buffer member may be full).
    const char* end = std::find(source, source + std::extent_v<S>, '\0');
    visit(std::string_view(source, static_cast<std::size_t>(end - source)));
  } else if constexpr (is_key_value<S>::value) {
    visit(source);
  } else if constexpr (has_listed_key_fields<S>) {
    static_assert(listed_plan_t<S>::all_plain,
                  "DLOCK_KEY_FIELDS lists plain members: a dlock::key<T, Order> member is already tagged, "
                  "and its Order would compete with the one in the list; declare the member as a plain T");
    constexpr std::size_t n = listed_plan_t<S>::order.size();
    visit_listed(source, visit, std::make_index_sequence<n>{});
  } else if constexpr (std::is_class_v<S> && !is_optional<S>::value) {
    static_assert(has_key_fields<S>,
                  "dlock key source has no field tagged dlock::key<T, Order> (and no DLOCK_KEY_FIELDS "
                  "in its namespace); the S of has_key_fields<S> in this diagnostic names the type");
    if constexpr (has_key_fields<S>) {  // keeps the compiler from piling errors on the assertion
      visit_tagged(source, visit, std::make_index_sequence<tagged_field_count<S>()>{});
    }
  } else {
    static_assert(is_supported_key_part_type<S>,
                  "dlock key part must be a string (std::string, std::string_view, const char*), an "
                  "integer (not a character type), bool, an enum, or std::optional of one of these; "
                  "or a struct with dlock::key fields (not inside std::optional)");
  }
}

}  // namespace detail
}  // namespace dlock
