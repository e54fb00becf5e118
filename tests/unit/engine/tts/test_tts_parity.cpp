// Parity with the official qwen-tts package on the tiny fixtures of
// tests/fixtures/qwen3_tts (made by its make_fixtures.py in float32 from the BF16
// checkpoints): for Base voice clones the reference's x-vector (sluice's speaker
// encoder on the audio as the official wrapper loaded it; in ICL mode also the
// official codec encoder's codes of the reference), then prompt rows,
// input embeddings, the talker's last logits and
// final-norm hidden state, and greedy codes for every golden case, alone and all
// cases of a checkpoint batched together, with an F32 talker KV and with the F16 one
// that `sluice speak` and the server use; for the long runs also without the
// repetition penalty (the codes must part from the golden where the official ones
// do). The reference CPU backend (F32 math, weights widened from BF16) runs them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "engine/loader/load_error.h"
#include "engine/tts/model/talker.h"
#include "engine/tts/model/talker_step.h"
#include "engine/tts/model/tts_generator.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::tts::unit_engine_tts_test_tts_parity {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(SLUICE_FIXTURES_DIR) / "qwen3_tts";

// Tolerances, relative to the largest magnitude of the golden vector: F32 math in
// another summation order than PyTorch's, over 2 layers.
constexpr double kEmbedTolerance = 1e-5;
constexpr double kLogitTolerance = 1e-4;
// The speaker encoder's x-vector from the same audio: a DFT by dot products where
// PyTorch runs an FFT, then 12 convolution layers and the pooling statistics.
constexpr double kXvectorTolerance = 1e-4;

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot open " << path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, "cannot open " << path);
  return json::parse(in);
}

double relative_error(std::span<const float> got, std::span<const float> want) {
  REQUIRE(got.size() == want.size());
  double scale = 1e-30, worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  return worst / scale;
}

std::vector<fs::path> cases_of(const std::string& fixture) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(kFixtures / "talker_golden" / fixture)) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The first frame where two code lists differ (a length difference counts);
// the common length when they are equal.
size_t first_difference(const std::vector<std::vector<int32_t>>& a, const std::vector<std::vector<int32_t>>& b) {
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  return k;
}

// The x-vector of a Base case's reference: the audio as the official wrapper loaded
// (and resampled) it, through sluice's mel front-end and speaker encoder; checked
// against the official x-vector of the same case.
std::vector<float> reference_xvector(const TtsModel& model, const json& c, const fs::path& dir) {
  const std::string name = fs::path(c["args"]["ref_audio"].get<std::string>()).stem().string();
  const std::vector<float> samples = read_floats(kFixtures / "speaker_golden" / (name + ".samples.bin"));
  REQUIRE(model.speaker_encoder() != nullptr);
  std::vector<float> xvector = model.speaker_encoder()->embed(samples);
  const double error = relative_error(xvector, read_floats(dir / "xvector.bin"));
  CHECK(error < kXvectorTolerance);
  return xvector;
}

TtsRequest request_of(const json& c) {
  const json& a = c["args"];
  TtsRequest r;
  r.prompt.text = a["text"].get<std::string>();
  r.prompt.voice = a.value("speaker", "");
  r.prompt.language = a["language"].get<std::string>();
  r.prompt.instructions = a.value("instruct", json("")).is_string() ? a.value("instruct", "") : "";
  r.prompt.non_streaming = a["non_streaming_mode"].get<bool>();
  if (c.contains("ref_codes")) {
    // ICL: the official codec encoder's codes of the reference, and its transcript.
    for (const auto& frame : c["ref_codes"])
      for (const auto& code : frame) r.prompt.ref_codes.push_back(code.get<int32_t>());
    r.prompt.ref_text = a["ref_text"].get<std::string>();
  }
  // do_sample / subtalker_dosample false: greedy for both stages.
  r.temperature = 0.0f;
  r.seed = 0;
  r.max_frames = a["max_new_tokens"].get<int32_t>() - 1;  // reference 8.1
  return r;
}

// The prompt as one talker step at positions 0..P-1 of a fresh cache (blocks 0, 1...).
TalkerStep prompt_step(const TtsConfig& config, const TtsPrompt& prompt, const KvCache& cache) {
  TalkerStep s;
  const auto p = static_cast<int64_t>(prompt.rows.size());
  std::vector<int32_t> blocks;
  for (int32_t b = 0; b * cache.block_size() < p; ++b) blocks.push_back(b);
  TalkerStepBuilder builder(config, static_cast<int32_t>(cache.block_size()), s);
  builder.add(prompt, {}, 0, p, blocks);
  builder.finish();
  return s;
}

