#pragma once
// A connected TCP pair on 127.0.0.1 for tests of the server's socket code: the
// server side is a beast::tcp_stream on a strand (as a session's is), the client side
// a plain blocking socket the test drives directly. Both on one io_context that the
// test runs itself; nothing leaves the machine.
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <string>

#include "server/http/http.h"

namespace sluice::server::testing {

struct LoopbackPair {
  asio::io_context ioc;
  asio::strand<asio::io_context::executor_type> strand = asio::make_strand(ioc);
  asio::ip::tcp::socket client{ioc};
  beast::tcp_stream server{strand};
  beast::flat_buffer buffer;  // the session's read buffer

  LoopbackPair() {
    asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
    client.connect(acceptor.local_endpoint());
    server.socket() = acceptor.accept(strand);  // the connection's strand, as in a session
  }

  void client_write(const std::string& bytes) { asio::write(client, asio::buffer(bytes)); }

  // Closes the client with a reset (SO_LINGER 0), as a client that vanished.
  void client_reset() {
    client.set_option(asio::socket_base::linger(true, 0));
    client.close();
  }

  // Blocks until `marker` has arrived on the client side, or the server closed;
  // returns everything read so far.
  std::string client_read_until(const std::string& marker) { return client_read(&marker); }
  // Blocks until the server closes the connection; returns everything it sent.
  std::string client_read_to_close() { return client_read(nullptr); }

 private:
  std::string client_read(const std::string* marker) {
    std::string got;
    char chunk[4096];
    while (marker == nullptr || got.find(*marker) == std::string::npos) {
      beast::error_code ec;
      const size_t n = client.read_some(asio::buffer(chunk), ec);
      got.append(chunk, n);
      if (ec) break;
    }
    return got;
  }
};

}  // namespace sluice::server::testing
