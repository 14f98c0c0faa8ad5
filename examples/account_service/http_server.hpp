// A small HTTP/1.1 server (Boost.Beast): asynchronous accept and I/O on one io_context.
//
// With a (synchronous) HttpHandler, the io_context is run by a fixed pool of threads (main.cpp);
// each request's handler runs on the thread that read it and may block (a lock wait, the
// database). So the pool size bounds the requests in progress, and an idle keep-alive connection
// costs no thread. With an AsyncHttpHandler, each request is a coroutine on the connection's
// strand: it must not block (it awaits instead), so one thread serves any number of requests.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <memory>
#include <string>

namespace account_service {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// Must not throw (an exception becomes a 500 and is logged).
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// Must not block; an exception becomes a 500 and is logged.
using AsyncHttpHandler = std::function<boost::asio::awaitable<HttpResponse>(HttpRequest)>;

class HttpServer {
 public:
  // Binds and listens at once (throws boost::system::system_error if it cannot); port 0 lets the
  // kernel pick one, see port().
  HttpServer(boost::asio::io_context& ioc, const std::string& address, unsigned short port);

  unsigned short port() const { return port_; }

  // Starts accepting connections, each request served by `handler` (once threads run the
  // io_context). Call once.
  void start(HttpHandler handler);
  // The same with a coroutine per request. Call once, instead of start().
  void start_async(AsyncHttpHandler handler);
  // Stops accepting; connections already open are served until the io_context stops. Any thread.
  void stop();

 private:
  void accept();
  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;  // on its own strand: accept() and stop() never overlap
  boost::asio::steady_timer retry_;          // same strand: paces accepting again after an error
  std::shared_ptr<const HttpHandler> handler_;
  std::shared_ptr<const AsyncHttpHandler> async_handler_;
  unsigned short port_ = 0;
};

// A JSON response with `status`.
HttpResponse json_response(const HttpRequest& request, boost::beast::http::status status, std::string body);

}  // namespace account_service
