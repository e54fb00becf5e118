#pragma once
// The voices uploaded to one Base (voice-cloning) model through POST
// /v1/audio/voices: per voice its speaker embedding and, for an ICL voice, the
// reference's codec codes and transcript, computed once at upload. Kept in memory
// and, when a folder is given, one JSON file per voice (<folder>/<name>.json,
// written whole then renamed into place), read back at start, so voices survive a
// restart. Bounded by max_voices.
//
// Thread-safe: every method may be called from any thread. Found voices are
// shared and immutable, so a request keeps its voice while another deletes it.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::server {

struct ClonedVoice {
  std::string name;
  std::string consent;        // the consent id the uploader gave (kept, not checked)
  int64_t created_at = 0;     // Unix seconds
  std::string mime_type;      // of the uploaded file, as sent
  int64_t file_size = 0;      // bytes of the uploaded file
  std::string ref_text;       // ICL transcript; empty for an x-vector voice
  std::vector<float> speaker_embedding;  // [talker width]
  std::vector<int32_t> ref_codes;        // [frames, code groups]; empty for an x-vector voice

  bool is_icl() const { return !ref_codes.empty(); }
};

class VoiceStore {
 public:
  enum class AddResult { added, duplicate, full };

  // `dir` empty: memory only. Otherwise the folder is created if missing and its
  // voice files are read: a file that is not a voice of this model (unreadable, or
  // an embedding of another length) is skipped with a warning, never deleted.
  // Throws std::runtime_error when the folder cannot be created or listed.
  VoiceStore(std::filesystem::path dir, size_t max_voices, int64_t embedding_length, int64_t code_groups);

  // Why `name` cannot name a voice (1-64 of A-Z a-z 0-9 _ - ., starting with a
  // letter or digit: it is also a file name); nullopt when it can.
  static std::optional<std::string> name_error(std::string_view name);

  // duplicate: a voice of that name exists (names compare case-insensitively, as
  // file systems may); full: max_voices are stored. Writes the file before the
  // voice becomes visible; throws std::runtime_error when it cannot be written.
  AddResult add(ClonedVoice voice);
  // false when no such voice. Throws std::runtime_error (the voice kept) when its
  // file cannot be removed.
  bool remove(std::string_view name);
  std::shared_ptr<const ClonedVoice> find(std::string_view name) const;
  std::vector<std::shared_ptr<const ClonedVoice>> list() const;  // by name
  size_t max_voices() const { return max_voices_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  void load_dir();
  std::filesystem::path file_of(std::string_view name) const;

  const std::filesystem::path dir_;
  const size_t max_voices_;
  const int64_t embedding_length_;
  const int64_t code_groups_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const ClonedVoice>> voices_;  // sorted by name; guarded
};

}  // namespace sluice::server
