// What the model sees at each request, built from the folded log and nothing else: the system prompt,
// then one user message holding the goal card and the runtime-written memory (attempt ledger,
// lessons, the best candidate's source), then the recent turns verbatim (tool outputs of turns before
// Transcript::mask_before as one-line stubs; turns before drop_before left out: they live on in the
// ledger). Rendering is a pure function of (RunState, Transcript, Task, config, blobs), so rebuilding
// the context of any logged request from its log prefix gives the same bytes.
// Tokens are estimated as ceil(bytes / 4) of the whole request body (docs/llm.md).
// Uses: the agent; the context-rebuild test; benchmarks.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "llm/agent_config.h"
#include "llm/client.h"
#include "llm/transcript.h"
#include "run/state.h"
#include "task/task.h"

namespace longhaul::llm {

// Blob contents by hash, cached; derived data (change sizes) memoised alongside. Pure: caching
// changes only how fast, never what.
class Blobs {
 public:
  explicit Blobs(std::function<std::string(const std::string&)> get) : get_(std::move(get)) {}
  const std::string& get(const std::string& hash);
  std::map<std::string, std::string> files(const std::map<std::string, std::string>& hashes);
  std::unordered_map<std::string, std::string> change_of;  // candidate hash -> "+a/-r"

 private:
  std::function<std::string(const std::string&)> get_;
  std::unordered_map<std::string, std::string> cache_;
};

struct ContextInputs {
  const RunState& run;
  const Task& task;
  const AgentConfig& config;
  const Transcript& transcript;
  const ChatClient& client;  // for the request body: model, tools, sampling settings
  Blobs& blobs;
};

int64_t estimate_tokens(size_t bytes);

const std::string& system_prompt();
std::string goal_card(const ContextInputs& in);
std::string memory(const ContextInputs& in, size_t max_bytes);
// A tool's output as the window shows it once masked.
std::string masked_stub(const ToolRecord& r);

struct Rendered {
  std::vector<Message> messages;
  std::string body;  // request_body(messages).dump(): what is sent and logged
  int64_t tokens = 0;
};
Rendered render(const ContextInputs& in, int mask_before, int drop_before);
Rendered render(const ContextInputs& in);  // at the transcript's own marks

// Where to put the marks so that the request fits: nullopt when it fits as it is (and !force).
// Masks tool outputs oldest first, then drops old turns, until the estimate is at most 70% of the
// budget (so that compactions are rare), keeping the newest turn. `force` (after a context_length
// error) compacts to half of the current size at most.
struct CompactionPlan {
  int mask_before = 0, drop_before = 0;
  int64_t tokens_before = 0, tokens_after = 0;
};
std::optional<CompactionPlan> plan_compaction(const ContextInputs& in, bool force);
// The same, given render(in) already made (the agent renders once per request when nothing is due).
std::optional<CompactionPlan> plan_compaction(const ContextInputs& in, bool force, const Rendered& now);

// The result text of an evaluate call, from the ledger: the same live and on resume.
std::string describe_attempt(const RunState& run, const Attempt& a, Blobs& blobs);

}  // namespace longhaul::llm
