// SpeechEngine on the tiny committed checkpoint (tests/fixtures/qwen3_tts/
// custom_voice_small with its codec): every request's audio equals what it gets
// alone (TtsGenerator's codes decoded at once), whatever runs beside it, however
// the codec chunks it, and through preemption; cancel, deadline, stop and the
// refusals at submit. On custom_voice_wide, the long greedy goldens of the official
// package come out of the engine as they are (the server's path).
#include "engine/tts/serving/speech_engine.h"
#include "engine/tts/serving/primed_codec_cache.h"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/codec/codec_config.h"
#include "tts_test_util.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::tts::unit_engine_tts_test_speech_engine {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kFixtures = fs::path(SLUICE_FIXTURES_DIR) / "qwen3_tts";
const fs::path kCheckpoint = kFixtures / "custom_voice_small";

// The talker and the codec on separate backends, as the server runs them.
struct World {
  explicit World(const fs::path& checkpoint = kCheckpoint)
      : model(TtsModel::load(checkpoint, *backend)),
        codec_tensors(loader::open_tensor_set(checkpoint / "speech_tokenizer")),
        codec(CodecDecoder::load(*codec_tensors, read_codec_config(checkpoint / "speech_tokenizer" / "config.json"),
                                 *codec_backend)) {}
  std::unique_ptr<backends::Backend> backend = backends::make_cpu_backend(1);
  std::unique_ptr<backends::Backend> codec_backend = backends::make_cpu_backend(1);
  std::unique_ptr<TtsModel> model;
  std::unique_ptr<loader::TensorSet> codec_tensors;
  CodecDecoder codec;

  int64_t samples_per_frame() const { return codec.config().samples_per_frame; }
};

struct Expected {
  std::vector<float> pcm;
  int64_t frames = 0;
  std::string reason;
};

// What the request gets alone: the generator's codes, decoded in one pass.
Expected alone(World& w, const TtsRequest& r) {
  TtsGenerator gen(*w.model);
  const TtsStarted started = gen.start(r);
  REQUIRE_MESSAGE(started.ok(), started.error);
  std::vector<int32_t> codes;
  Expected out;
  while (gen.num_running() > 0) {
    for (const TtsFrameEvent& e : gen.step()) {
      codes.insert(codes.end(), e.codes.begin(), e.codes.end());
      if (!e.codes.empty()) ++out.frames;
      if (e.finished) out.reason = std::string(e.finish_reason);
    }
  }
  out.pcm = w.codec.decode_all(codes);
  return out;
}

struct Outcome {
  std::vector<float> pcm;
  std::vector<int64_t> delta_frames;
  ChoiceFinish finish;
};

Outcome collect(RequestStream& stream, const std::function<void(const Outcome&)>& on_delta = {}) {
  Outcome out;
  for (;;) {
    REQUIRE_MESSAGE(stream.wait(30s), "no event within 30 s");
    while (auto event = stream.try_pop()) {
      if (auto* audio = std::get_if<AudioDelta>(&*event)) {
        out.pcm.insert(out.pcm.end(), audio->pcm.begin(), audio->pcm.end());
        out.delta_frames.push_back(audio->num_frames);
        if (on_delta) on_delta(out);
      } else if (auto* finish = std::get_if<ChoiceFinish>(&*event)) {
        out.finish = *finish;
        return out;
      }
    }
  }
}

// The request as the server hands it over: its prompt built from `r.prompt`.
SpeechRequest speech(const World& w, std::string id, TtsRequest r, int32_t first_chunk = 1, int32_t chunk = 4) {
  SpeechRequest s;
  s.request_id = std::move(id);
  s.prompt = std::get<TtsPrompt>(build_prompt(w.model->config(), *w.model->tokenizer(), r.prompt));
  s.tts = std::move(r);
  s.first_chunk_frames = first_chunk;
  s.chunk_frames = chunk;
  return s;
}

