#include "server/metrics/speculative_metrics.h"

#include <algorithm>
#include <map>
#include <utility>

namespace sluice::server {
namespace {

// A family is shared by every model on a registry (registered once: a registry built
// with InsertBehavior::Throw refuses a second registration of a name) and leaves the
// registry with its last model, so that an unloaded model leaves no empty family
// behind (a scrape would still show its HELP and TYPE). Construction and destruction
// only.
struct SharedFamily {
  prometheus::Family<prometheus::Counter>* family = nullptr;
  int users = 0;
};

std::mutex& families_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::pair<prometheus::Registry*, std::string>, SharedFamily>& shared_families() {
  static std::map<std::pair<prometheus::Registry*, std::string>, SharedFamily> m;
  return m;
}

prometheus::Family<prometheus::Counter>& acquire(prometheus::Registry& registry, const std::string& name,
                                                  const char* help) {
  std::lock_guard lock(families_mutex());
  SharedFamily& shared = shared_families()[{&registry, name}];
  if (shared.family == nullptr) shared.family = &prometheus::BuildCounter().Name(name).Help(help).Register(registry);
  ++shared.users;
  return *shared.family;
}

void release(prometheus::Registry& registry, prometheus::Family<prometheus::Counter>& family) {
  std::lock_guard lock(families_mutex());
  const auto it = shared_families().find({&registry, family.GetName()});
  if (it == shared_families().end() || --it->second.users > 0) return;
  shared_families().erase(it);
  registry.Remove(family);
}

}  // namespace

SpeculativeMetrics::SpeculativeMetrics(prometheus::Registry& registry, std::string model_name, bool with_vllm_names)
    : registry_(registry), model_name_(std::move(model_name)) {
  std::vector<std::string> prefixes = {"sluice_"};
  if (with_vllm_names) prefixes.emplace_back("vllm:");
  const prometheus::Labels labels = {{"model_name", model_name_}};
  for (const std::string& prefix : prefixes) {
    Naming n{};
    n.drafts_family = &acquire(registry, prefix + "spec_decode_num_drafts_total",
                               "Speculative decoding: sequences whose drafts a step verified");
    n.draft_tokens_family = &acquire(registry, prefix + "spec_decode_num_draft_tokens_total",
                                     "Speculative decoding: drafted tokens verified");
    n.accepted_family = &acquire(registry, prefix + "spec_decode_num_accepted_tokens_total",
                                 "Speculative decoding: drafted tokens the model accepted");
    n.per_pos_family = &acquire(registry, prefix + "spec_decode_num_accepted_tokens_per_pos_total",
                                "Speculative decoding: drafted tokens accepted, by position in the draft");
    n.drafts = &n.drafts_family->Add(labels);
    n.draft_tokens = &n.draft_tokens_family->Add(labels);
    n.accepted = &n.accepted_family->Add(labels);
    namings_.push_back(n);
  }
}

SpeculativeMetrics::~SpeculativeMetrics() {
  for (Naming& n : namings_) {
    n.drafts_family->Remove(n.drafts);
    n.draft_tokens_family->Remove(n.draft_tokens);
    n.accepted_family->Remove(n.accepted);
    for (prometheus::Counter* c : n.per_pos) n.per_pos_family->Remove(c);
    for (auto* family : {n.drafts_family, n.draft_tokens_family, n.accepted_family, n.per_pos_family})
      release(registry_, *family);
  }
}

void SpeculativeMetrics::refresh(const engine::SpeculationStats& stats) {
  std::lock_guard lock(mutex_);
  auto add = [](prometheus::Counter& c, uint64_t now, uint64_t last) {
    if (now > last) c.Increment(static_cast<double>(now - last));
  };
  const size_t num_pos = stats.num_accepted_tokens_per_pos.size();
  last_.num_accepted_tokens_per_pos.resize(std::max(num_pos, last_.num_accepted_tokens_per_pos.size()), 0);
  for (Naming& n : namings_) {
    add(*n.drafts, stats.num_drafts, last_.num_drafts);
    add(*n.draft_tokens, stats.num_draft_tokens, last_.num_draft_tokens);
    add(*n.accepted, stats.num_accepted_tokens, last_.num_accepted_tokens);
    while (n.per_pos.size() < num_pos)
      n.per_pos.push_back(&n.per_pos_family->Add(
          {{"model_name", model_name_}, {"position", std::to_string(n.per_pos.size())}}));
    for (size_t i = 0; i < num_pos; ++i)
      add(*n.per_pos[i], stats.num_accepted_tokens_per_pos[i], last_.num_accepted_tokens_per_pos[i]);
  }
  last_.num_drafts = std::max(last_.num_drafts, stats.num_drafts);
  last_.num_draft_tokens = std::max(last_.num_draft_tokens, stats.num_draft_tokens);
  last_.num_accepted_tokens = std::max(last_.num_accepted_tokens, stats.num_accepted_tokens);
  for (size_t i = 0; i < num_pos; ++i)
    last_.num_accepted_tokens_per_pos[i] = std::max(last_.num_accepted_tokens_per_pos[i], stats.num_accepted_tokens_per_pos[i]);
}

}  // namespace sluice::server
