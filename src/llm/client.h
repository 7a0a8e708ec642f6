// ChatClient: one OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp's server, Ollama's /v1,
// OpenAI) with tool calling, over libcurl. A call sends the conversation and the tool definitions, and
// comes back with a typed Reply (text, tool calls with their arguments parsed, usage, cost) or a typed
// ClientError. Transient faults (429, 5xx, timeouts, refused connections) are retried with exponential
// backoff and jitter under one budget per call; errors that a retry cannot fix (the context is too
// long, a bad request, a malformed reply) come back at once, for the caller to compact or to tell the
// model. The API key is read from the environment variable that the config names, at request time; it
// is never stored in a struct, written to a log, or quoted in an error. Uses: the LLM proposer; tests
// against tests/fixtures/scripted_server. See docs/llm.md for pointing it at each server.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace longhaul::llm {

// A function the model may call: a name, what it does, and a JSON schema for its arguments.
struct ToolDef {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();  // JSON schema ("type": "object", ...)
};

// One call the model asked for. `arguments` is exactly what the model wrote; `args` is it parsed when
// `error` is empty. A call the model botched (arguments not a JSON object, no name) keeps the reply
// usable: `error` says what is wrong, so the caller can hand it back to the model as the tool result.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;                         // raw JSON text as sent by the model
  nlohmann::json args = nlohmann::json::object();
  std::string error;                             // non-empty: why this call cannot run as written
};

struct Message {
  enum class Role { system, user, assistant, tool };
  Role role = Role::user;
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant turns that called tools
  std::string tool_call_id;          // tool turns: the call this is the result of

  static Message system(std::string text) { return {Role::system, std::move(text), {}, {}}; }
  static Message user(std::string text) { return {Role::user, std::move(text), {}, {}}; }
  static Message assistant(std::string text, std::vector<ToolCall> calls = {}) {
    return {Role::assistant, std::move(text), std::move(calls), {}};
  }
  static Message tool(std::string call_id, std::string result) {
    return {Role::tool, std::move(result), {}, std::move(call_id)};
  }
};

const char* to_string(Message::Role role);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  bool reported = false;  // the server sent a `usage` object
};

struct Reply {
  std::string content;               // may be empty when the model only called tools
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;         // "stop", "tool_calls", "length", ... as the server says
  Usage usage;
  double cost = 0;                   // from usage and the config's prices, in the prices' currency
  std::string model;                 // as the server names it
  std::string body;                  // the raw response body, for the event log
  int attempts = 1;                  // HTTP attempts this call took, retries included
};

struct ClientError {
  enum class Kind {
    rate_limited,    // 429; retried, honouring Retry-After
    server_error,    // 5xx; retried
    timeout,         // no complete reply within the request timeout (or a 408); retried
    connection,      // refused, reset, unresolvable, cut short; retried
    context_length,  // the prompt does not fit the model's context; never retried: compact first
    bad_request,     // any other 4xx, or a quota that is spent; never retried
    malformed,       // a 2xx whose body is not JSON or has no choices; never retried
    config,          // the client cannot send at all (API key variable unset, bad URL)
    cancelled,       // the caller's cancel flag was raised
  };
  Kind kind = Kind::malformed;
  int http_status = 0;        // 0 when no response came back
  std::string message;        // what went wrong, the server's own words where it gave any; no key
  double retry_after_s = -1;  // from a Retry-After header, when one was sent
  int attempts = 1;           // HTTP attempts made before giving up
};

const char* to_string(ClientError::Kind kind);
bool is_retryable(ClientError::Kind kind);

// Recognises a context-length complaint in an error code or message, as OpenAI
// ("context_length_exceeded", "maximum context length"), vLLM ("maximum context length", "longer than
// the maximum model length") and llama.cpp ("exceeds the available context size",
// "exceed_context_size_error") phrase it.
bool mentions_context_length(const std::string& text);

// One overall budget for a call: at most `max_attempts` HTTP attempts and `max_total_s` seconds, the
// attempts and the waits between them together. The n-th wait is base_delay_s * 2^(n-1), capped at
// max_delay_s, scaled by a uniform factor in [1 - jitter, 1]; a Retry-After longer than that wins.
// A retry whose wait would overrun the budget is not made. Attempts are cut short to the time left.
struct RetryPolicy {
  int max_attempts = 6;
  double max_total_s = 600;
  double base_delay_s = 1;
  double max_delay_s = 60;
  double jitter = 0.5;  // 0: no jitter; 1: "full jitter"
};

struct ClientConfig {
  std::string base_url = "http://localhost:8000/v1";  // the part before /chat/completions
  std::string model;
  std::string api_key_env;  // NAME of the variable holding the key; empty: send no Authorization
  double timeout_s = 300;   // one HTTP attempt, connection to last byte
  double connect_timeout_s = 10;
  std::optional<double> temperature;  // unset: the server's default (some reasoning models want that)
  int max_tokens = 4096;              // 0: not sent
  bool use_max_completion_tokens = false;  // send it as max_completion_tokens (newer OpenAI models)
  double price_input_per_mtok = 0;         // per 1,000,000 prompt tokens
  double price_output_per_mtok = 0;        // per 1,000,000 completion tokens
  std::vector<ToolDef> tools;              // offered with tool_choice "auto"; none: no tools sent
  RetryPolicy retry;
};

// Injectable for tests: how to wait, and where the jitter comes from (uniform in [0, 1)).
struct ClientHooks {
  std::function<void(double seconds)> sleep;  // default: std::this_thread::sleep_for
  std::function<double()> uniform01;          // default: seeded from the clock
  // Called before each retry's wait: the error that caused it and how long the wait will be.
  std::function<void(const ClientError& error, double delay_s)> on_retry;
};

// A Reply or the ClientError that ended the call.
class [[nodiscard]] ChatResult {
 public:
  ChatResult(Reply reply) : v_(std::move(reply)) {}
  ChatResult(ClientError error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  Reply& value() & { return std::get<0>(v_); }
  const Reply& value() const& { return std::get<0>(v_); }
  Reply&& value() && { return std::get<0>(std::move(v_)); }
  Reply* operator->() { return &std::get<0>(v_); }
  const Reply* operator->() const { return &std::get<0>(v_); }
  const ClientError& error() const { return std::get<1>(v_); }

 private:
  std::variant<Reply, ClientError> v_;
};

class ChatClient {
 public:
  explicit ChatClient(ClientConfig config, ClientHooks hooks = {});

  // Sends `messages` (with the config's tools) and returns the first good reply, or the error that
  // ended the retries. Blocks; one call at a time per client. `cancel`, when given and raised, ends
  // the call within about 100 ms with Kind::cancelled.
  ChatResult complete(const std::vector<Message>& messages,
                      const std::atomic<bool>* cancel = nullptr);

  // The request body complete() would send (no key is ever in it). Uses: logging the request intent.
  nlohmann::json request_body(const std::vector<Message>& messages) const;

  // Parses a 2xx response body into a Reply (cost from the config's prices), or Kind::malformed.
  ChatResult parse_reply(const std::string& body) const;

  const ClientConfig& config() const { return config_; }

 private:
  ChatResult attempt(const std::string& body, const std::string& key, double timeout_s,
                     const std::atomic<bool>* cancel);
  double backoff(int retry, const ClientError& error);

  ClientConfig config_;
  ClientHooks hooks_;
};

// Parses a Retry-After value: delay seconds ("2", "1.5") or an HTTP date; nullopt if neither.
std::optional<double> parse_retry_after(const std::string& value);

}  // namespace longhaul::llm