// A request that runs until stopped: EOS ignored, `frames` frames.
SpeechRequest long_request(const World& w, std::string id, const std::string& voice, int32_t frames) {
  TtsRequest r = testing::make_request("This request runs until something stops it.", voice, 0.8f, 2, frames);
  r.ignore_eos = true;
  return speech(w, std::move(id), std::move(r));
}

void wait_until_idle(const SpeechEngine& engine) {
  for (int i = 0; i < 3000; ++i) {  // 30 s: generous under ASan on a loaded machine
    const EngineStats s = engine.stats();
    if (s.num_running == 0 && s.num_waiting == 0 && s.kv_cache_usage == 0.0) return;
    std::this_thread::sleep_for(10ms);
  }
  FAIL("the engine did not go idle: KV still in use");
}

TEST_CASE("speech requests batched in one engine each get the audio they get alone") {
  World w;
  const std::vector<TtsRequest> requests = {
      testing::make_request("Hello there, this is a test.", "serena", 0.0f, 1, 12),
      testing::make_request("Sampling with a seed gives the same frames.", "ryan", 0.9f, 5, 10),
      testing::make_request("A third voice joins the batch.", "eric", 0.7f, 9, 16),
  };
  std::vector<Expected> expected;
  for (const TtsRequest& r : requests) expected.push_back(alone(w, r));

  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{});
  engine.start();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < requests.size(); ++i) {
    const SubmitResult submitted =
        engine.submit(speech(w, "r" + std::to_string(i), requests[i], i == 2 ? 2 : 1, i == 2 ? 3 : 4));
    REQUIRE_MESSAGE(submitted.ok(), submitted.message);
    streams.push_back(submitted.stream);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    CAPTURE(i);
    const Outcome got = collect(*streams[i]);
    CHECK(got.finish.finish_reason() == expected[i].reason);
    CHECK(got.finish.num_completion_tokens == expected[i].frames);
    CHECK(got.finish.num_prompt_tokens > 0);
    REQUIRE(got.pcm.size() == expected[i].pcm.size());
    CHECK(got.pcm == expected[i].pcm);  // bit for bit: batch invariant kernels, exact streaming
    int64_t frames = 0;
    for (int64_t f : got.delta_frames) frames += f;
    CHECK(frames == expected[i].frames);
    CHECK(got.delta_frames.front() >= (i == 2 ? 2 : 1));
  }
  wait_until_idle(engine);
  CHECK(engine.stats().num_finished[static_cast<size_t>(FinishReason::length)] +
            engine.stats().num_finished[static_cast<size_t>(FinishReason::stop)] ==
        3);
}

