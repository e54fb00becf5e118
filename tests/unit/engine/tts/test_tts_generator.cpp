#include "engine/tts/model/tts_generator.h"

#include <doctest/doctest.h>

#include <map>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "tts_test_util.h"
#include "engine/synthetic/random_tensor_set.h"

namespace sluice::engine::tts::unit_engine_tts_test_tts_generator {
namespace {

using Codes = std::vector<std::vector<int32_t>>;

// The tiny checkpoint on random F32 weights, on the reference CPU backend or the
// fast one. One compute thread: on a loaded 2-core machine a pool's hand-offs cost
// more than these toy matrices.
struct Tiny {
  testing::TempDir t;
  std::unique_ptr<backends::Backend> backend;
  std::unique_ptr<TtsModel> model;
  explicit Tiny(bool wide = false, bool fast = false)
      : backend(fast ? backends::make_cpu_backend(1) : backends::make_reference_cpu_backend(1)) {
    testing::write_tiny_folder(t.dir, testing::tiny_config_json(wide));
    // The fast path runs Q8_0 weights as a Q8_0 checkpoint would.
    model = TtsModel::from_parts(loader::make_random_tensor_set("tiny-tts", backends::DType::F32, 7),
                                 read_tts_config(t.dir), tokenizer::Tokenizer::from_hf_dir(t.dir), *backend,
                                 fast ? std::optional(backends::DType::Q8_0) : std::nullopt);
  }
};

TtsGeneratorOptions parity_options() {
  TtsGeneratorOptions o;
  o.max_sequences = 4;
  o.kv_tokens = 1024;
  o.kv_dtype = backends::DType::F32;
  return o;
}

// Runs the requests together until all finish: frames per request, finish reasons.
std::pair<std::vector<Codes>, std::vector<std::string>> run(const TtsModel& model,
                                                            const std::vector<TtsRequest>& requests) {
  TtsGenerator gen(model, parity_options());
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < requests.size(); ++i) {
    const TtsStarted started = gen.start(requests[i]);
    REQUIRE_MESSAGE(started.ok(), started.error);
    index[started.id] = i;
  }
  std::vector<Codes> codes(requests.size());
  std::vector<std::string> reasons(requests.size());
  for (int guard = 0; gen.num_running() > 0 && guard < 1000; ++guard) {
    for (const TtsFrameEvent& e : gen.step()) {
      const size_t i = index.at(e.id);
      if (!e.codes.empty()) codes[i].push_back(e.codes);
      if (e.finished) reasons[i] = std::string(e.finish_reason);
    }
  }
  return {codes, reasons};
}

}  // namespace

TEST_CASE("tts generator: frames of 16 codes in range, ending on length or EOS") {
  Tiny tiny;
  const auto [codes, reasons] = run(*tiny.model, {testing::make_request("hello", "anna", 0.0f, 1, 5)});
  REQUIRE(codes[0].size() >= 2);  // EOS is masked for the first two frames
  for (const auto& frame : codes[0]) {
    REQUIRE(frame.size() == 16);
    CHECK(frame[0] >= 0);
    CHECK(frame[0] < 256);  // control rows 256..1279 are suppressed
    for (size_t j = 1; j < 16; ++j) CHECK((frame[j] >= 0 && frame[j] < 256));
  }
  if (reasons[0] == "length") CHECK(codes[0].size() == 5);
  else CHECK(reasons[0] == "stop");
}

