// Random weights at the published 0.6B shapes, quantized to Q8_0 at load on the
// fast CPU path: the loader requires every real tensor name and shape, and the
// generator steps. It holds ~3 GB and takes tens of seconds, so it is skipped in
// the default run; run it with
//   sluice_unit_tests -tc='*real 0.6B shapes*' --no-skip
// It prints ms per frame for the talker and the code predictor (the benchmark
// docs/speech.md quotes; `sluice bench --tts` is the user-facing one).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/model/tts_generator.h"
#include "engine/synthetic/random_tensor_set.h"

namespace sluice::engine::tts::unit_engine_tts_test_tts_real_shapes {

TEST_CASE("tts: random weights at the real 0.6B shapes load (Q8_0) and step" * doctest::skip()) {
  const int threads = std::getenv("SLUICE_TTS_THREADS") ? std::atoi(std::getenv("SLUICE_TTS_THREADS")) : 2;
  auto backend = backends::make_cpu_backend(threads);
  const auto load_start = std::chrono::steady_clock::now();
  const auto model = TtsModel::from_parts(loader::make_random_tensor_set("qwen3-tts-0.6b", backends::DType::BF16, 1),
                                          tts_config_preset("0.6b", TtsKind::custom_voice), std::nullopt, *backend,
                                          backends::DType::Q8_0);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  const int64_t batch = std::getenv("SLUICE_TTS_BATCH") ? std::atoi(std::getenv("SLUICE_TTS_BATCH")) : 1;
  TtsGeneratorOptions options;
  options.max_sequences = static_cast<int32_t>(batch);
  options.kv_tokens = 1024 * batch;
  TtsGenerator gen(*model, options);
  constexpr int32_t kFrames = 24;
  for (int64_t i = 0; i < batch; ++i) {
    TtsRequest request;
    request.seed = static_cast<uint64_t>(i);
    request.max_frames = kFrames;
    const TtsStarted started = gen.start(synthetic_prompt(model->config(), 20), request);
    REQUIRE_MESSAGE(started.ok(), started.error);
  }
  // The first step is the prefill; the rest are single frames.
  std::vector<TtsFrameEvent> events = gen.step();
  REQUIRE(events.size() == static_cast<size_t>(batch));
  const TtsStageTimes prefill = gen.times();
  int64_t frames = prefill.frames;
  while (gen.num_running() > 0) {
    for (const TtsFrameEvent& e : gen.step()) {
      if (!e.codes.empty()) {
        CHECK(e.codes.size() == 16);
        ++frames;
      }
    }
  }
  const TtsStageTimes t = gen.times();
  const double decode_frames = static_cast<double>(t.frames - prefill.frames);
  REQUIRE(decode_frames > 0);
  const double talker = (t.talker_ms - prefill.talker_ms) / static_cast<double>(t.steps - prefill.steps);
  const double predictor = (t.predictor_ms - prefill.predictor_ms) / static_cast<double>(t.steps - prefill.steps);
  MESSAGE("0.6B random Q8_0, " << threads << " threads, batch " << batch << ": load " << load_s << " s; prefill "
                               << prefill.talker_ms << " ms talker + " << prefill.predictor_ms
                               << " ms predictor; per step: talker " << talker << " ms, predictor " << predictor
                               << " ms (" << (talker + predictor) / static_cast<double>(batch)
                               << " ms per frame; real time is 80 ms per frame); frames " << frames);
  CHECK(frames == kFrames * batch);  // EOS is rare on random weights; a stop would show here
}

}  // namespace sluice::engine::tts