TEST_CASE("an ICL voice clone's audio is the reference and its frames decoded at once, the reference cut off") {
  // The official package decodes the reference codes ahead of the generated ones and
  // drops their samples (Qwen3TTSModel.generate_voice_clone); the codec worker primes
  // the request's stream with them, so streamed chunks still add up to exactly that
  // audio.
  World w(kFixtures / "base_small");
  const TtsConfig& config = w.model->config();
  TtsRequest r = testing::make_request("A cloned voice speaks.", "", 0.8f, 3, 10);
  r.prompt.speaker_embedding.assign(static_cast<size_t>(config.talker.embedding_length), 0.0f);
  for (size_t i = 0; i < r.prompt.speaker_embedding.size(); ++i)
    r.prompt.speaker_embedding[i] = 0.05f * static_cast<float>(static_cast<int>(i % 7) - 3);
  const int64_t ref_frames = 13;  // primed in two pieces (8 frames a pass)
  const auto groups = static_cast<size_t>(w.codec.config().num_quantizers);
  for (int64_t f = 0; f < ref_frames; ++f)
    for (size_t g = 0; g < groups; ++g)
      r.prompt.ref_codes.push_back(static_cast<int32_t>((f * 7 + static_cast<int64_t>(g) * 3) % 64));
  r.prompt.ref_text = "The reference says this.";

  TtsGenerator gen(*w.model);
  const TtsStarted started = gen.start(r);
  REQUIRE_MESSAGE(started.ok(), started.error);
  std::vector<int32_t> codes = r.prompt.ref_codes;
  while (gen.num_running() > 0)
    for (const TtsFrameEvent& e : gen.step()) codes.insert(codes.end(), e.codes.begin(), e.codes.end());
  const std::vector<float> whole = w.codec.decode_all(codes);
  const std::vector<float> want(whole.begin() + ref_frames * w.samples_per_frame(), whole.end());

  // The second request with the same reference starts from the primed stream the
  // first one left (primed_codec_cache.h): the same audio, no reference decoded.
  struct Primes : SpeechObserver {
    std::atomic<int> decoded{0}, reused{0};
    void on_reference_primed(bool was_reused) override { ++(was_reused ? reused : decoded); }
  } primes;
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{}, nullptr, &primes);
  engine.start();
  for (const char* id : {"icl", "icl-again"}) {
    CAPTURE(id);
    const SubmitResult submitted = engine.submit(speech(w, id, r, 1, 3));
    REQUIRE_MESSAGE(submitted.ok(), submitted.message);
    const Outcome got = collect(*submitted.stream);
    REQUIRE(got.pcm.size() == want.size());
    CHECK(got.pcm == want);
  }
  CHECK(primes.decoded == 1);
  CHECK(primes.reused == 1);
  // The talker's prefix cache (keyed by row content) gave the second request the
  // first one's prompt rows, all but the last partial block, and its audio above is
  // still exactly the generator's.
  wait_until_idle(engine);
  const EngineStats stats = engine.stats();
  const auto rows = static_cast<int64_t>(
      std::get<TtsPrompt>(build_prompt(config, *w.model->tokenizer(), r.prompt)).rows.size());
  CHECK(stats.num_prefix_cache_hits == static_cast<uint64_t>((rows - 1) / 16 * 16));
  CHECK(stats.num_prefix_cache_queries == static_cast<uint64_t>(2 * rows));
}

TEST_CASE("speech prefix cache: rows are keyed by what they add, so only equal leading rows are shared") {
  World w(kFixtures / "base_small");
  const TtsConfig& config = w.model->config();
  TtsRequest r = testing::make_request("A cloned voice speaks.", "", 0.0f, 3, 6);
  r.prompt.speaker_embedding.assign(static_cast<size_t>(config.talker.embedding_length), 0.01f);
  TtsPrompt base = std::get<TtsPrompt>(build_prompt(config, *w.model->tokenizer(), r.prompt));
  const std::vector<int32_t> keys = prompt_row_keys(base, config.num_code_groups);
  REQUIRE(keys.size() == base.rows.size());
  for (int32_t key : keys) CHECK(key >= 0);
  CHECK(prompt_row_keys(base, config.num_code_groups) == keys);  // stable

  // Another speaker embedding changes the speaker row's key and no other.
  TtsPrompt other = base;
  other.speaker_embedding[0] = 0.02f;
  const std::vector<int32_t> other_keys = prompt_row_keys(other, config.num_code_groups);
  int differing = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    CAPTURE(i);
    if (keys[i] == other_keys[i]) continue;
    ++differing;
    CHECK(base.rows[i].speaker);
  }
  CHECK(differing == 1);

  // ICL rows: a reference frame's codes are part of its row's key.
  r.prompt.ref_text = "The reference says this.";
  for (int f = 0; f < 4; ++f)
    for (int32_t g = 0; g < config.num_code_groups; ++g) r.prompt.ref_codes.push_back((f * 5 + g) % 64);
  TtsPrompt icl = std::get<TtsPrompt>(build_prompt(config, *w.model->tokenizer(), r.prompt));
  TtsPrompt icl_other = icl;
  icl_other.ref_codes.back() = (icl_other.ref_codes.back() + 1) % 64;  // the last frame's last code
  const std::vector<int32_t> a = prompt_row_keys(icl, config.num_code_groups);
  const std::vector<int32_t> b = prompt_row_keys(icl_other, config.num_code_groups);
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK((a[i] == b[i]) == (icl.rows[i].ref_frame != 3));
  }
}