void check_fixture(const std::string& fixture) {
  auto backend = backends::make_reference_cpu_backend(1);
  const auto model = TtsModel::load(kFixtures / fixture, *backend);
  const TtsConfig& config = model->config();
  const int64_t d = config.talker.embedding_length;
  std::vector<TtsRequest> requests;
  std::vector<json> goldens;
  for (const fs::path& dir : cases_of(fixture)) {
    CAPTURE(dir.filename().string());
    const json c = read_json(dir / "case.json");
    TtsRequest r = request_of(c);
    if (c["args"].contains("ref_audio")) r.prompt.speaker_embedding = reference_xvector(*model, c, dir);
    // Tokens and rows (instructions dropped on 0.6B as the wrapper does).
    CHECK(model->tokenizer()->encode("<|im_start|>assistant\n" + r.prompt.text +
                                         "<|im_end|>\n<|im_start|>assistant\n",
                                     false, true) == c["input_ids"].get<std::vector<int32_t>>());
    auto built = build_prompt(config, *model->tokenizer(), r.prompt);
    REQUIRE(std::holds_alternative<TtsPrompt>(built));
    const TtsPrompt prompt = std::get<TtsPrompt>(built);
    std::vector<PromptRow> want;
    for (const json& row : c["prefill_rows"])
      want.push_back({row["text"].is_null() ? -1 : row["text"].get<int32_t>(),
                      row["codec"].is_null() ? -1 : row["codec"].get<int32_t>(), row.value("speaker", false),
                      row.value("ref_frame", -1)});
    CHECK(prompt.rows == want);

    // Input rows, last logits and final-norm hidden of the prefill.
    KvCache cache(*backend, config.talker, KvCacheConfig{8, 16, backends::DType::F32});
    Talker talker(*backend, config, model->weights());
    const TalkerStep step = prompt_step(config, prompt, cache);
    std::vector<float> rows(prompt.rows.size() * static_cast<size_t>(d));
    talker.input_rows(step, rows);
    const double embed_error = relative_error(rows, read_floats(dir / "prefill_embeds.bin"));
    CHECK(embed_error < kEmbedTolerance);
    std::vector<float> logits(static_cast<size_t>(config.talker.vocab_size));
    talker.forward(step, cache, logits);
    std::vector<float> hidden(static_cast<size_t>(d));
    backend->download(talker.final_hidden(), std::as_writable_bytes(std::span<float>(hidden)));
    const double logit_error = relative_error(logits, read_floats(dir / "last_logits.bin"));
    const double hidden_error = relative_error(hidden, read_floats(dir / "last_hidden.bin"));
    MESSAGE(fixture << "/" << dir.filename().string() << ": max error / max |golden|: embeddings " << embed_error
                    << ", logits " << logit_error << ", hidden " << hidden_error);
    CHECK(logit_error < kLogitTolerance);
    CHECK(hidden_error < kLogitTolerance);
    requests.push_back(r);
    goldens.push_back(c);
  }
  REQUIRE(requests.size() >= 3);

  // Greedy codes, each case alone and all cases in one batch.
  auto generate = [&](const std::vector<TtsRequest>& batch, backends::DType kv_dtype = backends::DType::F32) {
    TtsGeneratorOptions options;
    options.max_sequences = static_cast<int32_t>(batch.size());
    options.kv_tokens = 2048;
    options.kv_dtype = kv_dtype;
    TtsGenerator gen(*model, options);
    std::map<int64_t, size_t> index;
    for (size_t i = 0; i < batch.size(); ++i) {
      const TtsStarted started = gen.start(batch[i]);
      REQUIRE_MESSAGE(started.ok(), started.error);
      index[started.id] = i;
    }
    std::vector<std::vector<std::vector<int32_t>>> codes(batch.size());
    std::vector<std::string> stops(batch.size());
    while (gen.num_running() > 0) {
      for (const TtsFrameEvent& e : gen.step()) {
        if (!e.codes.empty()) codes[index.at(e.id)].push_back(e.codes);
        if (e.finished) stops[index.at(e.id)] = e.finish_reason == "stop" ? "eos" : "limit";
      }
    }
    return std::make_pair(codes, stops);
  };
  const auto together = generate(requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    CAPTURE(goldens[i]["args"].dump());
    const auto want = goldens[i]["codes"].get<std::vector<std::vector<int32_t>>>();
    // The generator stops at max_frames without the extra talker step whose token
    // the official loop samples and drops (8.1): an EOS drawn exactly there is a
    // "length" finish here, with the same frames.
    std::string want_stop = goldens[i]["stop"].get<std::string>();
    if (static_cast<int32_t>(want.size()) == *requests[i].max_frames) want_stop = "limit";
    const auto alone = generate({requests[i]});
    CHECK(alone.first[0] == want);
    CHECK(alone.second[0] == want_stop);
    CHECK(together.first[i] == want);
    CHECK(together.second[i] == want_stop);
    // As `sluice speak` runs it: the talker's KV in F16 (the code predictor's stays F32).
    const auto f16 = generate({requests[i]}, backends::DType::F16);
    CHECK_MESSAGE(f16.first[0] == want, "F16 talker KV: first differing frame "
                                            << first_difference(f16.first[0], want) << " of " << want.size());
    CHECK(f16.second[0] == want_stop);
    if (goldens[i].contains("penalty_changes_from_frame") && !goldens[i]["penalty_changes_from_frame"].is_null()) {
      // The official codes without the penalty part from these at that frame: ours too.
      TtsRequest no_penalty = requests[i];
      no_penalty.repetition_penalty = 1.0f;
      const auto plain = generate({no_penalty});
      CHECK(first_difference(plain.first[0], want) == goldens[i]["penalty_changes_from_frame"].get<size_t>());
    }
  }
}


