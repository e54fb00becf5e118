#pragma once
// `sluice bench --tts 0.6b|1.7b|DIR`: the speech pipeline (talker, code predictor,
// codec decoder) on random weights at a published size, or on a checkpoint folder,
// one utterance streamed frame by frame: ms per frame per stage, time to first
// audio and the real-time factor. Options come from BenchOptions (bench_command.h).

namespace sluice::server {

struct BenchOptions;

// Returns the exit code as run_bench does.
int run_tts_bench(const BenchOptions& options);

}  // namespace sluice::server
