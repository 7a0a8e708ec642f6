// The LLM proposer's own state, folded from the run's events like RunState is: the conversation (one
// Turn per request: the reply, its tool calls and their results), the working copy of the editable
// files (base files, then every write, edit and revert that succeeded), the lessons, the compaction
// marks, and what has been spent. A pure fold: the same log prefix gives the same Transcript, which is
// what lets a resumed run see exactly the context it saw before.
// Uses: the agent (kept up to date as it logs), resume, the context-rebuild test. Event payloads:
// docs/event-log.md ("LLM proposer").
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/event_store.h"

namespace longhaul::llm {

struct ToolRecord {
  std::string id, name, arguments;  // as the model wrote them
  std::string error;                // the client's complaint about the call, if any
  nlohmann::json args = nlohmann::json::object();
  int64_t call_seq = 0;             // its tool_call event; 0 until logged
  int64_t result_seq = 0;           // its tool_result event; 0 until logged
  std::string result;               // blob hash of the result text
  size_t result_bytes = 0;
  bool ok = false;
};

struct Turn {
  int64_t request_seq = 0;          // the latest llm_request of this turn (a re-issue replaces it)
  std::string context;              // blob hash of the request body sent
  int64_t reply_seq = 0;            // llm_reply, or the llm_error that ended the turn; 0 in flight
  bool replied = false;             // an assistant message came back
  std::string content;              // its text
  std::vector<ToolRecord> calls;
  std::string note;                 // what the runtime tells the model after this turn
  bool pending_tools() const {
    for (const auto& c : calls)
      if (!c.result_seq) return true;
    return false;
  }
};

struct Transcript {
  std::vector<Turn> turns;                       // finished or in flight; failed requests removed
  std::map<std::string, std::string> working;    // path -> blob hash
  std::vector<std::string> lessons;
  std::map<int64_t, int> attempt_of_call;        // evaluate's tool_call seq -> attempt index
  std::map<int64_t, bool> lesson_of_call;        // record_lesson calls already logged
  int mask_before = 0;                           // tool outputs of turns before this are stubs
  int drop_before = 0;                           // turns before this are out of the window
  int compactions = 0;
  int64_t replies = 0, prompt_tokens = 0, completion_tokens = 0, tool_calls = 0, requests = 0;
  double cost = 0;
  std::string last_error;                        // of the last llm_error, for the stop message

  void apply(const Event& e);
  // The turn whose request is in flight (no reply or error yet), or nullptr.
  Turn* in_flight() { return !turns.empty() && !turns.back().reply_seq ? &turns.back() : nullptr; }
  Turn* with_pending_tools() {
    return !turns.empty() && turns.back().replied && turns.back().pending_tools() ? &turns.back() : nullptr;
  }
  int64_t tokens() const { return prompt_tokens + completion_tokens; }
};

Transcript fold_transcript(const std::vector<Event>& events);

}  // namespace longhaul::llm