TEST_CASE("primed codec cache: a kept stream's clone decodes as the reference decoded again; least recently used out") {
  World w(kFixtures / "base_small");
  const auto groups = static_cast<size_t>(w.codec.config().num_quantizers);
  const auto codes_of = [&](int seed, int64_t frames) {
    std::vector<int32_t> codes;
    for (int64_t f = 0; f < frames; ++f)
      for (size_t g = 0; g < groups; ++g)
        codes.push_back(static_cast<int32_t>((f * 5 + static_cast<int64_t>(g) * 11 + seed * 13) % 64));
    return codes;
  };
  const std::vector<int32_t> after = codes_of(9, 6);
  const auto expected_after = [&](const std::vector<int32_t>& ref) {
    std::vector<int32_t> all = ref;
    all.insert(all.end(), after.begin(), after.end());
    const std::vector<float> whole = w.codec.decode_all(all);
    return std::vector<float>(whole.end() - static_cast<std::ptrdiff_t>(6 * w.samples_per_frame()), whole.end());
  };
  PrimedCodecCache cache(2);
  const std::vector<int32_t> a = codes_of(1, 5), b = codes_of(2, 7), c = codes_of(3, 4);
  // The worker's use: find, else prime a fresh stream and keep it.
  const auto start = [&](const std::vector<int32_t>& ref, bool& reused) {
    std::optional<CodecStream> kept = cache.find(ref);
    reused = kept.has_value();
    if (kept) return std::move(*kept);
    CodecStream stream = w.codec.start();
    std::vector<float> dropped;
    stream.decode(ref, dropped);
    cache.keep(ref, stream);
    return stream;
  };
  struct Use {
    const std::vector<int32_t>* ref;
    bool reused;
  };
  // a, a (kept), b, a (kept), c (b out), b (decoded again, a out), c (kept).
  for (const Use& use : {Use{&a, false}, Use{&a, true}, Use{&b, false}, Use{&a, true}, Use{&c, false},
                         Use{&b, false}, Use{&c, true}}) {
    bool reused = false;
    CodecStream stream = start(*use.ref, reused);
    CHECK(reused == use.reused);
    CHECK(stream.num_frames() == static_cast<int64_t>(use.ref->size() / groups));
    std::vector<float> pcm;
    stream.decode(after, pcm);
    CHECK(pcm == expected_after(*use.ref));
    // Decoding on a clone leaves the kept stream as it was.
    std::vector<float> again;
    cache.find(*use.ref)->decode(after, again);
    CHECK(again == pcm);
  }
  CHECK(cache.size() == 2);
  PrimedCodecCache none(0);
  none.keep(a, w.codec.start());
  CHECK_FALSE(none.find(a).has_value());
}

