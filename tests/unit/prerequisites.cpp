#include "tests/unit/prerequisites.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

namespace sluice::testing {
namespace {

std::mutex g_mutex;
std::vector<std::string> g_skipped;  // guarded by g_mutex
std::string g_current_test;          // guarded by g_mutex

// Remembers the running test's name, so the summary names tests, not helpers.
class CurrentTestListener : public doctest::IReporter {
 public:
  explicit CurrentTestListener(const doctest::ContextOptions&) {}
  void test_case_start(const doctest::TestCaseData& test) override {
    std::lock_guard lock(g_mutex);
    g_current_test = test.m_name;
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("sluice_current_test", 1, CurrentTestListener);

std::string required_by(Prerequisite kind) {
  return kind == Prerequisite::gpu ? "SLUICE_REQUIRE_GPU" : "SLUICE_REQUIRE_MODELS";
}

bool is_required(Prerequisite kind) {
  const char* value = std::getenv(required_by(kind).c_str());
  return value != nullptr && std::string_view(value) == "1";
}

}  // namespace

bool has_prerequisite(Prerequisite kind, bool available, const std::string& what, const std::string& why) {
  if (available) return true;
  if (is_required(kind)) FAIL(what << ": " << why << " (required: " << required_by(kind) << "=1)");
  MESSAGE("SKIPPED " << what << ": " << why);
  std::lock_guard lock(g_mutex);
  g_skipped.push_back("\"" + g_current_test + "\" (" + what + "): " + why);
  return false;
}

bool has_model_file(const std::filesystem::path& path, const std::string& what, const std::string& fetch) {
  return has_prerequisite(Prerequisite::model_file, std::filesystem::exists(path), what,
                          path.string() + " is missing (" + fetch + " fetches it)");
}

void print_skip_summary() {
  std::lock_guard lock(g_mutex);
  if (g_skipped.empty()) return;
  std::printf("[sluice] %zu test(s) skipped for a missing prerequisite:\n", g_skipped.size());
  for (const std::string& line : g_skipped) std::printf("[sluice]   %s\n", line.c_str());
}

}  // namespace sluice::testing
