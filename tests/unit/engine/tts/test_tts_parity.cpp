// Parity with the official qwen-tts package on the tiny fixtures of
// tests/fixtures/qwen3_tts (made by its make_fixtures.py in float32 from the BF16
// checkpoints): prompt rows, input embeddings, the talker's last logits and
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
#include "engine/tts/model/tts_generator.h"

namespace sluice::engine::tts {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(SLUICE_FIXTURES_DIR) / "qwen3_tts";

// Tolerances, relative to the largest magnitude of the golden vector: F32 math in
// another summation order than PyTorch's, over 2 layers.
constexpr double kEmbedTolerance = 1e-5;
constexpr double kLogitTolerance = 1e-4;

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

TtsRequest request_of(const json& c) {
  const json& a = c["args"];
  TtsRequest r;
  r.prompt.text = a["text"].get<std::string>();
  r.prompt.voice = a.value("speaker", "");
  r.prompt.language = a["language"].get<std::string>();
  r.prompt.instructions = a.value("instruct", json("")).is_string() ? a.value("instruct", "") : "";
  r.prompt.non_streaming = a["non_streaming_mode"].get<bool>();
  // do_sample / subtalker_dosample false: greedy for both stages.
  r.temperature = 0.0f;
  r.seed = 0;
  r.max_frames = a["max_new_tokens"].get<int32_t>() - 1;  // reference 8.1
  return r;
}

// The prompt as one talker step at positions 0..P-1 of a fresh cache.
TalkerStep prompt_step(const TtsPrompt& prompt, const KvCache& cache) {
  TalkerStep s;
  const auto p = static_cast<int32_t>(prompt.rows.size());
  backends::SequenceSlice slice;
  slice.num_queries = p;
  for (int32_t b = 0; b * cache.block_size() < p; ++b) slice.block_table.push_back(b);
  for (int32_t i = 0; i < p; ++i) {
    const PromptRow& row = prompt.rows[static_cast<size_t>(i)];
    s.text_of_row.push_back(row.text < 0 ? -1 : static_cast<int32_t>(s.text_ids.size()));
    if (row.text >= 0) s.text_ids.push_back(row.text);
    s.codec_of_row.push_back(row.codec < 0 ? -1 : static_cast<int32_t>(s.codec_ids.size()));
    if (row.codec >= 0) s.codec_ids.push_back(row.codec);
    s.positions.push_back(i);
    s.kv_slots.push_back(i);
  }
  s.sequences.push_back(slice);
  s.logit_rows.push_back(p - 1);
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
    const TtsRequest r = request_of(c);
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
                      row["codec"].is_null() ? -1 : row["codec"].get<int32_t>()});
    CHECK(prompt.rows == want);

    // Input rows, last logits and final-norm hidden of the prefill.
    KvCache cache(*backend, config.talker, KvCacheConfig{8, 16, backends::DType::F32});
    Talker talker(*backend, config, model->weights());
    const TalkerStep step = prompt_step(prompt, cache);
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


// A copy of custom_voice_small whose model.safetensors header has `from` replaced
// by `to` (same length, so offsets stay valid).
struct PatchedCheckpoint {
  fs::path dir = fs::temp_directory_path() / ("sluice-tts-patched-" + std::to_string(std::random_device{}()));
  PatchedCheckpoint(const std::string& from, const std::string& to) {
    REQUIRE(from.size() == to.size());
    fs::create_directories(dir);
    const fs::path src = kFixtures / "custom_voice_small";
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

TEST_CASE("tts load: a Base checkpoint is refused before any tensor is read") {
  const std::string error = load_error(kFixtures / "base_config");
  CHECK(error.find("config.json") != std::string::npos);
  CHECK(error.find("voice-clone") != std::string::npos);
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

TEST_CASE("tts parity: VoiceDesign 1.7B-style fixture (small_to_mtp_projection) against the official package") {
  check_fixture("voice_design_wide");
}

TEST_CASE("tts parity: CustomVoice 1.7B-style fixture, long runs (think prefix, dialect, CJK, penalty) against the "
          "official package") {
  check_fixture("custom_voice_wide");
}

}  // namespace sluice::engine::tts
