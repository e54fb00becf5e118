// multipart/form-data: the boundary from the Content-Type, the parts as clients
// send them, and the malformed or hostile bodies that must end in an error, not a
// crash or a part that is not there.
#include "server/http/multipart.h"

#include <doctest/doctest.h>

#include <random>
#include <string>

namespace unit_server_http_test_multipart {

using namespace sluice::server;

namespace {

std::vector<MultipartPart> ok(std::string_view body, std::string_view boundary = "XyZ") {
  auto parsed = parse_multipart(body, boundary);
  if (auto* e = std::get_if<std::string>(&parsed)) FAIL_CHECK("unexpected error: ", *e);
  REQUIRE(std::holds_alternative<std::vector<MultipartPart>>(parsed));
  return std::get<std::vector<MultipartPart>>(parsed);
}

std::string error(std::string_view body, std::string_view boundary = "XyZ", MultipartLimits limits = {}) {
  auto parsed = parse_multipart(body, boundary, limits);
  REQUIRE(std::holds_alternative<std::string>(parsed));
  return std::get<std::string>(parsed);
}

}  // namespace

TEST_CASE("multipart boundary: from the Content-Type, plain or quoted, checked") {
  CHECK(multipart_boundary("multipart/form-data; boundary=XyZ") == "XyZ");
  CHECK(multipart_boundary("Multipart/Form-Data;boundary=\"a b:c\"") == "a b:c");
  CHECK(multipart_boundary("multipart/form-data; charset=utf-8; BOUNDARY=----WebKit12") == "----WebKit12");
  CHECK_FALSE(multipart_boundary("application/json"));
  CHECK_FALSE(multipart_boundary("multipart/form-data"));
  CHECK_FALSE(multipart_boundary("multipart/form-data; boundary="));
  CHECK_FALSE(multipart_boundary("multipart/form-data; boundary=\"unterminated"));
  CHECK_FALSE(multipart_boundary("multipart/form-data; boundary=" + std::string(71, 'a')));
  CHECK_FALSE(multipart_boundary("multipart/form-data; boundary=a\x01z"));
  CHECK_FALSE(multipart_boundary("multipart/mixed; boundary=XyZ"));
}

TEST_CASE("multipart: fields and a file as curl -F sends them, bytes kept as they are") {
  const std::string file("RIFF\0\r\n--Xy\r\nbinary", 19);  // NUL, CRLF and a near-boundary inside the data
  const std::string body = "--XyZ\r\n"
                           "Content-Disposition: form-data; name=\"name\"\r\n\r\n"
                           "my_voice\r\n"
                           "--XyZ\r\n"
                           "Content-Disposition: form-data; name=\"audio_sample\"; filename=\"a \\\"q\\\".wav\"\r\n"
                           "Content-Type: audio/wav\r\n\r\n" +
                           file +
                           "\r\n--XyZ\r\n"
                           "content-disposition: form-data; name=empty\r\n\r\n"
                           "\r\n--XyZ--\r\n";
  const auto parts = ok(body);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].name == "name");
  CHECK(parts[0].data == "my_voice");
  CHECK_FALSE(parts[0].filename);
  CHECK(parts[0].content_type.empty());
  CHECK(parts[1].name == "audio_sample");
  CHECK(parts[1].filename == "a \"q\".wav");
  CHECK(parts[1].content_type == "audio/wav");
  CHECK(parts[1].data == file);
  CHECK(parts[2].name == "empty");
  CHECK(parts[2].data.empty());
}

TEST_CASE("multipart: a preamble before the first boundary and an epilogue after the last are skipped") {
  const auto parts = ok("ignored preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--XyZ--"
                        "\r\nepilogue");
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].data == "1");
  CHECK(ok("--XyZ--\r\n").empty());
}

TEST_CASE("multipart: malformed bodies are refused with a reason") {
  const std::string part = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1";
  CHECK(error(part).find("closing boundary") != std::string::npos);
  CHECK(error(part + "\r\n--XyZ").find("line break") != std::string::npos);  // neither -- nor CRLF
  CHECK(error("no boundary at all").find("no multipart boundary") != std::string::npos);
  CHECK(error("--XyZ\r\nContent-Type: text/plain\r\n\r\n1\r\n--XyZ--").find("Content-Disposition") !=
        std::string::npos);
  CHECK(error("--XyZ\r\nContent-Disposition: form-data; filename=\"f\"\r\n\r\n1\r\n--XyZ--").find("no name") !=
        std::string::npos);
  CHECK(error("--XyZ\r\nContent-Disposition: form-data; name=\"\"\r\n\r\n1\r\n--XyZ--").find("no name") !=
        std::string::npos);
  CHECK(error("--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\n1\r\n--XyZ--").find("form-data") !=
        std::string::npos);
  CHECK(error("--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\n1\r\n--XyZ--").find("malformed") !=
        std::string::npos);
  CHECK(error("--XyZ\r\nno colon here\r\n\r\n1\r\n--XyZ--").find("malformed header") != std::string::npos);
  CHECK(error("--XyZ\r\n\r\n1\r\n--XyZ--").find("Content-Disposition") != std::string::npos);  // no headers
  CHECK(error("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n").find("do not end") != std::string::npos);
  CHECK(error("--XyZ--", "").find("empty") != std::string::npos);
}

TEST_CASE("multipart: the part count and header size are bounded") {
  std::string body;
  for (int i = 0; i < 5; ++i) body += "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n";
  body += "--XyZ--";
  CHECK(ok(body).size() == 5);
  CHECK(error(body, "XyZ", {.max_parts = 4}).find("more than 4 parts") != std::string::npos);
  const std::string huge = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: " + std::string(9000, 'p') +
                           "\r\n\r\n1\r\n--XyZ--";
  CHECK(error(huge).find("exceed 8192 bytes") != std::string::npos);
}

TEST_CASE("multipart: random bytes and every truncation of a good body end in parts or an error, never a crash") {
  const std::string good = "--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nv\r\n"
                           "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\r\n"
                           "Content-Type: audio/wav\r\n\r\nabc\r\n--XyZ--\r\n";
  for (size_t n = 0; n <= good.size(); ++n) {
    auto parsed = parse_multipart(std::string_view(good).substr(0, n), "XyZ");
    if (auto* parts = std::get_if<std::vector<MultipartPart>>(&parsed)) {
      // Only a body that reached its closing delimiter parses.
      CHECK(n >= good.find("--XyZ--") + 7);
      CHECK(parts->size() == 2);
    }
  }
  std::mt19937 rng(7);
  const std::string alphabet = "-XyZ\r\n:;=\" abname";
  for (int round = 0; round < 2000; ++round) {
    std::string body;
    const size_t size = rng() % 200;
    for (size_t i = 0; i < size; ++i) body.push_back(alphabet[rng() % alphabet.size()]);
    auto parsed = parse_multipart(body, "XyZ");
    if (auto* parts = std::get_if<std::vector<MultipartPart>>(&parsed)) {
      for (const MultipartPart& p : *parts) {
        CHECK_FALSE(p.name.empty());
        CHECK(p.data.data() >= body.data());
        CHECK(p.data.data() + p.data.size() <= body.data() + body.size());
      }
    }
  }
}
}  // namespace unit_server_http_test_multipart
