#include "llm/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

namespace longhaul::llm {

using nlohmann::json;

namespace {

constexpr size_t kMaxBodyBytes = 64u << 20;  // a reply larger than this is cut off (malformed)
constexpr size_t kMaxQuoted = 600;           // how much of a server's error body an error quotes

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string clip(const std::string& s, size_t n = kMaxQuoted) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

// Replaces every occurrence of the key with a marker, so that no error can quote it (a server that
// echoes headers, a proxy's error page).
std::string redact(std::string s, const std::string& key) {
  if (key.empty()) return s;
  for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at))
    s.replace(at, key.size(), "[redacted]");
  return s;
}

void wipe(std::string& s) {
  std::fill(s.begin(), s.end(), '\0');
  s.clear();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string chat_url(const std::string& base) {
  std::string url = base;
  while (!url.empty() && url.back() == '/') url.pop_back();
  const std::string suffix = "/chat/completions";
  if (url.size() < suffix.size() || url.compare(url.size() - suffix.size(), suffix.size(), suffix) != 0)
    url += suffix;
  return url;
}

// What a non-2xx body says: "error": {"message", "code", "type"} (OpenAI, llama.cpp, newer vLLM),
// top-level "message"/"code" (older vLLM), "error": "text" (Ollama), "detail" (FastAPI servers).
struct ServerSays {
  std::string message;
  std::string code;  // code and type, for recognising the kind
};

std::string as_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

ServerSays server_says(const std::string& body) {
  ServerSays says;
  json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    const json* e = j.contains("error") ? &j["error"] : nullptr;
    if (e && e->is_object()) {
      if (e->contains("message")) says.message = as_text((*e)["message"]);
      if (e->contains("code")) says.code += as_text((*e)["code"]) + " ";
      if (e->contains("type")) says.code += as_text((*e)["type"]);
    } else if (e && e->is_string()) {
      says.message = e->get<std::string>();
    } else {
      if (j.contains("message")) says.message = as_text(j["message"]);
      else if (j.contains("detail")) says.message = as_text(j["detail"]);
      if (j.contains("code")) says.code += as_text(j["code"]) + " ";
      if (j.contains("type")) says.code += as_text(j["type"]);
    }
  }
  if (says.message.empty()) says.message = trim(body);
  says.message = clip(says.message);
  return says;
}

std::string message_content(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array()) {  // [{"type": "text", "text": "..."}, ...]
    std::string text;
    for (const auto& part : content)
      if (part.is_object() && part.contains("text") && part["text"].is_string())
        text += part["text"].get<std::string>();
    return text;
  }
  return "";
}

ToolCall parse_tool_call(const json& tc, size_t index) {
  ToolCall call;
  if (tc.is_object() && tc.contains("id") && tc["id"].is_string()) call.id = tc["id"].get<std::string>();
  if (call.id.empty()) call.id = "call_" + std::to_string(index);  // some servers omit it
  const json* fn = tc.is_object() && tc.contains("function") ? &tc["function"] : nullptr;
  if (!fn || !fn->is_object()) {
    call.error = "tool call has no function";
    return call;
  }
  if (fn->contains("name") && (*fn)["name"].is_string()) call.name = (*fn)["name"].get<std::string>();
  if (fn->contains("arguments")) {
    const json& a = (*fn)["arguments"];
    call.arguments = a.is_string() ? a.get<std::string>() : a.dump();  // some servers send an object
  }
  if (call.name.empty()) {
    call.error = "tool call has no function name";
    return call;
  }
  std::string raw = trim(call.arguments);
  if (raw.empty()) return call;  // a call without arguments: {}
  try {
    json args = json::parse(raw);
    if (!args.is_object()) {
      call.error = std::string("tool call arguments must be a JSON object, not ") + args.type_name();
      return call;
    }
    call.args = std::move(args);
  } catch (const json::parse_error& e) {
    call.error = std::string("tool call arguments are not valid JSON: ") + e.what();
  }
  return call;
}

