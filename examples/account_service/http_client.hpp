// A client for the account service's tests: one HTTP/1.1 request to a service on 127.0.0.1, on a
// fresh connection.
#pragma once

#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <string>

namespace account_service {

struct HttpReply {
  int status = 0;  // 0 when the exchange failed
  std::string body;
  std::string error;  // what failed, when it did
};

// One request with one deadline for connect, write and read; never throws.
HttpReply http_exchange(int port, boost::beast::http::verb verb, const std::string& target, const std::string& body,
                        std::chrono::seconds timeout = std::chrono::seconds(60));

}  // namespace account_service
