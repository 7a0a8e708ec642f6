#include "llm/agent.h"

#include "llm/context.h"
#include "llm/tools.h"

namespace longhaul::llm {
using nlohmann::json;
namespace {

Message::Role role_of(const std::string& r) {
  if (r == "system") return Message::Role::system;
  if (r == "assistant") return Message::Role::assistant;
  if (r == "tool") return Message::Role::tool;
  return Message::Role::user;
}

// The messages of a logged request body, so that a request in flight is sent again as it was.
std::vector<Message> messages_of(const json& body) {
  std::vector<Message> out;
  for (const auto& m : body.value("messages", json::array())) {
    Message msg;
    msg.role = role_of(m.value("role", "user"));
    if (m.contains("content") && m["content"].is_string()) msg.content = m["content"].get<std::string>();
    msg.tool_call_id = m.value("tool_call_id", "");
    for (const auto& c : m.value("tool_calls", json::array())) {
      ToolCall call;
      call.id = c.value("id", "");
      const json fn = c.value("function", json::object());
      call.name = fn.value("name", "");
      call.arguments = fn.value("arguments", "");
      msg.tool_calls.push_back(std::move(call));
    }
    out.push_back(std::move(msg));
  }
  return out;
}

class Agent : public Proposer {
 public:
  explicit Agent(AgentConfig config) : config_(std::move(config)), blobs_([this](const std::string& h) {
    return lab_->get_blob(h);
  }) {
    config_.client.tools = tool_defs();
    client_ = std::make_unique<ChatClient>(config_.client);
  }

  Status resume(Lab& lab) override {
    lab_ = &lab;
    sync();
    return ok_status();
  }

  std::optional<std::string> step(Lab& lab) override {
    lab_ = &lab;
    sync();
    if (int turn = pending_tools(); turn >= 0) {  // a crash left tool calls without results
      run_tools(turn);
      return std::nullopt;
    }
    if (t_.in_flight()) return request(/*reissue=*/true);
    if (config_.max_turns && t_.replies >= *config_.max_turns) return "max_turns";
    if (config_.max_tokens && t_.tokens() >= *config_.max_tokens) return "max_tokens";
    if (config_.max_cost && t_.cost >= *config_.max_cost) return "max_cost";
    return request(/*reissue=*/false);
  }

 private:
  void sync() {
    for (const Event& e : lab_->read_events(synced_)) {
      t_.apply(e);
      synced_ = e.seq;
    }
  }

  int pending_tools() {
    if (t_.turns.empty()) return -1;
    const Turn& t = t_.turns.back();
    return t.replied && t.pending_tools() ? int(t_.turns.size()) - 1 : -1;
  }