TEST_CASE("speech engine: the official package's long greedy runs, all at once, as they are") {
  // custom_voice_wide's goldens (make_fixtures.py): an explicit language, a dialect
  // speaker under auto with CJK text, instructions; up to 96 frames. The engine's
  // default config (F16 talker KV) must give the official codes: its audio is those
  // codes decoded.
  World w(kFixtures / "custom_voice_wide");
  std::vector<nlohmann::json> cases;
  for (const auto& entry : fs::directory_iterator(kFixtures / "talker_golden" / "custom_voice_wide"))
    cases.push_back(nlohmann::json::parse(std::ifstream(entry.path() / "case.json")));
  REQUIRE(cases.size() >= 3);
  std::vector<std::vector<float>> wants;  // decoded before the engine's codec worker runs
  for (const nlohmann::json& c : cases) {
    std::vector<int32_t> codes;
    for (const auto& frame : c["codes"]) codes.insert(codes.end(), frame.begin(), frame.end());
    wants.push_back(w.codec.decode_all(codes));
  }
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{});
  engine.start();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json& a = cases[i]["args"];
    TtsRequest r = testing::make_request(a["text"], a["speaker"], 0.0f, 0, a["max_new_tokens"].get<int32_t>() - 1);
    r.prompt.language = a["language"];
    r.prompt.instructions = a.value("instruct", "");
    const SubmitResult submitted = engine.submit(speech(w, "golden" + std::to_string(i), r));
    REQUIRE_MESSAGE(submitted.ok(), submitted.message);
    streams.push_back(submitted.stream);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(cases[i]["args"].dump());
    const std::vector<float>& want = wants[i];
    const Outcome got = collect(*streams[i]);
    CHECK(got.finish.num_completion_tokens == cases[i]["frames"].get<int64_t>());
    CHECK(got.finish.finish_reason() == (cases[i]["stop"] == "eos" ? "stop" : "length"));
    REQUIRE(got.pcm.size() == want.size());
    size_t first = 0;
    while (first < want.size() && got.pcm[first] == want[first]) ++first;
    CHECK_MESSAGE(first == want.size(), "audio differs from frame " << first / w.samples_per_frame());
  }
  wait_until_idle(engine);
}

TEST_CASE("a speech sequence preempted for KV recomputes its rows and continues unchanged") {
  World w;
  // Short texts (the tiny tokenizer is byte-level): both prompts fit at once, and
  // then their frames outgrow the pool.
  TtsRequest a = testing::make_request("Go on.", "serena", 0.8f, 3, 40);
  TtsRequest b = testing::make_request("Run now.", "dylan", 0.8f, 4, 40);
  a.ignore_eos = b.ignore_eos = true;
  const Expected ea = alone(w, a), eb = alone(w, b);
  REQUIRE(ea.frames == 40);

  SpeechEngineConfig config;
  // 96 positions: room for one sequence's prompt and 40 frames, not for two.
  const uint64_t per_block = KvCache::bytes_per_block(w.model->config().talker, config.block_size, config.kv_dtype);
  config.kv_cache_bytes = per_block * 6;
  SpeechEngine engine(*w.model, w.codec, config);
  engine.start();
  const SubmitResult ra = engine.submit(speech(w, "a", a)), rb = engine.submit(speech(w, "b", b));
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  const Outcome ga = collect(*ra.stream), gb = collect(*rb.stream);
  CHECK(ga.pcm == ea.pcm);
  CHECK(gb.pcm == eb.pcm);
  CHECK(engine.stats().num_preemptions > 0);
  wait_until_idle(engine);
}

TEST_CASE("cancelling a speech request ends it with abort and frees its KV") {
  World w;
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{});
  engine.start();
  const SubmitResult submitted = engine.submit(long_request(w, "c", "serena", 1500));
  REQUIRE(submitted.ok());
  RequestStream& stream = *submitted.stream;
  const Outcome got = collect(stream, [&](const Outcome&) { stream.cancel(); });
  CHECK(got.finish.reason == FinishReason::abort);
  CHECK(got.finish.num_completion_tokens < 1500);
  CHECK(!got.pcm.empty());
  wait_until_idle(engine);
  CHECK(engine.stats().num_finished[static_cast<size_t>(FinishReason::abort)] == 1);
}

TEST_CASE("abort(id) ends a speech request with abort and frees its id and KV") {
  World w;
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{});
  engine.start();
  CHECK_FALSE(engine.abort("nobody"));
  const SubmitResult submitted = engine.submit(long_request(w, "a", "serena", 1500));
  REQUIRE(submitted.ok());
  bool aborted = false;
  const Outcome got = collect(*submitted.stream, [&](const Outcome&) {
    if (!aborted) aborted = engine.abort("a");
  });
  CHECK(aborted);
  CHECK(got.finish.reason == FinishReason::abort);
  CHECK(got.finish.num_completion_tokens < 1500);
  wait_until_idle(engine);
  CHECK(engine.stats().num_finished[static_cast<size_t>(FinishReason::abort)] == 1);
  CHECK(engine.submit(long_request(w, "a", "serena", 4)).ok());  // the id is free again
}

