#include "engine/loader/gguf_file.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/engine/loader/gguf_builder.h"

namespace sluice::loader::unit_engine_loader_test_gguf_file {
namespace {

using backends::DType;
using testing::ByteWriter;
using testing::Bytes;
using testing::GgufBuilder;
using testing::TempFile;

constexpr uint64_t kHuge = uint64_t{1} << 62;

// Every kind of value and three tensors; the shared base of the valid-file tests.
GgufBuilder small_builder() {
  GgufBuilder builder;
  builder.string("general.architecture", "llama")
      .scalar("t.u8", GgufType::UInt8, uint8_t{200})
      .scalar("t.i8", GgufType::Int8, int8_t{-100})
      .scalar("t.u16", GgufType::UInt16, uint16_t{60000})
      .scalar("t.i16", GgufType::Int16, int16_t{-30000})
      .u32("t.u32", 4000000000u)
      .scalar("t.i32", GgufType::Int32, int32_t{-5})
      .scalar("t.u64", GgufType::UInt64, uint64_t{1} << 63)
      .scalar("t.i64", GgufType::Int64, int64_t{-(int64_t{1} << 40)})
      .f32("t.f32", 0.5f)
      .scalar("t.f64", GgufType::Float64, 2.25)
      .boolean("t.bool", true)
      .string_array("t.strings", {"a", "", "héllo"})
      .array("t.floats", GgufType::Float32, std::vector<float>{1.5f, -2.0f})
      .array("t.ints", GgufType::Int32, std::vector<int32_t>{3, -4, 5});
  // An array of two arrays of uint8.
  ByteWriter nested;
  nested.u32(static_cast<uint32_t>(GgufType::Array)).u64(2);
  nested.u32(static_cast<uint32_t>(GgufType::UInt8)).u64(1).put(uint8_t{7});
  nested.u32(static_cast<uint32_t>(GgufType::UInt8)).u64(0);
  builder.kv("t.nested", static_cast<uint32_t>(GgufType::Array), nested.bytes());
  builder.tensor("a", {4, 3}, DType::F32)
      .tensor("b", {64}, DType::Q4_0)
      .tensor("c", {5}, DType::F16);
  return builder;
}

// Opens bytes written to a temp file and returns the LoadError message ("" if none).
std::string open_error(const Bytes& bytes, std::string_view name = "bad.gguf") {
  TempFile file(bytes, name);
  try {
    GgufFile::open(file.path());
  } catch (const LoadError& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// A tensor-free header plus one raw kv record.
Bytes with_kv_record(const Bytes& record) { return GgufBuilder().raw_kv(record).build(); }

}  // namespace

TEST_CASE("gguf: a valid file exposes every value type and its tensors") {
  const Bytes bytes = small_builder().build();
  TempFile temp(bytes, "small.gguf");
  const GgufFile file = GgufFile::open(temp.path());

  CHECK(file.version() == 3);
  CHECK(file.alignment() == 32);
  CHECK(file.file_size() == bytes.size());
  CHECK(file.data_offset() % 32 == 0);
  CHECK(file.path() == temp.path());
  REQUIRE(file.keys().size() == 16);
  CHECK(file.keys()[0] == "general.architecture");
  CHECK(file.keys()[15] == "t.nested");

  CHECK(file.get_string("general.architecture") == "llama");
  CHECK(file.get_uint("t.u8") == 200u);
  CHECK(file.get_int("t.i8") == -100);
  CHECK(file.get_uint("t.u16") == 60000u);
  CHECK(file.get_int("t.i16") == -30000);
  CHECK(file.get_uint("t.u32") == 4000000000u);
  CHECK(file.get_int("t.u32") == 4000000000);
  CHECK(file.get_int("t.i32") == -5);
  CHECK(file.get_uint("t.u64") == uint64_t{1} << 63);
  CHECK(file.get_int("t.i64") == -(int64_t{1} << 40));
  CHECK(file.get_float("t.f32") == 0.5);
  CHECK(file.get_float("t.f64") == 2.25);
  CHECK(file.get_bool("t.bool") == true);
  CHECK_FALSE(file.get_string("absent").has_value());
  CHECK_FALSE(file.get_uint("absent").has_value());
  CHECK(file.find("absent") == nullptr);

  const auto strings = file.get_string_array("t.strings");
  REQUIRE(strings.has_value());
  REQUIRE(strings->size() == 3);
  CHECK((*strings)[0] == "a");
  CHECK((*strings)[1].empty());
  CHECK((*strings)[2] == "héllo");
  CHECK(file.get_float_array("t.floats") == std::vector<float>{1.5f, -2.0f});
  CHECK(file.get_int_array("t.ints") == std::vector<int64_t>{3, -4, 5});
  CHECK(file.find("t.ints")->raw_bytes().size() == 12);

  const GgufValue* nested = file.find("t.nested");
  REQUIRE(nested != nullptr);
  CHECK(nested->type_name() == "array[array]");
  REQUIRE(nested->arrays().size() == 2);
  CHECK(nested->arrays()[0].to_int_vector() == std::vector<int64_t>{7});
  CHECK(nested->arrays()[1].size() == 0);

  REQUIRE(file.tensors().size() == 3);
  const GgufTensorInfo* a = file.find_tensor("a");
  REQUIRE(a != nullptr);
  CHECK(a->shape == std::vector<uint64_t>{4, 3});
  CHECK(a->dtype == DType::F32);
  CHECK(a->num_elements == 12);
  CHECK(a->num_bytes == 48);
  CHECK(a->offset == 0);
  const GgufTensorInfo* b = file.find_tensor("b");
  REQUIRE(b != nullptr);
  CHECK(b->num_bytes == 36);
  CHECK(b->offset == 64);
  CHECK(file.find_tensor("nope") == nullptr);
  const auto data = file.tensor_data(*b);
  REQUIRE(data.size() == 36);
  CHECK(std::memcmp(data.data(), bytes.data() + file.data_offset() + 64, 36) == 0);
  const GgufTensorInfo* c = file.find_tensor("c");
  REQUIRE(c != nullptr);
  CHECK(file.data_offset() + c->offset + c->num_bytes == bytes.size());
}

TEST_CASE("gguf: views stay valid after the file object moves") {
  TempFile temp(small_builder().build());
  GgufFile first = GgufFile::open(temp.path());
  const std::string_view name = *first.get_string("general.architecture");
  GgufFile second = std::move(first);
  CHECK(name == "llama");
  CHECK(second.get_string_array("t.strings")->size() == 3);
  CHECK(second.tensor_data(*second.find_tensor("a")).size() == 48);
}

TEST_CASE("gguf: version 2 and a custom alignment are accepted") {
  GgufBuilder builder;
  builder.version(2).u32("general.alignment", 64).layout_alignment(64);
  builder.tensor("x", {8}, DType::F32).tensor("y", {3}, DType::F32);
  TempFile temp(builder.build());
  const GgufFile file = GgufFile::open(temp.path());
  CHECK(file.version() == 2);
  CHECK(file.alignment() == 64);
  CHECK(file.data_offset() % 64 == 0);
  CHECK(file.find_tensor("y")->offset == 64);
}

TEST_CASE("gguf: display strings for inspect") {
  TempFile temp(small_builder().build());
  const GgufFile file = GgufFile::open(temp.path());
  CHECK(file.find("t.f32")->to_display_string() == "0.5");
  CHECK(file.find("t.i8")->to_display_string() == "-100");
  CHECK(file.find("t.bool")->to_display_string() == "true");
  CHECK(file.find("general.architecture")->to_display_string() == "\"llama\"");
  CHECK(file.find("t.ints")->to_display_string(2) == "[3, -4, ... (3 items)]");
  CHECK(file.find("t.nested")->to_display_string() == "[[7], []]");
}

TEST_CASE("gguf: bad magic and unsupported versions") {
  std::string error = open_error(GgufBuilder().magic("GGML").build(), "magic.gguf");
  CHECK(contains(error, "magic.gguf: offset 0: not a GGUF file"));
  CHECK(contains(error, "GGML"));

  error = open_error(GgufBuilder().version(1).build());
  CHECK(contains(error, "bad.gguf: offset 4: GGUF version 1 is not supported"));
  error = open_error(GgufBuilder().version(99).build());
  CHECK(contains(error, "GGUF version 99 is not supported (supported: 2, 3)"));
  error = open_error(GgufBuilder().version(0x03000000).build());
  CHECK(contains(error, "big-endian"));
}

TEST_CASE("gguf: every truncated prefix of a valid file throws LoadError") {
  const Bytes bytes = small_builder().build();
  TempFile temp(bytes, "prefix.gguf");
  for (size_t size = 0; size < bytes.size(); ++size) {
    temp.rewrite(bytes.data(), size);
    CAPTURE(size);
    try {
      GgufFile::open(temp.path());
      FAIL("a truncated file opened");
    } catch (const LoadError& error) {
      const std::string message = error.what();
      CHECK(contains(message, "prefix.gguf: "));
      CHECK(contains(message, "offset "));
    }
  }
  temp.rewrite(bytes);
  CHECK_NOTHROW(GgufFile::open(temp.path()));
}

TEST_CASE("gguf: hostile lengths and counts are rejected before allocating") {
  // Key length 2^62.
  std::string error = open_error(with_kv_record(ByteWriter().u64(kHuge).u64(0).u64(0).bytes()));
  CHECK(contains(error, "offset 24: metadata key length 4611686018427387904 runs past"));

  // A string value of length 2^62.
  error = open_error(with_kv_record(
      ByteWriter().str("k").u32(static_cast<uint32_t>(GgufType::String)).u64(kHuge).bytes()));
  CHECK(contains(error, "key 'k': string length"));

  for (const GgufType element : {GgufType::UInt32, GgufType::String, GgufType::Array}) {
    CAPTURE(gguf_type_name(element));
    const Bytes value = ByteWriter().u32(static_cast<uint32_t>(element)).u64(kHuge).bytes();
    error = open_error(GgufBuilder().kv("k", static_cast<uint32_t>(GgufType::Array), value).build());
    CHECK(contains(error, "key 'k': array[" + std::string(gguf_type_name(element)) + "] count"));
    CHECK(contains(error, "cannot fit"));
  }

  error = open_error(GgufBuilder().kv_count(kHuge).build());
  CHECK(contains(error, "offset 8: metadata count 4611686018427387904 cannot fit"));
  error = open_error(GgufBuilder().tensor_count(kHuge).build());
  CHECK(contains(error, "offset 8: tensor count"));
  error = open_error(GgufBuilder().kv_count(1).tensor_count(1).build());
  CHECK(contains(error, "cannot fit"));
}

TEST_CASE("gguf: malformed values") {
  std::string error = open_error(GgufBuilder().kv("k", 13, ByteWriter().u32(0).bytes()).build());
  CHECK(contains(error, "key 'k': unknown value type 13"));

  const Bytes bad_element = ByteWriter().u32(77).u64(1).bytes();
  error = open_error(GgufBuilder().kv("k", static_cast<uint32_t>(GgufType::Array), bad_element).build());
  CHECK(contains(error, "unknown array element type 77"));

  error = open_error(GgufBuilder().scalar("flag", GgufType::Bool, uint8_t{7}).build());
  CHECK(contains(error, "key 'flag': invalid bool value 7"));

  // Arrays nested five deep exceed the limit of four; four deep is fine.
  auto nest = [](int depth) {
    ByteWriter value;
    for (int d = 1; d < depth; ++d) value.u32(static_cast<uint32_t>(GgufType::Array)).u64(1);
    value.u32(static_cast<uint32_t>(GgufType::UInt8)).u64(0);
    return GgufBuilder().kv("deep", static_cast<uint32_t>(GgufType::Array), value.bytes()).build();
  };
  CHECK(open_error(nest(4)).empty());
  CHECK(contains(open_error(nest(5)), "arrays nested deeper than 4"));

  error = open_error(GgufBuilder().u32("dup", 1).string("dup", "x").build());
  CHECK(contains(error, "duplicate key 'dup'"));
}

TEST_CASE("gguf: malformed tensor infos") {
  auto tensor_error = [](GgufBuilder builder) { return open_error(builder.build(), "t.gguf"); };

  std::string error = tensor_error(GgufBuilder().tensor("w", {1, 1, 1, 1, 1}, DType::F32));
  CHECK(contains(error, "t.gguf: offset "));
  CHECK(contains(error, "tensor 'w': n_dims 5 exceeds the maximum of 4"));

  for (const uint32_t id : {4u, 31u, 99u}) {
    error = tensor_error(GgufBuilder().tensor_with_type_id("w", {32}, id));
    CHECK(contains(error, "tensor 'w': unknown ggml type " + std::to_string(id)));
  }

  error = tensor_error(GgufBuilder().tensor("w", {33, 2}, DType::Q4_0));
  CHECK(contains(error, "innermost dimension 33 is not a multiple of the Q4_0 block size 32"));

  error = tensor_error(GgufBuilder().tensor("w", {4}, DType::F32, {}, 16));
  CHECK(contains(error, "tensor 'w': data offset 16 is not a multiple of the alignment 32"));

  // 2^32 * 2^32 wraps to exactly zero in 64 bits.
  error = tensor_error(GgufBuilder().tensor("w", {1ull << 32, 1ull << 32}, DType::F32, {}, 0));
  CHECK(contains(error, "element count of shape [4294967296, 4294967296] overflows"));
  error = tensor_error(GgufBuilder().tensor("w", {1ull << 63}, DType::F32, {}, 0));
  CHECK(contains(error, "larger than INT64_MAX"));
  error = tensor_error(GgufBuilder().tensor("w", {1ull << 62}, DType::I64, {}, 0));
  CHECK(contains(error, "byte size of shape [4611686018427387904] of I64 overflows"));
  // An empty dimension makes an empty tensor, whatever the other dimensions say.
  CHECK(tensor_error(GgufBuilder().tensor("w", {1ull << 40, 0}, DType::F32, {}, 0)).empty());

  error = tensor_error(GgufBuilder().tensor("w", {4}, DType::F32).tensor("w", {4}, DType::F32));
  CHECK(contains(error, "duplicate tensor name 'w'"));
}

TEST_CASE("gguf: tensor data outside the file") {
  GgufBuilder builder;
  builder.tensor("blk.0.attn_q.weight", {8}, DType::F32, {}, 4096);
  const Bytes bytes = builder.build();
  const std::string error = open_error(bytes, "x.gguf");
  // The tensor info starts right after the 24-byte header.
  const std::string expected = "/x.gguf: offset 24: tensor 'blk.0.attn_q.weight' data [" +
                               std::to_string(bytes.size() + 4096) + ", " +
                               std::to_string(bytes.size() + 4096 + 32) +
                               ") runs past the end of the file (" +
                               std::to_string(bytes.size()) + " bytes)";
  CHECK(error.ends_with(expected));

  const std::string overflow =
      open_error(GgufBuilder().tensor("w", {8}, DType::F32, {}, ~uint64_t{31}).build());
  CHECK(contains(overflow, "overflows"));
}

TEST_CASE("gguf: alignment must be a power of two") {
  for (const uint32_t alignment : {0u, 48u}) {
    const std::string error = open_error(GgufBuilder().u32("general.alignment", alignment).build());
    CHECK(contains(error, "general.alignment " + std::to_string(alignment) + " is not a power of two"));
  }
  const std::string error = open_error(GgufBuilder().string("general.alignment", "32").build());
  CHECK(contains(error, "key 'general.alignment' has type string"));
}

TEST_CASE("gguf: getters of the wrong type name the key and both types") {
  TempFile temp(small_builder().build(), "typed.gguf");
  const GgufFile file = GgufFile::open(temp.path());
  auto message = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const LoadError& error) {
      return error.what();
    }
    return "";
  };
  std::string error = message([&] { file.get_string("t.u32"); });
  CHECK(contains(error, "typed.gguf: offset "));
  CHECK(contains(error, "key 't.u32' has type uint32"));
  CHECK(contains(error, "expected string"));
  CHECK(contains(message([&] { file.get_uint("t.i32"); }), "key 't.i32' has type int32 and value -5"));
  CHECK(contains(message([&] { file.get_int("t.u64"); }), "fits int64"));
  CHECK(contains(message([&] { file.get_float("t.u8"); }), "expected float32 or float64"));
  CHECK(contains(message([&] { file.get_bool("t.u8"); }), "expected bool"));
  CHECK(contains(message([&] { file.get_string_array("t.ints"); }),
                 "key 't.ints' has type array[int32]"));
  CHECK(contains(message([&] { file.get_int_array("t.strings"); }), "array[string]"));
  CHECK(contains(message([&] { file.get_float_array("t.ints"); }), "array[float32]"));
}

TEST_CASE("gguf: files that cannot be opened") {
  CHECK_THROWS_WITH_AS(GgufFile::open("/nonexistent/dir/m.gguf"),
                       doctest::Contains("/nonexistent/dir/m.gguf: cannot open"), LoadError);
  TempFile temp(Bytes{});
  CHECK_THROWS_WITH_AS(GgufFile::open(temp.dir()), doctest::Contains("not a regular file"),
                       LoadError);
  CHECK_THROWS_WITH_AS(GgufFile::open(temp.path()),
                       doctest::Contains("offset 0: unexpected end of file reading the magic"),
                       LoadError);
}

}  // namespace sluice::loader
