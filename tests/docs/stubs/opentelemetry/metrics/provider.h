// A stand-in for the part of the OpenTelemetry C++ metrics API (1.x, ABI version 1) that
// docs/METRICS.md's adapter uses. Debian 12 packages no OpenTelemetry, so the adapter is compiled
// against this (tests/docs): the declarations below keep the API's own names and signatures
// (api/include/opentelemetry/metrics/provider.h, meter_provider.h, meter.h, sync_instruments.h;
// common/attribute_value.h, key_value_iterable_view.h), so a call the real API would not accept
// does not compile here either, while what is checked is the adapter's use of dlock's
// MetricsSink. Instead of exporting, every instrument counts its calls by name:
// opentelemetry_stub::calls("dlock.lock.acquisitions").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace opentelemetry_stub {

inline std::mutex& calls_mutex() {
  static std::mutex mutex;
  return mutex;
}
inline std::map<std::string, int>& calls_by_name() {
  static std::map<std::string, int> calls;
  return calls;
}
inline void record(const std::string& name) {
  std::scoped_lock lock(calls_mutex());
  ++calls_by_name()[name];
}
// How many values the instrument named `name` was given.
inline int calls(const std::string& name) {
  std::scoped_lock lock(calls_mutex());
  return calls_by_name()[name];
}

}  // namespace opentelemetry_stub

namespace opentelemetry {
namespace nostd {
using string_view = std::string_view;
template <class T>
using unique_ptr = std::unique_ptr<T>;
template <class T>
using shared_ptr = std::shared_ptr<T>;
}  // namespace nostd

namespace common {
// The API's variant less its span alternatives, which the adapter does not use.
using AttributeValue = std::variant<bool, std::int32_t, std::int64_t, std::uint32_t, double, const char*,
                                    nostd::string_view, std::uint64_t>;
namespace detail {
// As the API's: a range of pairs whose first is a string_view and second an AttributeValue.
template <class T, class = void>
struct is_key_value_iterable : std::false_type {};
template <class T>
struct is_key_value_iterable<T, std::void_t<decltype(nostd::string_view(std::begin(std::declval<const T&>())->first)),
                                            decltype(AttributeValue(std::begin(std::declval<const T&>())->second)),
                                            decltype(std::end(std::declval<const T&>()))>> : std::true_type {};
}  // namespace detail
}  // namespace common

namespace context {
class Context {};
}  // namespace context

namespace metrics {

using Attributes = std::initializer_list<std::pair<nostd::string_view, common::AttributeValue>>;
template <class U>
using IfAttributes = std::enable_if_t<common::detail::is_key_value_iterable<U>::value>;

class Instrument {
 public:
  explicit Instrument(nostd::string_view name) : name_(name) {}
  virtual ~Instrument() = default;

 protected:
  void record() const noexcept { opentelemetry_stub::record(name_); }

 private:
  std::string name_;
};

template <class T>
class Counter : public Instrument {
 public:
  using Instrument::Instrument;
  void Add(T) noexcept { record(); }
  void Add(T, const context::Context&) noexcept { record(); }
  template <class U, IfAttributes<U>* = nullptr>
  void Add(T, const U&) noexcept {
    record();
  }
  template <class U, IfAttributes<U>* = nullptr>
  void Add(T, const U&, const context::Context&) noexcept {
    record();
  }
  void Add(T, Attributes) noexcept { record(); }
  void Add(T, Attributes, const context::Context&) noexcept { record(); }
};

template <class T>
class UpDownCounter : public Counter<T> {
 public:
  using Counter<T>::Counter;
};

template <class T>
class Histogram : public Instrument {
 public:
  using Instrument::Instrument;
  // ABI version 1 records with a context only.
  void Record(T, const context::Context&) noexcept { record(); }
  template <class U, IfAttributes<U>* = nullptr>
  void Record(T, const U&, const context::Context&) noexcept {
    record();
  }
  void Record(T, Attributes, const context::Context&) noexcept { record(); }
};

class Meter {
 public:
  nostd::unique_ptr<Counter<std::uint64_t>> CreateUInt64Counter(nostd::string_view name, nostd::string_view = "",
                                                                nostd::string_view = "") noexcept {
    return std::make_unique<Counter<std::uint64_t>>(name);
  }
  nostd::unique_ptr<Counter<double>> CreateDoubleCounter(nostd::string_view name, nostd::string_view = "",
                                                         nostd::string_view = "") noexcept {
    return std::make_unique<Counter<double>>(name);
  }
  nostd::unique_ptr<Histogram<std::uint64_t>> CreateUInt64Histogram(nostd::string_view name, nostd::string_view = "",
                                                                    nostd::string_view = "") noexcept {
    return std::make_unique<Histogram<std::uint64_t>>(name);
  }
  nostd::unique_ptr<Histogram<double>> CreateDoubleHistogram(nostd::string_view name, nostd::string_view = "",
                                                             nostd::string_view = "") noexcept {
    return std::make_unique<Histogram<double>>(name);
  }
  nostd::unique_ptr<UpDownCounter<std::int64_t>> CreateInt64UpDownCounter(nostd::string_view name,
                                                                          nostd::string_view = "",
                                                                          nostd::string_view = "") noexcept {
    return std::make_unique<UpDownCounter<std::int64_t>>(name);
  }
  nostd::unique_ptr<UpDownCounter<double>> CreateDoubleUpDownCounter(nostd::string_view name, nostd::string_view = "",
                                                                     nostd::string_view = "") noexcept {
    return std::make_unique<UpDownCounter<double>>(name);
  }
};

class MeterProvider {
 public:
  nostd::shared_ptr<Meter> GetMeter(nostd::string_view, nostd::string_view = "", nostd::string_view = "") noexcept {
    return std::make_shared<Meter>();
  }
};

class Provider {
 public:
  static nostd::shared_ptr<MeterProvider> GetMeterProvider() noexcept { return std::make_shared<MeterProvider>(); }
};

}  // namespace metrics
}  // namespace opentelemetry