json message_json(const Message& m) {
  json j = {{"role", to_string(m.role)}};
  if (m.role == Message::Role::assistant && !m.tool_calls.empty()) {
    j["content"] = m.content.empty() ? json(nullptr) : json(m.content);
    json calls = json::array();
    for (const auto& c : m.tool_calls)
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    j["tool_calls"] = std::move(calls);
  } else {
    j["content"] = m.content;
  }
  if (m.role == Message::Role::tool) j["tool_call_id"] = m.tool_call_id;
  return j;
}

// libcurl callbacks.
struct Transfer {
  std::string body;
  std::string retry_after;     // Retry-After
  std::string retry_after_ms;  // retry-after-ms (OpenAI)
  bool too_big = false;
  const std::atomic<bool>* cancel = nullptr;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  if (t->body.size() + bytes > kMaxBodyBytes) {
    t->too_big = true;
    return 0;  // aborts the transfer
  }
  t->body.append(data, bytes);
  return bytes;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  std::string line(data, bytes);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = lower(trim(line.substr(0, colon)));
    std::string value = trim(line.substr(colon + 1));
    if (name == "retry-after") t->retry_after = value;
    if (name == "retry-after-ms") t->retry_after_ms = value;
  } else if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a 100 Continue): reset
    t->retry_after.clear();
    t->retry_after_ms.clear();
  }
  return bytes;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel && t->cancel->load() ? 1 : 0;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

ClientError error(ClientError::Kind kind, std::string message, int status = 0) {
  ClientError e;
  e.kind = kind;
  e.message = std::move(message);
  e.http_status = status;
  return e;
}

}  // namespace

const char* to_string(Message::Role role) {
  switch (role) {
    case Message::Role::system: return "system";
    case Message::Role::user: return "user";
    case Message::Role::assistant: return "assistant";
    case Message::Role::tool: return "tool";
  }
  return "user";
}

const char* to_string(ClientError::Kind kind) {
  using K = ClientError::Kind;
  switch (kind) {
    case K::rate_limited: return "rate_limited";
    case K::server_error: return "server_error";
    case K::timeout: return "timeout";
    case K::connection: return "connection";
    case K::context_length: return "context_length";
    case K::bad_request: return "bad_request";
    case K::malformed: return "malformed";
    case K::config: return "config";
    case K::cancelled: return "cancelled";
  }
  return "unknown";
}

bool is_retryable(ClientError::Kind kind) {
  using K = ClientError::Kind;
  return kind == K::rate_limited || kind == K::server_error || kind == K::timeout ||
         kind == K::connection;
}

bool mentions_context_length(const std::string& text) {
  static const char* const phrases[] = {
      "context_length_exceeded",           // OpenAI's code
      "maximum context length",            // OpenAI, vLLM: "This model's maximum context length is"
      "exceeds the context window",        // OpenAI: "Your input exceeds the context window of ..."
      "context window exceeded",
      "maximum model length",              // vLLM: "... is longer than the maximum model length of"
      "exceeds the available context size",  // llama.cpp server
      "exceed_context_size_error",           // llama.cpp server's error type
      "context length exceeded",
      "exceeds the context length",
      "exceeds context length",
      "prompt is too long",
  };
  std::string t = lower(text);
  for (const char* p : phrases)
    if (t.find(p) != std::string::npos) return true;
  return false;
}

std::optional<double> parse_retry_after(const std::string& value) {
  std::string v = trim(value);
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  double s = std::strtod(v.c_str(), &end);
  if (end && *end == '\0' && std::isfinite(s)) return std::max(0.0, s);
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

ChatClient::ChatClient(ClientConfig config, ClientHooks hooks)
    : config_(std::move(config)), hooks_(std::move(hooks)) {
  init_curl_once();
  if (!hooks_.sleep)
    hooks_.sleep = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); };
  if (!hooks_.uniform01) {
    auto rng = std::make_shared<std::mt19937_64>(
        uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ std::random_device{}());
    hooks_.uniform01 = [rng] { return double((*rng)() >> 11) * 0x1.0p-53; };
  }
}