TEST_CASE("stopping a speech engine that never started ends what was submitted with abort") {
  World w;
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{});
  const SubmitResult submitted = engine.submit(long_request(w, "q", "serena", 10));
  REQUIRE(submitted.ok());
  engine.stop();
  const Outcome got = collect(*submitted.stream);
  CHECK(got.finish.reason == FinishReason::abort);
  CHECK(got.pcm.empty());
}

TEST_CASE("a speech request past its deadline ends with timeout after the audio made before it") {
  // Once the test has heard audio, the engine's next step waits out the deadline (the
  // observer runs on the engine thread between steps), so it passes mid-run however
  // fast the machine; 2 s is only how long the first frame may take under load.
  struct HoldAfterAudio : EngineObserver {
    std::atomic<bool> heard{false};
    std::atomic<bool> held{false};
    Clock::time_point deadline;
    void on_step(const StepMetrics&) override {
      if (held.load() || !heard.load()) return;
      held = true;
      std::this_thread::sleep_until(deadline + 1ms);
    }
  } observer;
  World w;
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{}, &observer);
  engine.start();
  SpeechRequest s = long_request(w, "t", "ryan", 4000);
  s.deadline = observer.deadline = Clock::now() + 2s;
  const SubmitResult submitted = engine.submit(std::move(s));
  REQUIRE(submitted.ok());
  const Outcome got = collect(*submitted.stream, [&](const Outcome&) { observer.heard = true; });
  CHECK(observer.held);
  CHECK(got.finish.reason == FinishReason::timeout);
  CHECK(got.finish.num_completion_tokens > 0);
  CHECK(got.finish.num_completion_tokens < 4000);
  // Every frame made before the deadline was decoded and sent.
  CHECK(static_cast<int64_t>(got.pcm.size()) == got.finish.num_completion_tokens * w.samples_per_frame());
  wait_until_idle(engine);
}

TEST_CASE("speech submits are refused with the field named, and queue_full past max_waiting") {
  World w;
  SpeechEngineConfig config;
  config.max_waiting = 1;
  SpeechEngine engine(*w.model, w.codec, config);  // not started: submits stay queued

  // The prompt's own refusals come from build_prompt, before the engine (test_tts_prompt.cpp).
  SpeechRequest empty = speech(w, "e", testing::make_request("Hi there.", "serena", 0.0f, 1, 4));
  empty.prompt.rows.clear();
  SubmitResult r = engine.submit(std::move(empty));
  CHECK(r.status == SubmitStatus::rejected);
  CHECK(r.param == "input");
  TtsRequest hot = testing::make_request("Hi there.", "serena", -1.0f, 1, 4);
  r = engine.submit(speech(w, "t", hot));
  CHECK(r.status == SubmitStatus::rejected);
  CHECK(r.param == "temperature");
  r = engine.submit(speech(w, "long", testing::make_request("Hi there.", "serena", 0.0f, 1, 1 << 30)));
  CHECK(r.status == SubmitStatus::rejected);
  CHECK(r.param == "max_new_tokens");

  CHECK(engine.submit(speech(w, "q1", testing::make_request("Hi there.", "serena", 0.0f, 1, 4))).ok());
  r = engine.submit(speech(w, "q1", testing::make_request("Hi there.", "serena", 0.0f, 1, 4)));
  CHECK(r.status == SubmitStatus::rejected);  // the same id twice
  r = engine.submit(speech(w, "q2", testing::make_request("Hi there.", "serena", 0.0f, 1, 4)));
  CHECK(r.status == SubmitStatus::queue_full);
  CHECK(engine.stats().num_requests_queue_full == 1);
}

