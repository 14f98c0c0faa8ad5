#include "http_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <iostream>
#include <optional>

namespace account_service {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// A slow or silent client is dropped after this long, so it cannot keep a connection (and a
// socket) forever; it never holds a thread meanwhile.
constexpr auto kIoTimeout = std::chrono::seconds(30);

// One client connection: read a request, run the handler, write the response, repeat while the
// client keeps the connection alive. Its operations run on its own strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<const HttpHandler> handler,
             std::shared_ptr<const AsyncHttpHandler> async_handler)
      : stream_(std::move(socket)), handler_(std::move(handler)), async_handler_(std::move(async_handler)) {}

  void start() {
    asio::dispatch(stream_.get_executor(), beast::bind_front_handler(&Connection::read, shared_from_this()));
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(64 * 1024);  // a login is a few bytes; refuse anything large
    stream_.expires_after(kIoTimeout);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Connection::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) return close();
    if (ec) return;  // timeout, reset, malformed request: drop the connection
    HttpRequest request = parser_->release();
    stream_.expires_never();  // the handler may wait for a lock; that is not the client's fault
    if (async_handler_) {
      // The coroutine runs on this connection's strand; its completion too.
      const bool keep_alive = request.keep_alive();
      const unsigned version = request.version();
      asio::co_spawn(stream_.get_executor(), (*async_handler_)(std::move(request)),
                     [self = shared_from_this(), keep_alive, version](std::exception_ptr error, HttpResponse response) {
                       if (error) {
                         try {
                           std::rethrow_exception(error);
                         } catch (const std::exception& e) {
                           std::cerr << "account_service: handler failed: " << e.what() << std::endl;
                         }
                         HttpRequest stub;
                         stub.version(version);
                         response =
                             json_response(stub, http::status::internal_server_error, R"({"error":"internal error"})");
                       }
                       self->respond(std::move(response), keep_alive);
                     });
      return;
    }
    HttpResponse response;
    try {
      response = (*handler_)(request);
    } catch (const std::exception& e) {
      std::cerr << "account_service: handler failed: " << e.what() << std::endl;
      response = json_response(request, http::status::internal_server_error, R"({"error":"internal error"})");
    }
    respond(std::move(response), request.keep_alive());
  }

  void respond(HttpResponse response, bool keep_alive) {
    response_ = std::move(response);
    response_.keep_alive(keep_alive);
    response_.prepare_payload();
    stream_.expires_after(kIoTimeout);
    http::async_write(stream_, response_, beast::bind_front_handler(&Connection::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, std::size_t) {
    if (ec) return;
    if (!response_.keep_alive()) return close();
    read();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpResponse response_;
  std::shared_ptr<const HttpHandler> handler_;
  std::shared_ptr<const AsyncHttpHandler> async_handler_;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& ioc, const std::string& address, unsigned short port)
    : ioc_(ioc), acceptor_(asio::make_strand(ioc)), retry_(acceptor_.get_executor()) {
  const tcp::endpoint endpoint(asio::ip::make_address(address), port);
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  port_ = acceptor_.local_endpoint().port();
}

void HttpServer::start(HttpHandler handler) {
  handler_ = std::make_shared<const HttpHandler>(std::move(handler));
  asio::dispatch(acceptor_.get_executor(), [this] { accept(); });
}

void HttpServer::start_async(AsyncHttpHandler handler) {
  async_handler_ = std::make_shared<const AsyncHttpHandler>(std::move(handler));
  asio::dispatch(acceptor_.get_executor(), [this] { accept(); });
}

void HttpServer::stop() {
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
  });
}

void HttpServer::accept() {
  // Each connection gets its own strand: its handlers never run on two threads at once.
  acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;  // stopped
    if (ec) {
      // Out of file descriptors, say: try again shortly instead of spinning on the error.
      std::cerr << "account_service: accept failed: " << ec.message() << std::endl;
      retry_.expires_after(std::chrono::milliseconds(100));
      retry_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && acceptor_.is_open()) accept();
      });
      return;
    }
    std::make_shared<Connection>(std::move(socket), handler_, async_handler_)->start();
    accept();
  });
}

HttpResponse json_response(const HttpRequest& request, http::status status, std::string body) {
  HttpResponse response(status, request.version());
  response.set(http::field::server, "dlock-account-service");
  response.set(http::field::content_type, "application/json");
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

}  // namespace account_service
