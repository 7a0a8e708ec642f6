#include "llm/context.h"

#include <algorithm>

namespace longhaul::llm {
using nlohmann::json;

const std::string& Blobs::get(const std::string& hash) {
  auto it = cache_.find(hash);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(hash, get_(hash)).first->second;
}

std::map<std::string, std::string> Blobs::files(const std::map<std::string, std::string>& hashes) {
  std::map<std::string, std::string> out;
  for (const auto& [path, hash] : hashes) out[path] = get(hash);
  return out;
}

int64_t estimate_tokens(size_t bytes) { return int64_t((bytes + 3) / 4); }

const std::string& system_prompt() {
  static const std::string kPrompt =
      "You are an optimization engineer working inside longhaul, a runtime that measures every "
      "candidate you submit. Your job: make the task's metric better than the best so far, within the "
      "rules, for as long as the budget lasts.\n"
      "Work only through the tools. read_file and list_files show the files; write_file and edit_file "
      "change your working copy of the editable files (edit_file needs an exact, unique search text); "
      "evaluate builds, checks and measures the working copy and tells you the outcome and the metric "
      "against the baseline and the best; show_best shows the best candidate and the diff of your "
      "working copy to it; revert sets the working copy to any earlier attempt; record_lesson keeps a "
      "lesson in the memory that every request carries.\n"
      "Give every evaluate call a one-sentence hypothesis: what you changed and why it should help. "
      "The runtime keeps the attempt ledger, the lessons and the best source for you, and may mask old "
      "tool outputs or drop old turns from this conversation to stay within its context budget; what "
      "matters is always in the goal card and the memory at the top.\n"
      "A correct answer comes first: an incorrect or non-building candidate never counts. Make one "
      "focused change at a time, evaluate it, and keep what works.";
  return kPrompt;
}

std::string masked_stub(const ToolRecord& r) {
  return "[" + r.name + " output masked by the runtime to save context: " + std::to_string(r.result_bytes) +
         " bytes, " + (r.ok ? "ok" : "error") + "; call the tool again if you need it]";
}

namespace {

// The arguments as they go back to the server: what the model wrote when it is a JSON object, else
// "{}" (some servers re-parse the history; the tool result quotes what was wrong).
std::string sent_arguments(const ToolRecord& r) {
  if (!r.error.empty() || r.arguments.find_first_not_of(" \t\r\n") == std::string::npos) return "{}";
  return r.arguments;
}

void append_turn(const ContextInputs& in, const Turn& turn, bool masked, std::vector<Message>& out) {
  if (!turn.reply_seq) return;  // in flight: nothing to show yet
  if (turn.replied) {
    std::vector<ToolCall> calls;
    for (const auto& r : turn.calls) {
      ToolCall c;
      c.id = r.id;
      c.name = r.name.empty() ? "unnamed" : r.name;
      c.arguments = sent_arguments(r);
      calls.push_back(std::move(c));
    }
    out.push_back(Message::assistant(turn.content, std::move(calls)));
    for (const auto& r : turn.calls) {
      std::string text = !r.result_seq ? std::string("[no result: the call was not run]")
                         : masked      ? masked_stub(r)
                                       : in.blobs.get(r.result);
      out.push_back(Message::tool(r.id, std::move(text)));
    }
  }
  if (!turn.note.empty()) out.push_back(Message::user(turn.note));
}

// The serialised size of a message inside "messages": [...], as the client writes it.
size_t message_bytes(const Message& m) {
  json j = {{"role", to_string(m.role)}};
  if (m.role == Message::Role::assistant && !m.tool_calls.empty()) {
    j["content"] = m.content.empty() ? json(nullptr) : json(m.content);
    json calls = json::array();
    for (const auto& c : m.tool_calls)
      calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    j["tool_calls"] = std::move(calls);
  } else {
    j["content"] = m.content;
  }
  if (m.role == Message::Role::tool) j["tool_call_id"] = m.tool_call_id;
  return j.dump().size() + 1;  // and its comma
}

size_t memory_bytes(const AgentConfig& c) { return size_t(c.context_tokens) * 4 * 35 / 100; }

std::vector<Message> head(const ContextInputs& in) {
  return {Message::system(system_prompt()),
          Message::user(goal_card(in) + "\n" + memory(in, memory_bytes(in.config)))};
}

}  // namespace

Rendered render(const ContextInputs& in, int mask_before, int drop_before) {
  Rendered r;
  r.messages = head(in);
  const auto& turns = in.transcript.turns;
  for (int i = std::max(0, drop_before); i < int(turns.size()); ++i)
    append_turn(in, turns[size_t(i)], i < mask_before, r.messages);
  r.body = in.client.request_body(r.messages).dump();
  r.tokens = estimate_tokens(r.body.size());
  return r;
}

Rendered render(const ContextInputs& in) {
  return render(in, in.transcript.mask_before, in.transcript.drop_before);
}

std::optional<CompactionPlan> plan_compaction(const ContextInputs& in, bool force) {
  return plan_compaction(in, force, render(in));
}

std::optional<CompactionPlan> plan_compaction(const ContextInputs& in, bool force, const Rendered& now) {
  const Transcript& t = in.transcript;
  const double limit = double(in.config.context_tokens);
  if (!force && double(now.tokens) <= limit) return std::nullopt;
  double target = 0.7 * limit;
  if (force) target = std::min(target, 0.5 * double(now.tokens));
  const int n = int(t.turns.size());
  const int drop0 = std::max(0, t.drop_before);
  // Per-turn sizes, unmasked and masked, for arithmetic instead of re-rendering.
  std::vector<int64_t> full(size_t(n), 0), masked(size_t(n), 0);
  for (int i = drop0; i < n; ++i) {
    std::vector<Message> a, b;
    append_turn(in, t.turns[size_t(i)], false, a);
    append_turn(in, t.turns[size_t(i)], true, b);
    for (const auto& m : a) full[size_t(i)] += int64_t(message_bytes(m));
    for (const auto& m : b) masked[size_t(i)] += int64_t(message_bytes(m));
  }
  int mask = std::max(t.mask_before, drop0), drop = drop0;
  int64_t window = 0;
  for (int i = drop; i < n; ++i) window += i < mask ? masked[size_t(i)] : full[size_t(i)];
  int64_t head_bytes = int64_t(now.body.size()) - window;
  auto tokens = [&] { return double(estimate_tokens(size_t(std::max<int64_t>(0, head_bytes + window)))); };
  while (tokens() > target && mask < n - 1) {  // tool outputs leave first, oldest first
    window -= full[size_t(mask)] - masked[size_t(mask)];
    ++mask;
  }
  while (tokens() > target && drop < n - 1) {  // then old turns fold into the ledger
    window -= drop < mask ? masked[size_t(drop)] : full[size_t(drop)];
    ++drop;
    mask = std::max(mask, drop);
  }
  if (tokens() > target && mask < n) mask = n;  // at last the newest turn's outputs too
  CompactionPlan plan;
  plan.mask_before = mask;
  plan.drop_before = drop;
  plan.tokens_before = now.tokens;
  plan.tokens_after = render(in, mask, drop).tokens;
  if (plan.mask_before == t.mask_before && plan.drop_before == t.drop_before) return std::nullopt;  // nothing left
  return plan;
}

}  // namespace longhaul::llm