// A copy of a fixture checkpoint whose model.safetensors header has `from` replaced
// by `to` (same length, so offsets stay valid).
struct PatchedCheckpoint {
  fs::path dir = fs::temp_directory_path() / ("sluice-tts-patched-" + std::to_string(std::random_device{}()));
  PatchedCheckpoint(const std::string& from, const std::string& to, const std::string& fixture = "custom_voice_small") {
    REQUIRE(from.size() == to.size());
    fs::create_directories(dir);
    const fs::path src = kFixtures / fixture;
    for (const char* name : {"config.json", "generation_config.json", "vocab.json", "merges.txt",
                             "tokenizer_config.json"})
      fs::copy_file(src / name, dir / name);
    std::ifstream in(src / "model.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = bytes.find(from);
    REQUIRE(at != std::string::npos);
    bytes.replace(at, from.size(), to);
    std::ofstream(dir / "model.safetensors", std::ios::binary) << bytes;
  }
  ~PatchedCheckpoint() { fs::remove_all(dir); }
};

std::string load_error(const fs::path& dir) {
  auto backend = backends::make_reference_cpu_backend(1);
  try {
    TtsModel::load(dir, *backend);
  } catch (const loader::LoadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("tts load: a Base checkpoint's missing or misshapen speaker-encoder tensor is named with its file") {
  struct Patch {
    std::string from, to, tensor;
  };
  for (const Patch& patch :
       {Patch{"\"speaker_encoder.asp.conv.weight\"", "\"speaker_encoder.asp.conx.weight\"", "speaker_encoder.asp.conv.weight"},
        Patch{"\"speaker_encoder.fc.weight\":{\"dtype\":\"BF16\",\"shape\":[32,192,1]",
              "\"speaker_encoder.fc.weight\":{\"dtype\":\"BF16\",\"shape\":[192,32,1]", "speaker_encoder.fc.weight"}}) {
    CAPTURE(patch.tensor);
    PatchedCheckpoint patched(patch.from, patch.to, "base_small");
    const std::string error = load_error(patched.dir);
    CHECK(error.find(patched.dir.string()) != std::string::npos);
    CHECK(error.find(patch.tensor) != std::string::npos);
  }
}

TEST_CASE("tts load: a missing or misshapen tensor is named with its file") {
  {
    PatchedCheckpoint missing("\"talker.codec_head.weight\"", "\"talker.codec_hxad.weight\"");
    const std::string error = load_error(missing.dir);
    CHECK(error.find(missing.dir.string()) != std::string::npos);
    CHECK(error.find("talker.codec_head.weight") != std::string::npos);
  }
  {
    PatchedCheckpoint misshapen("\"talker.codec_head.weight\":{\"dtype\":\"BF16\",\"shape\":[1088,32]",
                                "\"talker.codec_head.weight\":{\"dtype\":\"BF16\",\"shape\":[32,1088]");
    const std::string error = load_error(misshapen.dir);
    CHECK(error.find("model.safetensors") != std::string::npos);
    CHECK(error.find("talker.codec_head.weight") != std::string::npos);
    CHECK(error.find("1088") != std::string::npos);
  }
}

TEST_CASE("tts parity: CustomVoice 0.6B-style fixture against the official package") {
  check_fixture("custom_voice_small");
}

TEST_CASE("tts parity: Base 0.6B-style fixture, x-vector and ICL voice clones (streaming text) against the "
          "official package") {
  check_fixture("base_small");
}

TEST_CASE("tts parity: VoiceDesign 1.7B-style fixture (small_to_mtp_projection) against the official package") {
  check_fixture("voice_design_wide");
}

TEST_CASE("tts parity: CustomVoice 1.7B-style fixture, long runs (think prefix, dialect, CJK, penalty) against the "
          "official package") {
  check_fixture("custom_voice_wide");
}

}  // namespace sluice::engine::tts
