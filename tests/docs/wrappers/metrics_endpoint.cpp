// docs/METRICS.md's Session with a MetricsRegistry and its GET /metrics answer. The block's
// statements are the body of main, with the Boost.Beast response it fills; the run checks that
// the response is the Prometheus text of this Session's metrics.
#include <boost/beast/http.hpp>
#include <cstdio>
#include <string>

namespace http = boost::beast::http;

int main() {
  http::response<http::string_body> response;
  // @snippet
  const bool content_type = response[http::field::content_type] == dlock::MetricsRegistry::kPrometheusContentType;
  const bool text = response.body().find("dlock_session_state_changes_total") != std::string::npos;
  std::printf("GET /metrics: Content-Type %s, %zu bytes\n", std::string(response[http::field::content_type]).c_str(),
              response.body().size());
  return content_type && text ? 0 : 1;
}