  std::optional<std::string> request(bool reissue) {
    bool force = false;
    for (int tries = 0;; ++tries) {
      std::vector<Message> messages;
      std::string body;
      json intent;
      if (reissue) {  // sent exactly as it was before the crash
        const Turn& t = *t_.in_flight();
        body = lab_->get_blob(t.context);
        messages = messages_of(json::parse(body));
        intent = {{"turn", int(t_.turns.size()) - 1}, {"context", t.context}, {"reissue_of", t.request_seq},
                  {"tokens", estimate_tokens(body.size())}};
      } else {
        ContextInputs in{lab_->state(), lab_->task(), config_, t_, *client_, blobs_};
        Rendered r = render(in);  // rendered once; again only after a compaction moved the marks
        if (auto plan = plan_compaction(in, force, r)) {
          lab_->log("compaction", {{"reason", force ? "context_length" : "budget"},
                                   {"mask_before", plan->mask_before}, {"drop_before", plan->drop_before},
                                   {"tokens_before", plan->tokens_before}, {"tokens_after", plan->tokens_after},
                                   {"context_tokens", config_.context_tokens}});
          sync();
          r = render(in);
        } else if (force) {
          lab_->log("llm_gave_up", {{"reason", "the context is too long for the model and nothing is left to compact"}});
          return "llm_error";
        }
        messages = std::move(r.messages);
        body = std::move(r.body);
        intent = {{"turn", int(t_.turns.size())}, {"context", lab_->put_blob(body)}, {"tokens", r.tokens}};
      }
      int64_t seq = lab_->log("llm_request", intent);
      sync();
      ChatResult res = client_->complete(messages, lab_->cancel_flag());
      if (res.ok()) {
        const Reply& r = res.value();
        json calls = json::array();
        for (const auto& c : r.tool_calls) {
          json call = {{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}};
          if (!c.error.empty()) call["error"] = c.error;
          else call["args"] = c.args;
          calls.push_back(std::move(call));
        }
        lab_->log("llm_reply", {{"body", lab_->put_blob(r.body)}, {"content", r.content}, {"tool_calls", calls},
                                {"finish_reason", r.finish_reason}, {"model", r.model}, {"attempts", r.attempts},
                                {"usage", {{"prompt_tokens", r.usage.prompt_tokens},
                                           {"completion_tokens", r.usage.completion_tokens},
                                           {"reported", r.usage.reported}}},
                                {"cost", r.cost}}, seq);
        sync();
        run_tools(int(t_.turns.size()) - 1);
        return std::nullopt;
      }
      const ClientError& e = res.error();
      if (e.kind == ClientError::Kind::cancelled) return std::nullopt;  // in flight; the runner stops
      lab_->log("llm_error", {{"kind", to_string(e.kind)}, {"message", e.message},
                              {"http_status", e.http_status}, {"attempts", e.attempts}}, seq);
      sync();
      if (e.kind == ClientError::Kind::malformed) return std::nullopt;  // the model hears of it
      if (e.kind == ClientError::Kind::context_length && tries < 3) {
        force = true;
        reissue = false;
        continue;
      }
      return "llm_error";
    }
  }

  void run_tools(int turn) {
    ToolEnv env{*lab_, t_, config_, blobs_};
    for (size_t i = 0; i < t_.turns[size_t(turn)].calls.size(); ++i) {
      const Turn& t = t_.turns[size_t(turn)];
      if (t.calls[i].result_seq) continue;
      int64_t call_seq = t.calls[i].call_seq;
      if (!call_seq) {
        call_seq = lab_->log("tool_call", {{"request", t.request_seq}, {"index", i}, {"id", t.calls[i].id},
                                           {"name", t.calls[i].name}, {"arguments", t.calls[i].arguments}},
                             t.reply_seq);
        sync();
      }
      ToolRecord call = t_.turns[size_t(turn)].calls[i];
      ToolOutput out = run_tool(env, call, call_seq);
      sync();  // evaluate and record_lesson log events of their own
      json result = {{"request", t_.turns[size_t(turn)].request_seq}, {"index", i}, {"call", call_seq},
                     {"name", call.name}, {"ok", out.ok}, {"result", lab_->put_blob(out.text)},
                     {"bytes", out.text.size()}};
      if (!out.files.empty() || out.replace) {
        result["files"] = out.files;
        if (out.replace) result["replace"] = true;
      }
      lab_->log("tool_result", result, call_seq);
      sync();
    }
  }

  AgentConfig config_;
  std::unique_ptr<ChatClient> client_;
  Lab* lab_ = nullptr;
  Transcript t_;
  int64_t synced_ = 0;
  Blobs blobs_;
};

}  // namespace

std::unique_ptr<Proposer> make_agent(AgentConfig config) { return std::make_unique<Agent>(std::move(config)); }

Result<std::unique_ptr<Proposer>> make_agent(const RunState& state, const Task& task) {
  auto config = agent_config_from_json(state.config.value("proposer_config", json::object()));
  if (!config) return Error{config.error()};
  return make_agent(std::move(*config));
}

}  // namespace longhaul::llm