json ChatClient::request_body(const std::vector<Message>& messages) const {
  json body = {{"model", config_.model}};
  json msgs = json::array();
  for (const auto& m : messages) msgs.push_back(message_json(m));
  body["messages"] = std::move(msgs);
  if (config_.temperature) body["temperature"] = *config_.temperature;
  if (config_.max_tokens > 0)
    body[config_.use_max_completion_tokens ? "max_completion_tokens" : "max_tokens"] = config_.max_tokens;
  if (!config_.tools.empty()) {
    json tools = json::array();
    for (const auto& t : config_.tools)
      tools.push_back({{"type", "function"},
                       {"function",
                        {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    body["tools"] = std::move(tools);
    body["tool_choice"] = "auto";
  }
  body["stream"] = false;
  return body;
}

ChatResult ChatClient::parse_reply(const std::string& body) const {
  using K = ClientError::Kind;
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return error(K::malformed, "reply is not a JSON object: " + clip(trim(body), 200));
  if (!j.contains("choices") && j.contains("error")) {  // an error inside a 2xx
    ServerSays says = server_says(body);
    K kind = mentions_context_length(says.code + " " + says.message) ? K::context_length : K::malformed;
    return error(kind, "reply carries an error: " + says.message);
  }
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    return error(K::malformed, "reply has no choices");
  const json& choice = j["choices"][0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
    return error(K::malformed, "reply's first choice has no message");
  const json& msg = choice["message"];

  Reply reply;
  reply.body = body;
  if (msg.contains("content")) reply.content = message_content(msg["content"]);
  if (msg.contains("tool_calls") && msg["tool_calls"].is_array()) {
    size_t i = 0;
    for (const auto& tc : msg["tool_calls"]) reply.tool_calls.push_back(parse_tool_call(tc, i++));
  }
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
    reply.finish_reason = choice["finish_reason"].get<std::string>();
  if (j.contains("model") && j["model"].is_string()) reply.model = j["model"].get<std::string>();
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    reply.usage.reported = true;
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      reply.usage.prompt_tokens = u["prompt_tokens"].get<int64_t>();
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
      reply.usage.completion_tokens = u["completion_tokens"].get<int64_t>();
  }
  reply.cost = double(reply.usage.prompt_tokens) * config_.price_input_per_mtok / 1e6 +
               double(reply.usage.completion_tokens) * config_.price_output_per_mtok / 1e6;
  return reply;
}

ChatResult ChatClient::attempt(const std::string& body, const std::string& key, double timeout_s,
                               const std::atomic<bool>* cancel) {
  using K = ClientError::Kind;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return error(K::config, "cannot start libcurl");
  std::string url = chat_url(config_.base_url);

  std::unique_ptr<curl_slist, SlistDeleter> headers;
  auto add_header = [&](const std::string& h) {
    headers.reset(curl_slist_append(headers.release(), h.c_str()));
  };
  add_header("Content-Type: application/json");
  add_header("Accept: application/json");
  add_header("Expect:");
  if (!key.empty()) {
    std::string auth = "Authorization: Bearer " + key;
    add_header(auth);  // libcurl copies it
    wipe(auth);
  }

  Transfer t;
  t.cancel = cancel;
  char curl_error[CURL_ERROR_SIZE] = {0};
  long timeout_ms = std::max(1L, long(std::ceil(timeout_s * 1000)));
  long connect_ms = std::max(1L, std::min(timeout_ms, long(std::ceil(config_.connect_timeout_s * 1000))));
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "longhaul");
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_error);
  if (cancel) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  }

  CURLcode rc = curl_easy_perform(c);
  headers.reset();  // frees the copy of the Authorization header
  if (rc != CURLE_OK) {
    std::string why = curl_error[0] ? std::string(curl_error) : curl_easy_strerror(rc);
    why = redact(why, key);
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT:
        return error(K::timeout, "no reply from " + url + " within " + std::to_string(timeout_ms) +
                                     " ms: " + why);
      case CURLE_ABORTED_BY_CALLBACK: return error(K::cancelled, "request cancelled");
      case CURLE_WRITE_ERROR:
        if (t.too_big) return error(K::malformed, "reply larger than 64 MiB");
        return error(K::connection, "reading the reply from " + url + " failed: " + why);
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        return error(K::config, "bad base_url " + url + ": " + why);
      default:
        return error(K::connection, "request to " + url + " failed: " + why);
    }
  }

  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) {
    ChatResult r = parse_reply(t.body);
    if (!r.ok()) {
      ClientError e = r.error();
      e.http_status = int(status);
      e.message = redact(e.message, key);
      return e;
    }
    return r;
  }

  ServerSays says = server_says(t.body);
  std::string what = "HTTP " + std::to_string(status) + " from " + url + ": " + redact(says.message, key);
  std::string text = says.code + " " + says.message;
  ClientError e;
  e.http_status = int(status);
  e.message = what;
  if (auto ms = parse_retry_after(t.retry_after_ms)) e.retry_after_s = *ms / 1000;
  else if (auto s = parse_retry_after(t.retry_after)) e.retry_after_s = *s;
  if (status == 429) {
    // A spent quota is not a rate limit: waiting will not refill it.
    e.kind = lower(text).find("insufficient_quota") != std::string::npos ? K::bad_request : K::rate_limited;
  } else if (mentions_context_length(text) || status == 413) {
    e.kind = K::context_length;
  } else if (status == 408) {
    e.kind = K::timeout;
  } else if (status >= 500) {
    e.kind = K::server_error;
  } else {
    e.kind = K::bad_request;
  }
  return e;
}

