#include "engine/loader/safetensors_file.h"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/loader/load_error.h"
#include "tests/unit/engine/loader/gguf_builder.h"

namespace sluice::loader::unit_engine_loader_test_safetensors_file {
namespace {

using backends::DType;
using testing::Bytes;
using testing::TempFile;

// "u64 header length + header + data", the header given verbatim.
Bytes safetensors_bytes(const std::string& header, size_t data_bytes, uint64_t declared_len = ~0ull) {
  Bytes out(8 + header.size() + data_bytes);
  const uint64_t len = declared_len == ~0ull ? header.size() : declared_len;
  std::memcpy(out.data(), &len, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = std::byte(i & 0xFF);
  return out;
}

void write_file(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string error_of(const std::filesystem::path& path) {
  try {
    SafetensorsFile::open(path);
  } catch (const LoadError& e) {
    return e.what();
  }
  return "";
}

const std::string kValidHeader =
    R"({"__metadata__":{"format":"pt"},)"
    R"("b":{"dtype":"F16","shape":[3],"data_offsets":[24,30]},)"
    R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("c":{"dtype":"BF16","shape":[],"data_offsets":[30,32]}})";

TEST_CASE("safetensors: a valid file lists its tensors in offset order with their bytes") {
  TempFile file(safetensors_bytes(kValidHeader, 32), "model.safetensors");
  const SafetensorsFile st = SafetensorsFile::open(file.path());
  REQUIRE(st.tensors().size() == 3);
  CHECK(st.tensors()[0].name == "a");
  CHECK(st.tensors()[1].name == "b");
  CHECK(st.metadata().at("format") == "pt");
  const SafetensorsTensorInfo* a = st.find_tensor("a");
  REQUIRE(a != nullptr);
  CHECK(a->dtype == DType::F32);
  CHECK(a->shape == std::vector<int64_t>{2, 3});
  CHECK(st.tensor_data(*a).size() == 24);
  CHECK(st.tensor_data(*a)[0] == std::byte{0});
  const SafetensorsTensorInfo* b = st.find_tensor("b");
  REQUIRE(b != nullptr);
  CHECK(b->dtype == DType::F16);
  CHECK(st.tensor_data(*b)[0] == std::byte{24});
  const SafetensorsTensorInfo* c = st.find_tensor("c");
  REQUIRE(c != nullptr);
  CHECK(c->dtype == DType::BF16);
  CHECK(c->shape.empty());
  CHECK(st.find_tensor("d") == nullptr);
}

TEST_CASE("safetensors: truncated files are rejected with the file named") {
  TempFile file(Bytes(5), "model.safetensors");
  CHECK(error_of(file.path()).find("model.safetensors") != std::string::npos);
  CHECK(error_of(file.path()).find("8-byte") != std::string::npos);

  file.rewrite(safetensors_bytes(kValidHeader, 32, kValidHeader.size() + 100));
  CHECK(error_of(file.path()).find("runs past the end") != std::string::npos);

  file.rewrite(safetensors_bytes(kValidHeader, 32, uint64_t{1} << 62));
  CHECK(error_of(file.path()).find("runs past the end") != std::string::npos);

  // Data section shorter than the offsets claim.
  file.rewrite(safetensors_bytes(kValidHeader, 31));
  CHECK(error_of(file.path()).find("tensor 'c'") != std::string::npos);
}

TEST_CASE("safetensors: corrupt and hostile headers") {
  struct Case {
    std::string header;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {std::string(100000, '[') + std::string(100000, ']'), "nested too deeply"},
      {"{\"a\": \"x\"}", "tensor 'a': header entry is not an object"},
      {R"({"a":{"shape":[1],"data_offsets":[0,4]}})", "tensor 'a': missing or non-string 'dtype'"},
      {R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", "'shape'"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "'data_offsets'"},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "non-negative integer"},
      {R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "non-negative integer"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "non-integer or negative"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "do not hold the 4 bytes"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", "do not hold"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", "overflows"},
      {R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4]}})", "overflows"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       "overlap"},
      {R"({"a":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})", "runs past the data section"},
      {R"({"__metadata__":[1],"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "'__metadata__'"},
      {R"({"weird":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
       "tensor 'weird': dtype I64 is not supported"},
      {R"({"f8":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}})", "tensor 'f8': dtype F8_E4M3"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.header.substr(0, 80));
    TempFile file(safetensors_bytes(c.header, 16), "bad.safetensors");
    const std::string error = error_of(file.path());
    CHECK(error.find("bad.safetensors") != std::string::npos);
    CHECK(error.find(c.expected) != std::string::npos);
  }
}

TEST_CASE("safetensors: JSON depth guard") {
  CHECK(json_depth_within(R"({"a":[1,{"b":"[[[["}]})", 3));
  CHECK_FALSE(json_depth_within(R"({"a":[1,{"b":[]}]})", 3));
  CHECK_FALSE(json_depth_within("{]]", 8));
  CHECK_FALSE(json_depth_within(R"({"a":"\")", 8));
  CHECK(json_depth_within(R"({"a\"[":1})", 1));
}

// Two shards plus an index, as save_pretrained writes them.
struct ShardedDir {
  TempFile first{safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8),
                 "model-00001-of-00002.safetensors"};
  std::filesystem::path dir() const { return first.dir(); }
  ShardedDir() {
    write_file(dir() / "model-00002-of-00002.safetensors",
               safetensors_bytes(R"({"y":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}})", 8));
  }
  void index(const std::string& weight_map) const {
    write_text(dir() / "model.safetensors.index.json",
               R"({"metadata":{"total_size":16},"weight_map":)" + weight_map + "}");
  }
};

std::string set_error(const std::filesystem::path& dir) {
  try {
    SafetensorsSet::open(dir);
  } catch (const LoadError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("safetensors: shards listed by model.safetensors.index.json") {
  ShardedDir sharded;
  sharded.index(R"({"x":"model-00001-of-00002.safetensors","y":"model-00002-of-00002.safetensors"})");
  const SafetensorsSet set = SafetensorsSet::open(sharded.dir());
  CHECK(set.files().size() == 2);
  REQUIRE(set.tensors().size() == 2);
  CHECK(set.tensors().at("y").info->dtype == DType::BF16);
  CHECK(set.tensors().at("y").file->path().filename() == "model-00002-of-00002.safetensors");

  SUBCASE("a tensor the index lists is missing from its shard") {
    sharded.index(R"({"x":"model-00001-of-00002.safetensors","z":"model-00002-of-00002.safetensors"})");
    CHECK(set_error(sharded.dir()).find("tensor 'z'") != std::string::npos);
  }
  SUBCASE("a shard outside the folder") {
    sharded.index(R"({"x":"../model-00001-of-00002.safetensors"})");
    CHECK(set_error(sharded.dir()).find("not a file name inside the model folder") != std::string::npos);
  }
  SUBCASE("a shard that does not exist") {
    sharded.index(R"({"x":"model-00009-of-00009.safetensors"})");
    CHECK(set_error(sharded.dir()).find("model-00009-of-00009.safetensors") != std::string::npos);
  }
  SUBCASE("a tensor in two shards") {
    write_file(sharded.dir() / "model-00002-of-00002.safetensors",
               safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
    sharded.index(R"({"x":"model-00001-of-00002.safetensors","y":"model-00002-of-00002.safetensors"})");
    CHECK(set_error(sharded.dir()).find("also in another shard") != std::string::npos);
  }
  SUBCASE("a broken index") {
    write_text(sharded.dir() / "model.safetensors.index.json", R"({"weight_map": 3})");
    CHECK(set_error(sharded.dir()).find("weight_map") != std::string::npos);
  }
  SUBCASE("without an index every *.safetensors file is read") {
    std::filesystem::remove(sharded.dir() / "model.safetensors.index.json");
    CHECK(SafetensorsSet::open(sharded.dir()).tensors().size() == 2);
  }
}

TEST_CASE("safetensors: a folder without weights") {
  TempFile file(Bytes{}, "config.json");
  CHECK(set_error(file.dir()).find("no model.safetensors") != std::string::npos);
}

}  // namespace
}  // namespace sluice::loader
