#include "engine/loader/tensor_set.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <fstream>
#include <random>
#include <string>

#include "engine/loader/load_error.h"
#include "engine/synthetic/random_tensor_set.h"

namespace sluice::loader::unit_engine_loader_test_tensor_set {
namespace {

using backends::DType;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const LoadError& e) {
    return e.what();
  }
  return "";
}

// A folder with one model.safetensors: "w" F32 [2, 3] = 0..5, "n" BF16 [2] = 1, 2.
struct Folder {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("sluice-tensor-set-" + std::to_string(std::random_device{}()));
  Folder() {
    std::filesystem::create_directories(dir);
    const std::string header =
        R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"n":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]}})";
    std::string bytes(8, '\0');
    const uint64_t len = header.size();
    std::memcpy(bytes.data(), &len, 8);
    bytes += header;
    for (int i = 0; i < 6; ++i) {
      const float v = static_cast<float>(i);
      bytes.append(reinterpret_cast<const char*>(&v), 4);
    }
    const uint16_t one = 0x3F80, two = 0x4000;
    bytes.append(reinterpret_cast<const char*>(&one), 2);
    bytes.append(reinterpret_cast<const char*>(&two), 2);
    std::ofstream(dir / "model.safetensors", std::ios::binary) << bytes;
  }
  ~Folder() { std::filesystem::remove_all(dir); }
};

}  // namespace

TEST_CASE("tensor set: a folder's tensors by their stored names, checked and widened") {
  Folder folder;
  auto set = open_tensor_set(folder.dir);
  CHECK(set->names() == std::vector<std::string>{"n", "w"});
  CHECK(set->require("w", {2, 3}).dtype == DType::F32);
  CHECK(set->require_f32("n", {2}) == std::vector<float>{1.0f, 2.0f});
  CHECK(set->require_f32("w", {2, 3})[5] == 5.0f);
  const std::string missing = error_of([&] { set->require("talker.codec_head.weight", {3, 2}); });
  CHECK(missing.find(folder.dir.string()) != std::string::npos);  // missing: the folder is named
  CHECK(missing.find("'talker.codec_head.weight' is missing") != std::string::npos);
  const std::string shape = error_of([&] { set->require("w", {3, 2}); });
  CHECK(shape.find("model.safetensors") != std::string::npos);
  CHECK(shape.find("'w' has shape [2, 3] where [3, 2] is expected") != std::string::npos);
}

TEST_CASE("tensor set: random tensors are made on request, the same for the same seed, name and shape") {
  auto a = make_random_tensor_set("tts", DType::BF16, 7);
  auto b = make_random_tensor_set("tts", DType::BF16, 7);
  const WeightView wa = a->require("m", {64, 32});
  const WeightView wb = b->require("m", {64, 32});
  REQUIRE(wa.data.size() == 64 * 32 * 2);
  CHECK(std::memcmp(wa.data.data(), wb.data.data(), wa.data.size()) == 0);
  CHECK(a->require("other", {64, 32}).data.size() == wa.data.size());
  CHECK(std::memcmp(a->require("other", {64, 32}).data.data(), wa.data.data(), wa.data.size()) != 0);
  for (float v : a->require_f32("norm", {100})) CHECK((v >= 1.0f && v < 2.0f));
  float largest = 0;
  for (float v : a->require_f32("m", {64, 32})) largest = std::max(largest, std::abs(v));
  CHECK(largest < 0.5f);  // about 1/sqrt(32)
  CHECK(a->names() == std::vector<std::string>{"m", "norm", "other"});
  CHECK(error_of([&] { a->require("m", {32, 64}); }).find("'m' has shape") != std::string::npos);
}

}  // namespace sluice::loader
