// Uploaded voices: names, limits, duplicates, and the files that bring them back
// after a restart (and the files that must not).
#include "server/services/voice_store.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace unit_server_services_test_voice_store {

using namespace sluice::server;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kWidth = 4;
constexpr int64_t kGroups = 2;

ClonedVoice voice(std::string name, bool icl = true) {
  ClonedVoice v;
  v.name = std::move(name);
  v.consent = "consent-1";
  v.created_at = 1700000000;
  v.mime_type = "audio/wav";
  v.file_size = 1234;
  // Values whose decimal forms are long: the file must give back the same floats.
  v.speaker_embedding = {0.1f, -1.0f / 3.0f, 3.4e38f, 1e-45f};
  if (icl) {
    v.ref_text = "Hello there, \"quoted\" and ünïcode.";
    v.ref_codes = {1, 2, 3, 4, 5, 6};
  }
  return v;
}

struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("sluice-voices-" + std::to_string(std::random_device{}()))) {}
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

}  // namespace

TEST_CASE("voice store: names are 1-64 file-safe characters") {
  CHECK_FALSE(VoiceStore::name_error("my_voice-1.v2"));
  CHECK_FALSE(VoiceStore::name_error(std::string(64, 'a')));
  CHECK(VoiceStore::name_error(""));
  CHECK(VoiceStore::name_error(std::string(65, 'a')));
  CHECK(VoiceStore::name_error(".hidden"));
  CHECK(VoiceStore::name_error("-flag"));
  CHECK(VoiceStore::name_error("../x"));
  CHECK(VoiceStore::name_error("a/b"));
  CHECK(VoiceStore::name_error("a b"));
  CHECK(VoiceStore::name_error("ünï"));
}

TEST_CASE("voice store in memory: add, find, list by name, remove; duplicates and the limit refused") {
  VoiceStore store({}, 2, kWidth, kGroups);
  CHECK(store.add(voice("zed")) == VoiceStore::AddResult::added);
  CHECK(store.add(voice("amy", false)) == VoiceStore::AddResult::added);
  CHECK(store.add(voice("AMY")) == VoiceStore::AddResult::duplicate);  // case-insensitive, as file systems may be
  CHECK(store.add(voice("third")) == VoiceStore::AddResult::full);
  const auto list = store.list();
  REQUIRE(list.size() == 2);
  CHECK(list[0]->name == "amy");
  CHECK(list[1]->name == "zed");
  const auto amy = store.find("amy");
  REQUIRE(amy);
  CHECK_FALSE(amy->is_icl());
  CHECK(store.find("zed")->is_icl());
  CHECK_FALSE(store.find("Amy"));  // lookups are exact
  CHECK(store.remove("amy"));
  CHECK_FALSE(store.remove("amy"));
  CHECK(amy->name == "amy");  // a request holding the voice keeps it
  CHECK(store.add(voice("third")) == VoiceStore::AddResult::added);
}

TEST_CASE("voice store on disk: voices come back after a restart exactly; deleted ones do not") {
  TempDir dir;
  {
    VoiceStore store(dir.path / "nested", 8, kWidth, kGroups);
    CHECK(store.add(voice("keep")) == VoiceStore::AddResult::added);
    CHECK(store.add(voice("xvec", false)) == VoiceStore::AddResult::added);
    CHECK(store.add(voice("gone")) == VoiceStore::AddResult::added);
    CHECK(store.remove("gone"));
  }
  CHECK(fs::exists(dir.path / "nested" / "keep.json"));
  CHECK_FALSE(fs::exists(dir.path / "nested" / "gone.json"));
  VoiceStore again(dir.path / "nested", 8, kWidth, kGroups);
  REQUIRE(again.list().size() == 2);
  const ClonedVoice want = voice("keep");
  const auto got = again.find("keep");
  REQUIRE(got);
  CHECK(got->speaker_embedding == want.speaker_embedding);  // bit for bit
  CHECK(got->ref_codes == want.ref_codes);
  CHECK(got->ref_text == want.ref_text);
  CHECK(got->consent == want.consent);
  CHECK(got->created_at == want.created_at);
  CHECK(got->mime_type == want.mime_type);
  CHECK(got->file_size == want.file_size);
  CHECK_FALSE(again.find("xvec")->is_icl());
}

TEST_CASE("voice store on disk: files of another model or broken ones are skipped, not loaded or deleted") {
  TempDir dir;
  {
    VoiceStore store(dir.path, 8, kWidth, kGroups);
    CHECK(store.add(voice("good")) == VoiceStore::AddResult::added);
  }
  std::ofstream(dir.path / "broken.json") << "{not json";
  std::ofstream(dir.path / "notes.txt") << "not a voice";
  fs::copy_file(dir.path / "good.json", dir.path / "renamed.json");  // its name is not its file's
  {
    VoiceStore wider(dir.path, 8, kWidth + 1, kGroups);  // another model's embedding width
    CHECK(wider.list().empty());
  }
  VoiceStore store(dir.path, 8, kWidth, kGroups);
  REQUIRE(store.list().size() == 1);
  CHECK(store.list()[0]->name == "good");
  CHECK(fs::exists(dir.path / "broken.json"));
  VoiceStore small(dir.path, 0, kWidth, kGroups);  // max_voices below what the folder holds
  CHECK(small.list().empty());
}
}  // namespace unit_server_services_test_voice_store
