#include "http_client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace account_service {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// Beast's tcp_stream deadlines apply to asynchronous operations, hence the private io_context.
HttpReply http_exchange(int port, http::verb verb, const std::string& target, const std::string& body,
                        std::chrono::seconds timeout) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  http::request<http::string_body> request(verb, target, 11);
  request.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  request.set(http::field::content_type, "application/json");
  request.keep_alive(false);
  request.body() = body;
  request.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  HttpReply reply;
  stream.expires_after(timeout);
  const asio::ip::tcp::endpoint endpoint(asio::ip::address_v4::loopback(), static_cast<unsigned short>(port));
  stream.async_connect(endpoint, [&](beast::error_code connected) {
    if (connected) return void(reply.error = "connect: " + connected.message());
    http::async_write(stream, request, [&](beast::error_code written, std::size_t) {
      if (written) return void(reply.error = "write: " + written.message());
      http::async_read(stream, buffer, response, [&](beast::error_code read, std::size_t) {
        if (read) return void(reply.error = "read: " + read.message());
        reply.status = response.result_int();
        reply.body = response.body();
      });
    });
  });
  ioc.run();
  return reply;
}

}  // namespace account_service
