#include "llm/transcript.h"

namespace longhaul::llm {
using nlohmann::json;

void Transcript::apply(const Event& e) {
  static const json kNone = json::object();
  const json& p = e.payload.is_object() ? e.payload : kNone;
  auto turn_of = [&](int64_t request) -> Turn* {
    for (auto it = turns.rbegin(); it != turns.rend(); ++it)
      if (it->request_seq == request) return &*it;
    return nullptr;
  };
  if (e.type == "run_created") {
    working = p.value("base_files", std::map<std::string, std::string>{});
  } else if (e.type == "llm_request") {
    ++requests;
    if (int64_t again = p.value("reissue_of", int64_t(0)); again) {
      if (Turn* t = turn_of(again)) {
        t->request_seq = e.seq;
        t->context = p.value("context", "");
        return;
      }
    }
    Turn t;
    t.request_seq = e.seq;
    t.context = p.value("context", "");
    turns.push_back(std::move(t));
  } else if (e.type == "llm_reply") {
    Turn* t = turn_of(e.parent);
    if (!t) return;
    t->reply_seq = e.seq;
    t->replied = true;
    t->content = p.value("content", "");
    for (const auto& c : p.value("tool_calls", json::array())) {
      ToolRecord r;
      r.id = c.value("id", "");
      r.name = c.value("name", "");
      r.arguments = c.value("arguments", "");
      r.error = c.value("error", "");
      r.args = c.value("args", json::object());
      t->calls.push_back(std::move(r));
    }
    if (t->calls.empty())
      t->note = "(runtime) Your reply called no tool. Work only through the tools: read, edit, evaluate.";
    ++replies;
    const json& u = p.value("usage", kNone);
    prompt_tokens += u.value("prompt_tokens", int64_t(0));
    completion_tokens += u.value("completion_tokens", int64_t(0));
    cost += p.value("cost", 0.0);
  } else if (e.type == "llm_error") {
    Turn* t = turn_of(e.parent);
    last_error = p.value("kind", "") + ": " + p.value("message", "");
    if (!t) return;
    if (p.value("kind", "") == "malformed") {  // the model hears about it; the turn counts
      t->reply_seq = e.seq;
      t->note = "(runtime) Your last reply could not be used: " + p.value("message", "") +
                ". Reply again, calling the tools with JSON arguments.";
    } else if (!turns.empty() && &turns.back() == t) {
      turns.pop_back();  // nothing came back: the request is as if never made
    }
  } else if (e.type == "tool_call") {
    Turn* t = turn_of(p.value("request", int64_t(0)));
    size_t i = p.value("index", size_t(0));
    if (!t || i >= t->calls.size()) return;
    t->calls[i].call_seq = e.seq;
    ++tool_calls;
  } else if (e.type == "tool_result") {
    Turn* t = turn_of(p.value("request", int64_t(0)));
    size_t i = p.value("index", size_t(0));
    if (!t || i >= t->calls.size()) return;
    ToolRecord& r = t->calls[i];
    r.result_seq = e.seq;
    r.result = p.value("result", "");
    r.result_bytes = p.value("bytes", size_t(0));
    r.ok = p.value("ok", false);
    if (p.contains("files") && p["files"].is_object()) {
      auto files = p["files"].get<std::map<std::string, std::string>>();
      if (p.value("replace", false)) working = files;
      else for (const auto& [path, hash] : files) working[path] = hash;
    }
  } else if (e.type == "lesson") {
    lessons.push_back(p.value("text", ""));
    lesson_of_call[p.value("tool_call", int64_t(0))] = true;
  } else if (e.type == "compaction") {
    mask_before = std::max(mask_before, p.value("mask_before", 0));
    drop_before = std::max(drop_before, p.value("drop_before", 0));
    ++compactions;
  } else if (e.type == "proposal") {
    if (int64_t call = p.value("tool_call", int64_t(0)))
      attempt_of_call[call] = p.value("attempt", -1);
  }
}

Transcript fold_transcript(const std::vector<Event>& events) {
  Transcript t;
  for (const auto& e : events) t.apply(e);
  return t;
}

}  // namespace longhaul::llm
