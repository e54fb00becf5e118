#pragma once
// `sluice bench --tts ... --tts-streams 1,4,16`: N utterances at once through a real
// SpeechEngine (the server's scheduler, batched talker and code predictor, codec on
// its own thread and backend), each --tts-frames frames with EOS ignored. Prints
// time to first audio (p50, max), per-stream and aggregate real-time factors.
#include <nlohmann/json.hpp>

#include "engine/tts/codec/codec_decoder.h"
#include "engine/tts/model/tts_model.h"
#include "server/cli/bench_command.h"

namespace sluice::server {

// `codec` must be on a backend of its own (not the model's). Returns one JSON row
// per stream count.
nlohmann::ordered_json run_tts_streams(const BenchOptions& options, const engine::tts::TtsModel& model,
                                       engine::tts::CodecDecoder& codec);

}  // namespace sluice::server