double ChatClient::backoff(int retry, const ClientError& e) {
  const RetryPolicy& p = config_.retry;
  double d = p.base_delay_s * std::pow(2.0, double(std::max(0, retry - 1)));
  d = std::min(d, p.max_delay_s);
  double jitter = std::clamp(p.jitter, 0.0, 1.0);
  d *= 1.0 - jitter * std::clamp(hooks_.uniform01(), 0.0, 1.0);
  if (e.kind == ClientError::Kind::rate_limited && e.retry_after_s >= 0) d = std::max(d, e.retry_after_s);
  return std::max(0.0, d);
}

ChatResult ChatClient::complete(const std::vector<Message>& messages, const std::atomic<bool>* cancel) {
  using K = ClientError::Kind;
  const RetryPolicy& p = config_.retry;
  std::string key;
  if (!config_.api_key_env.empty()) {
    const char* v = std::getenv(config_.api_key_env.c_str());
    if (!v || !*v)
      return error(K::config, "environment variable " + config_.api_key_env +
                                  " (api_key_env) is not set or empty");
    key = v;
  }
  const std::string body = request_body(messages).dump();
  const int max_attempts = std::max(1, p.max_attempts);
  double elapsed = 0;  // attempts' wall time plus the waits asked for, so a fake sleep counts too
  for (int n = 1;; ++n) {
    if (cancel && cancel->load()) {
      wipe(key);
      ClientError e = error(K::cancelled, "request cancelled");
      e.attempts = n - 1;
      return e;
    }
    double left = p.max_total_s - elapsed;
    auto t0 = std::chrono::steady_clock::now();
    ChatResult r = attempt(body, key, std::min(config_.timeout_s, std::max(left, 0.001)), cancel);
    elapsed += seconds_since(t0);
    if (r.ok()) {
      wipe(key);
      r->attempts = n;
      return r;
    }
    ClientError e = r.error();
    e.attempts = n;
    double delay = is_retryable(e.kind) ? backoff(n, e) : 0;
    bool stop = !is_retryable(e.kind) || n >= max_attempts || elapsed + delay >= p.max_total_s;
    if (stop) {
      wipe(key);
      if (is_retryable(e.kind) && n > 1)
        e.message += " (gave up after " + std::to_string(n) + " attempts)";
      return e;
    }
    if (hooks_.on_retry) hooks_.on_retry(e, delay);
    if (cancel) {  // wait in slices, so that a raised flag ends the wait soon
      for (double rest = delay; rest > 0 && !cancel->load(); rest -= 0.1) hooks_.sleep(std::min(rest, 0.1));
    } else {
      hooks_.sleep(delay);
    }
    elapsed += delay;
  }
}

}  // namespace longhaul::llm