TEST_CASE("a speech request that names no frame limit gets what the KV pool leaves after its prompt") {
  World w;
  SpeechEngineConfig config;
  const uint64_t per_block = KvCache::bytes_per_block(w.model->config().talker, config.block_size, config.kv_dtype);
  config.kv_cache_bytes = per_block * 4;  // 64 positions
  SpeechEngine engine(*w.model, w.codec, config);
  engine.start();
  TtsRequest r = testing::make_request("Go on.", "serena", 0.8f, 3, 1);
  r.max_frames.reset();
  r.ignore_eos = true;
  const SubmitResult submitted = engine.submit(speech(w, "cap", r));
  REQUIRE_MESSAGE(submitted.ok(), submitted.message);
  const Outcome got = collect(*submitted.stream);
  CHECK(got.finish.reason == FinishReason::length);
  const auto rows = static_cast<int64_t>(
      std::get<TtsPrompt>(build_prompt(w.model->config(), *w.model->tokenizer(), r.prompt)).rows.size());
  CHECK(got.finish.num_completion_tokens == 64 - rows);
}

TEST_CASE("stopping the speech engine ends every request in flight with abort") {
  World w;
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{});
  engine.start();
  const SubmitResult running = engine.submit(long_request(w, "s1", "serena", 3000));
  REQUIRE(running.ok());
  REQUIRE(running.stream->wait(30s));  // it produced audio
  engine.stop();
  const Outcome got = collect(*running.stream);
  CHECK(got.finish.reason == FinishReason::abort);
  CHECK(engine.submit(long_request(w, "s2", "serena", 10)).status == SubmitStatus::shutting_down);
}

TEST_CASE("an exception of any type outside a speech step stops the engine: requests end with error, health says why") {
  struct ThrowingObserver : EngineObserver {
    void on_step(const StepMetrics&) override { throw 42; }  // not a std::exception
  } observer;
  World w;
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{}, &observer);
  engine.start();
  const SubmitResult submitted = engine.submit(long_request(w, "victim", "serena", 1500));
  REQUIRE(submitted.ok());
  const Outcome got = collect(*submitted.stream);
  CHECK(got.finish.reason == FinishReason::error);
  CHECK(got.finish.error.find("unknown type") != std::string::npos);
  const EngineHealth health = engine.health(1s);
  CHECK_FALSE(health.ok);
  CHECK(health.status == "dead");
  CHECK(engine.death_reason().has_value());
  const SubmitResult refused = engine.submit(long_request(w, "later", "serena", 10));
  CHECK(refused.status == SubmitStatus::shutting_down);
  CHECK(refused.code == "engine_dead");
  CHECK(refused.message.find("unknown type") != std::string::npos);
  engine.stop();  // joins the stopped threads without hanging
}

TEST_CASE("an exception escaping the codec thread ends its requests with error and stops the engine") {
  struct ThrowingSpeechObserver : SpeechObserver {
    void on_first_audio(double) override { throw 7; }  // not a std::exception
  } observer;
  World w;
  SpeechEngine engine(*w.model, w.codec, SpeechEngineConfig{}, nullptr, &observer);
  engine.start();
  const SubmitResult submitted = engine.submit(long_request(w, "victim", "serena", 1500));
  REQUIRE(submitted.ok());
  const Outcome got = collect(*submitted.stream);
  CHECK(got.finish.reason == FinishReason::error);
  CHECK(got.finish.error.find("codec thread stopped") != std::string::npos);
  CHECK_FALSE(engine.health(1s).ok);
  CHECK(engine.health(1s).reason.find("codec thread stopped") != std::string::npos);
  const SubmitResult refused = engine.submit(long_request(w, "later", "serena", 10));
  CHECK(refused.status == SubmitStatus::shutting_down);
  CHECK(refused.code == "engine_dead");
  engine.stop();
}

}  // namespace
}  // namespace sluice::engine::tts
