#include "server/services/voice_store.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>

namespace sluice::server {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::string_view kFormat = "sluice.voice.v1";

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

json to_json(const ClonedVoice& v) {
  return {{"format", kFormat},          {"name", v.name},           {"consent", v.consent},
          {"created_at", v.created_at}, {"mime_type", v.mime_type}, {"file_size", v.file_size},
          {"ref_text", v.ref_text},     {"speaker_embedding", v.speaker_embedding}, {"ref_codes", v.ref_codes}};
}

// Throws json exceptions or std::runtime_error for a file that is not a voice of
// this model.
ClonedVoice from_json(const json& j, int64_t embedding_length, int64_t code_groups) {
  if (j.at("format").get<std::string>() != kFormat) throw std::runtime_error("not a sluice voice file");
  ClonedVoice v;
  v.name = j.at("name").get<std::string>();
  v.consent = j.at("consent").get<std::string>();
  v.created_at = j.at("created_at").get<int64_t>();
  v.mime_type = j.at("mime_type").get<std::string>();
  v.file_size = j.at("file_size").get<int64_t>();
  v.ref_text = j.at("ref_text").get<std::string>();
  v.speaker_embedding = j.at("speaker_embedding").get<std::vector<float>>();
  v.ref_codes = j.at("ref_codes").get<std::vector<int32_t>>();
  if (auto error = VoiceStore::name_error(v.name)) throw std::runtime_error(*error);
  if (static_cast<int64_t>(v.speaker_embedding.size()) != embedding_length)
    throw std::runtime_error("its speaker embedding has " + std::to_string(v.speaker_embedding.size()) +
                             " values; this model's has " + std::to_string(embedding_length));
  if (v.ref_codes.size() % static_cast<size_t>(code_groups) != 0)
    throw std::runtime_error("its reference codes are not whole frames of " + std::to_string(code_groups));
  return v;
}

}  // namespace

VoiceStore::VoiceStore(fs::path dir, size_t max_voices, int64_t embedding_length, int64_t code_groups)
    : dir_(std::move(dir)), max_voices_(max_voices), embedding_length_(embedding_length), code_groups_(code_groups) {
  if (!dir_.empty()) load_dir();
}

std::optional<std::string> VoiceStore::name_error(std::string_view name) {
  if (name.empty() || name.size() > 64) return "a voice name has 1 to 64 characters";
  if (!std::isalnum(static_cast<unsigned char>(name.front()))) return "a voice name starts with a letter or a digit";
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return "a voice name has only letters, digits, '_', '-' and '.'";
  }
  return std::nullopt;
}

fs::path VoiceStore::file_of(std::string_view name) const { return dir_ / (std::string(name) + ".json"); }

void VoiceStore::load_dir() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw std::runtime_error("voices_dir " + dir_.string() + ": " + ec.message());
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  if (ec) throw std::runtime_error("voices_dir " + dir_.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    try {
      std::ifstream in(file, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), {});
      ClonedVoice voice = from_json(json::parse(text), embedding_length_, code_groups_);
      if (file.stem() != voice.name) throw std::runtime_error("its name is not its file's");
      if (voices_.size() == max_voices_) {
        spdlog::warn("voices_dir {}: more voices than max_voices ({}); {} is not loaded", dir_.string(), max_voices_,
                     file.filename().string());
        continue;
      }
      voices_.push_back(std::make_shared<const ClonedVoice>(std::move(voice)));
    } catch (const std::exception& e) {
      spdlog::warn("voices_dir: skipping {}: {}", file.string(), e.what());
    }
  }
  std::sort(voices_.begin(), voices_.end(), [](const auto& a, const auto& b) { return a->name < b->name; });
}

VoiceStore::AddResult VoiceStore::add(ClonedVoice voice) {
  std::lock_guard lock(mutex_);
  for (const auto& v : voices_)
    if (same_name(v->name, voice.name)) return AddResult::duplicate;
  if (voices_.size() >= max_voices_) return AddResult::full;
  if (!dir_.empty()) {
    // Whole or nothing: a crash mid-write leaves a .tmp file, never half a voice.
    const fs::path file = file_of(voice.name);
    fs::path tmp = file;
    tmp += ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << to_json(voice).dump();
      out.flush();
      if (!out) throw std::runtime_error("cannot write " + tmp.string());
    }
    std::error_code ec;
    fs::rename(tmp, file, ec);
    if (ec) {
      fs::remove(tmp, ec);
      throw std::runtime_error("cannot write " + file.string());
    }
  }
  auto shared = std::make_shared<const ClonedVoice>(std::move(voice));
  const auto at = std::lower_bound(voices_.begin(), voices_.end(), shared->name,
                                   [](const auto& v, const std::string& name) { return v->name < name; });
  voices_.insert(at, std::move(shared));
  return AddResult::added;
}

bool VoiceStore::remove(std::string_view name) {
  std::lock_guard lock(mutex_);
  const auto it = std::find_if(voices_.begin(), voices_.end(), [&](const auto& v) { return v->name == name; });
  if (it == voices_.end()) return false;
  if (!dir_.empty()) {
    // A file left behind would bring the voice back at the next start.
    std::error_code ec;
    fs::remove(file_of((*it)->name), ec);
    if (ec) throw std::runtime_error("cannot remove " + file_of((*it)->name).string() + ": " + ec.message());
  }
  voices_.erase(it);
  return true;
}

std::shared_ptr<const ClonedVoice> VoiceStore::find(std::string_view name) const {
  std::lock_guard lock(mutex_);
  for (const auto& v : voices_)
    if (v->name == name) return v;
  return nullptr;
}

std::vector<std::shared_ptr<const ClonedVoice>> VoiceStore::list() const {
  std::lock_guard lock(mutex_);
  return voices_;
}

}  // namespace sluice::server