TEST_CASE("tts generator: a sequence's codes do not depend on its batch (greedy and seeded sampling)") {
  for (const auto& [wide, fast] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true},
                                   std::pair{true, true}}) {
    CAPTURE(wide);
    CAPTURE(fast);
    Tiny tiny(wide, fast);
    const std::vector<TtsRequest> requests = {testing::make_request("hello there", "anna", 0.0f, 1, 6),
                                              testing::make_request("hi", "eric", 0.9f, 42, 7),
                                              testing::make_request("a longer sentence", "anna", 1.0f, 7, 5)};
    const auto together = run(*tiny.model, requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      CAPTURE(i);
      const auto alone = run(*tiny.model, {requests[i]});
      CHECK(alone.first[0] == together.first[i]);
      CHECK(alone.second[0] == together.second[i]);
    }
    // A different seed changes a sampled sequence (the seed is used).
    auto reseeded = requests[1];
    reseeded.seed = 43;
    CHECK(run(*tiny.model, {reseeded}).first[0] != together.first[1]);
  }
}

TEST_CASE("tts generator: sequences started mid-run equal runs alone") {
  Tiny tiny;
  const TtsRequest first = testing::make_request("hello there", "anna", 0.0f, 1, 6);
  const TtsRequest second = testing::make_request("late", "eric", 0.8f, 3, 4);
  TtsGenerator gen(*tiny.model, parity_options());
  const int64_t a = gen.start(first).id;
  Codes codes_a, codes_b;
  int64_t b = -1;
  for (int step = 0; gen.num_running() > 0 && step < 100; ++step) {
    if (step == 2) b = gen.start(second).id;
    for (const auto& e : gen.step()) {
      if (e.codes.empty()) continue;
      CHECK((e.id == a || e.id == b));
      (e.id == a ? codes_a : codes_b).push_back(e.codes);
    }
  }
  CHECK(codes_a == run(*tiny.model, {first}).first[0]);
  CHECK(codes_b == run(*tiny.model, {second}).first[0]);
  CHECK(gen.times().steps > 0);
  CHECK(gen.times().talker_ms > 0.0);
  CHECK(gen.times().predictor_ms > 0.0);
}

TEST_CASE("tts generator: a request without max_frames gets the generator's default") {
  Tiny tiny;
  TtsGeneratorOptions options = parity_options();
  options.default_max_frames = 3;
  TtsGenerator gen(*tiny.model, options);
  TtsRequest r = testing::make_request("hello there", "anna", 0.0f, 1, 0);
  r.max_frames.reset();
  r.repetition_penalty = 1.0f;
  REQUIRE(gen.start(r).ok());
  int frames = 0;
  std::string reason;
  while (gen.num_running() > 0) {
    for (const auto& e : gen.step()) {
      frames += e.codes.empty() ? 0 : 1;
      if (e.finished) reason = std::string(e.finish_reason);
    }
  }
  CHECK(frames == (reason == "length" ? 3 : frames));
  CHECK(frames <= 3);
  CHECK(frames >= 2);  // EOS is masked for the first two frames
}

TEST_CASE("tts generator: bad requests are refused naming the field; capacity is enforced") {
  Tiny tiny;
  TtsGeneratorOptions options = parity_options();
  options.max_sequences = 1;
  TtsGenerator gen(*tiny.model, options);
  auto r = testing::make_request("hi", "anna", 0.0f, 1, 3);
  r.top_p = 0.0f;
  CHECK(gen.start(r).param == "top_p");
  r = testing::make_request("hi", "anna", -1.0f, 1, 3);
  CHECK(gen.start(r).param == "temperature");
  r = testing::make_request("hi", "anna", 0.0f, 1, 0);
  CHECK(gen.start(r).param == "max_frames");
  r = testing::make_request("hi", "anna", 0.0f, 1, 100000);
  CHECK(gen.start(r).param == "max_frames");
  r = testing::make_request("hi", "zed", 0.0f, 1, 3);
  CHECK(gen.start(r).param == "voice");
  CHECK(gen.start(testing::make_request("hi", "anna", 0.0f, 1, 3)).ok());
  const TtsStarted full = gen.start(testing::make_request("hi", "anna", 0.0f, 1, 3));
  CHECK_FALSE(full.ok());
  CHECK(full.error.find("full") != std::string::npos);
  CHECK(gen.num_running() == 1);
}

}  // namespace sluice::engine::tts
