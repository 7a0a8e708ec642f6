#include "llm/client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "fixtures/scripted_server.h"

namespace longhaul::llm {
namespace {

using nlohmann::json;
using testing::ScriptedResponse;
using testing::ScriptedServer;
using Kind = ClientError::Kind;

constexpr const char* kKeyEnv = "LONGHAUL_TEST_LLM_KEY";
constexpr const char* kKey = "sk-test-7f3a9c1e5b2d4068-SECRET";

// Waits are recorded, not slept; jitter draws come from a fixed value.
struct FakeTime {
  std::vector<double> sleeps;
  double draw = 0;  // uniform01() result: 0 = no jitter reduction
  ClientHooks hooks() {
    ClientHooks h;
    h.sleep = [this](double s) { sleeps.push_back(s); };
    h.uniform01 = [this] { return draw; };
    return h;
  }
  double total() const {
    double t = 0;
    for (double s : sleeps) t += s;
    return t;
  }
};

ClientConfig config_for(const std::string& base_url) {
  ClientConfig c;
  c.base_url = base_url;
  c.model = "test-model";
  c.timeout_s = 2;
  c.connect_timeout_s = 1;
  c.temperature = 0.2;
  c.max_tokens = 256;
  c.retry.max_attempts = 5;
  c.retry.max_total_s = 30;
  c.retry.base_delay_s = 0.01;
  c.retry.max_delay_s = 1;
  c.retry.jitter = 0.5;
  c.tools.push_back({"read_file", "Read a file of the workspace.",
                     json{{"type", "object"},
                          {"properties", {{"path", {{"type", "string"}}}}},
                          {"required", {"path"}}}});
  return c;
}

std::vector<Message> conversation() {
  return {Message::system("You improve a kernel."), Message::user("Make it faster.")};
}

json error_body(const std::string& message, const std::string& type, const json& code) {
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
}

TEST(LlmClient, ToolCallReplyParsed) {
  ScriptedServer server([](const json&, size_t) {
    return ScriptedServer::ok(ScriptedServer::completion(
        "Reading it first.", json::array({{{"id", "call_1"}, {"name", "read_file"},
                                           {"arguments", R"({"path": "src/gemm.cc"})"}}})));
  });
  FakeTime time;
  ChatClient client(config_for(server.base_url()), time.hooks());
  auto msgs = conversation();
  ToolCall earlier{"call_0", "read_file", R"({"path":"README"})", json{{"path", "README"}}, ""};
  msgs.push_back(Message::assistant("", {earlier}));
  msgs.push_back(Message::tool("call_0", "contents of README"));
  ChatResult r = client.complete(msgs);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->content, "Reading it first.");
  EXPECT_EQ(r->finish_reason, "tool_calls");
  ASSERT_EQ(r->tool_calls.size(), 1u);
  const ToolCall& call = r->tool_calls[0];
  EXPECT_EQ(call.id, "call_1");
  EXPECT_EQ(call.name, "read_file");
  EXPECT_EQ(call.arguments, R"({"path": "src/gemm.cc"})");
  EXPECT_EQ(call.error, "");
  EXPECT_EQ(call.args.value("path", ""), "src/gemm.cc");
  EXPECT_EQ(r->attempts, 1);
  EXPECT_FALSE(r->body.empty());

  // What went over the wire: the OpenAI request shape, the whole conversation, the tools.
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  const json& req = reqs[0].json;
  EXPECT_EQ(req["model"], "test-model");
  EXPECT_EQ(req["max_tokens"], 256);
  EXPECT_DOUBLE_EQ(req["temperature"].get<double>(), 0.2);
  EXPECT_EQ(req["tool_choice"], "auto");
  ASSERT_EQ(req["tools"].size(), 1u);
  EXPECT_EQ(req["tools"][0]["type"], "function");
  EXPECT_EQ(req["tools"][0]["function"]["name"], "read_file");
  EXPECT_EQ(req["tools"][0]["function"]["parameters"]["required"][0], "path");
  ASSERT_EQ(req["messages"].size(), 4u);
  EXPECT_EQ(req["messages"][0]["role"], "system");
  EXPECT_EQ(req["messages"][1]["role"], "user");
  EXPECT_EQ(req["messages"][2]["role"], "assistant");
  EXPECT_TRUE(req["messages"][2]["content"].is_null());
  EXPECT_EQ(req["messages"][2]["tool_calls"][0]["id"], "call_0");
  EXPECT_EQ(req["messages"][2]["tool_calls"][0]["function"]["arguments"], R"({"path":"README"})");
  EXPECT_EQ(req["messages"][3]["role"], "tool");
  EXPECT_EQ(req["messages"][3]["tool_call_id"], "call_0");
  EXPECT_EQ(req["messages"][3]["content"], "contents of README");
}

TEST(LlmClient, ContentOnlyReply) {
  ScriptedServer server(
      [](const json&, size_t) { return ScriptedServer::ok(ScriptedServer::completion("All done.")); });
  ChatClient client(config_for(server.base_url()));
  ChatResult r = client.complete(conversation());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->content, "All done.");
  EXPECT_TRUE(r->tool_calls.empty());
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_EQ(r->model, "scripted");
}

TEST(LlmClient, NoToolsMeansNoToolChoice) {
  ScriptedServer server([](const json&, size_t) { return ScriptedServer::ok(ScriptedServer::completion("hi")); });
  ClientConfig c = config_for(server.base_url());
  c.tools.clear();
  c.temperature.reset();
  c.use_max_completion_tokens = true;
  ChatClient client(c);
  ASSERT_TRUE(client.complete(conversation()).ok());
  const json req = server.requests().at(0).json;
  EXPECT_FALSE(req.contains("tools"));
  EXPECT_FALSE(req.contains("tool_choice"));
  EXPECT_FALSE(req.contains("temperature"));
  EXPECT_FALSE(req.contains("max_tokens"));
  EXPECT_EQ(req["max_completion_tokens"], 256);
}

TEST(LlmClient, UsageAndCost) {
  ScriptedServer server([](const json&, size_t) {
    return ScriptedServer::ok(ScriptedServer::completion("ok", json::array(), 1000, 500));
  });
  ClientConfig c = config_for(server.base_url());
  c.price_input_per_mtok = 2.0;   // $2 per 1M prompt tokens
  c.price_output_per_mtok = 8.0;  // $8 per 1M completion tokens
  ChatClient client(c);
  ChatResult r = client.complete(conversation());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->usage.reported);
  EXPECT_EQ(r->usage.prompt_tokens, 1000);
  EXPECT_EQ(r->usage.completion_tokens, 500);
  EXPECT_NEAR(r->cost, 1000 * 2.0 / 1e6 + 500 * 8.0 / 1e6, 1e-12);

  ChatResult no_usage = client.parse_reply(R"({"choices":[{"message":{"content":"x"}}]})");
  ASSERT_TRUE(no_usage.ok());
  EXPECT_FALSE(no_usage->usage.reported);
  EXPECT_EQ(no_usage->cost, 0);
}

TEST(LlmClient, ApiKeyOnlyInAuthorizationHeader) {
  ::setenv(kKeyEnv, kKey, 1);
  // The first reply is an error page that echoes the key; the client must not quote it.
  ScriptedServer server([](const json&, size_t i) {
    if (i == 0)
      return ScriptedServer::status(400, error_body(std::string("bad key ") + kKey, "invalid_request_error",
                                                    "invalid_api_key"));
    return ScriptedServer::ok(ScriptedServer::completion("fine"));
  });
  ClientConfig c = config_for(server.base_url());
  c.api_key_env = kKeyEnv;
  FakeTime time;
  ChatClient client(c, time.hooks());

  ChatResult bad = client.complete(conversation());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, Kind::bad_request);
  EXPECT_EQ(bad.error().message.find(kKey), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("[redacted]"), std::string::npos);

  ASSERT_TRUE(client.complete(conversation()).ok());
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  for (const auto& req : reqs) {
    EXPECT_EQ(req.body.find(kKey), std::string::npos);
    int auth = 0;
    for (const auto& [name, value] : req.headers) {
      if (name == "Authorization") {
        ++auth;
        EXPECT_EQ(value, std::string("Bearer ") + kKey);
      } else {
        EXPECT_EQ(value.find(kKey), std::string::npos) << name;
      }
    }
    EXPECT_EQ(auth, 1);
  }
  // The request body a caller logs has no key either; the config holds only the variable's name.
  EXPECT_EQ(client.request_body(conversation()).dump().find(kKey), std::string::npos);

  // Errors without a server in reach, and with the variable unset, do not carry it either.
  ClientConfig closed = c;
  closed.base_url = "http://127.0.0.1:" + std::to_string(testing::closed_loopback_port()) + "/v1";
  closed.retry.max_attempts = 2;
  ChatResult refused = ChatClient(closed, time.hooks()).complete(conversation());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message.find(kKey), std::string::npos);

  ::unsetenv(kKeyEnv);
  ChatResult unset = client.complete(conversation());
  ASSERT_FALSE(unset.ok());
  EXPECT_EQ(unset.error().kind, Kind::config);
  EXPECT_NE(unset.error().message.find(kKeyEnv), std::string::npos);
  EXPECT_EQ(server.request_count(), 2u);  // nothing was sent without the key
}

TEST(LlmClient, NoKeyVariableSendsNoAuthorization) {
  ScriptedServer server([](const json&, size_t) { return ScriptedServer::ok(ScriptedServer::completion("x")); });
  ChatClient client(config_for(server.base_url()));
  ASSERT_TRUE(client.complete(conversation()).ok());
  EXPECT_EQ(server.requests().at(0).headers.count("Authorization"), 0u);
}

TEST(LlmClient, RateLimitedHonoursRetryAfter) {
  ScriptedServer server([](const json&, size_t i) {
    if (i == 0)
      return ScriptedServer::status(429, error_body("Rate limit reached", "requests", "rate_limit_exceeded"),
                                    {{"Retry-After", "2"}});
    return ScriptedServer::ok(ScriptedServer::completion("after the wait"));
  });
  FakeTime time;
  std::vector<Kind> retried;
  ClientHooks hooks = time.hooks();
  hooks.on_retry = [&](const ClientError& e, double) { retried.push_back(e.kind); };
  ChatClient client(config_for(server.base_url()), hooks);
  ChatResult r = client.complete(conversation());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->content, "after the wait");
  EXPECT_EQ(r->attempts, 2);
  ASSERT_EQ(time.sleeps.size(), 1u);
  EXPECT_DOUBLE_EQ(time.sleeps[0], 2.0);  // longer than the backoff: Retry-After wins
  EXPECT_EQ(retried, std::vector<Kind>{Kind::rate_limited});
}

TEST(LlmClient, RetryAfterMillisecondsAndQuota) {
  ScriptedServer server([](const json&, size_t i) {
    if (i == 0) return ScriptedServer::status(429, json::object(), {{"retry-after-ms", "1500"}});
    if (i == 1) return ScriptedServer::ok(ScriptedServer::completion("ok"));
    return ScriptedServer::status(429, error_body("You exceeded your current quota", "insufficient_quota",
                                                  "insufficient_quota"));
  });
  FakeTime time;
  ChatClient client(config_for(server.base_url()), time.hooks());
  ASSERT_TRUE(client.complete(conversation()).ok());
  ASSERT_EQ(time.sleeps.size(), 1u);
  EXPECT_DOUBLE_EQ(time.sleeps[0], 1.5);
  ChatResult quota = client.complete(conversation());  // a spent quota is not worth waiting for
  ASSERT_FALSE(quota.ok());
  EXPECT_EQ(quota.error().kind, Kind::bad_request);
  EXPECT_EQ(quota.error().attempts, 1);
  EXPECT_EQ(server.request_count(), 3u);
}

TEST(LlmClient, ParseRetryAfter) {
  EXPECT_EQ(parse_retry_after("2"), 2.0);
  EXPECT_EQ(parse_retry_after(" 1.5 "), 1.5);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0.0);  // in the past: now
  EXPECT_EQ(parse_retry_after("soon"), std::nullopt);
  EXPECT_EQ(parse_retry_after(""), std::nullopt);
}

TEST(LlmClient, ServerErrorsRetriedWithBackoff) {
  ScriptedServer server([](const json&, size_t i) {
    if (i < 2) return ScriptedServer::status(500 + int(i) * 2, error_body("internal", "server_error", 500));
    return ScriptedServer::ok(ScriptedServer::completion("third time"));
  });
  FakeTime time;
  ChatClient client(config_for(server.base_url()), time.hooks());
  ChatResult r = client.complete(conversation());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(server.request_count(), 3u);
  ASSERT_EQ(time.sleeps.size(), 2u);
  EXPECT_DOUBLE_EQ(time.sleeps[0], 0.01);  // base * 2^0, no jitter drawn
  EXPECT_DOUBLE_EQ(time.sleeps[1], 0.02);  // base * 2^1

  // Jitter scales each wait into [1 - jitter, 1] of it; the cap holds.
  ScriptedServer failing([](const json&, size_t) { return ScriptedServer::status(503, json::object()); });
  FakeTime jittered;
  jittered.draw = 0.5;
  ClientConfig c = config_for(failing.base_url());
  c.retry.base_delay_s = 0.4;
  c.retry.max_delay_s = 1.0;
  c.retry.max_attempts = 4;
  ChatResult e = ChatClient(c, jittered.hooks()).complete(conversation());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, Kind::server_error);
  EXPECT_EQ(e.error().http_status, 503);
  ASSERT_EQ(jittered.sleeps.size(), 3u);
  EXPECT_DOUBLE_EQ(jittered.sleeps[0], 0.4 * 0.75);
  EXPECT_DOUBLE_EQ(jittered.sleeps[1], 0.8 * 0.75);
  EXPECT_DOUBLE_EQ(jittered.sleeps[2], 1.0 * 0.75);  // 1.6 capped at 1.0
}

TEST(LlmClient, HangPastTimeoutThenSuccess) {
  ScriptedServer server([](const json&, size_t i) {
    ScriptedResponse r = ScriptedServer::ok(ScriptedServer::completion("awake"));
    if (i == 0) r.delay_s = 5;  // far past the timeout; cut short when the server stops
    return r;
  });
  ClientConfig c = config_for(server.base_url());
  c.timeout_s = 0.3;
  FakeTime time;
  std::vector<Kind> retried;
  ClientHooks hooks = time.hooks();
  hooks.on_retry = [&](const ClientError& e, double) { retried.push_back(e.kind); };
  auto t0 = std::chrono::steady_clock::now();
  ChatResult r = ChatClient(c, hooks).complete(conversation());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->content, "awake");
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(retried, std::vector<Kind>{Kind::timeout});
  EXPECT_LT(took, 2.0);
}

TEST(LlmClient, ConnectionRefusedExhaustsRetries) {
  ClientConfig c = config_for("http://127.0.0.1:" + std::to_string(testing::closed_loopback_port()) + "/v1");
  c.retry.max_attempts = 4;
  FakeTime time;
  ChatResult r = ChatClient(c, time.hooks()).complete(conversation());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::connection);
  EXPECT_EQ(r.error().http_status, 0);
  EXPECT_EQ(r.error().attempts, 4);
  EXPECT_EQ(time.sleeps.size(), 3u);
  EXPECT_NE(r.error().message.find("gave up after 4 attempts"), std::string::npos) << r.error().message;
}

TEST(LlmClient, TruncatedJsonIsMalformedNotRetried) {
  ScriptedServer server([](const json&, size_t) {
    ScriptedResponse r = ScriptedServer::ok(ScriptedServer::completion("this reply is cut short"));
    r.truncate_at = long(r.body.size() / 2);
    return r;
  });
  FakeTime time;
  ChatResult r = ChatClient(config_for(server.base_url()), time.hooks()).complete(conversation());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::malformed);
  EXPECT_EQ(r.error().http_status, 200);
  EXPECT_EQ(r.error().attempts, 1);
  EXPECT_EQ(server.request_count(), 1u);
  EXPECT_TRUE(time.sleeps.empty());
}

TEST(LlmClient, MissingChoicesIsMalformed) {
  ChatClient client(config_for("http://127.0.0.1:1/v1"));
  EXPECT_EQ(client.parse_reply(R"({"id":"x","choices":[]})").error().kind, Kind::malformed);
  EXPECT_EQ(client.parse_reply(R"({"id":"x"})").error().kind, Kind::malformed);
  EXPECT_EQ(client.parse_reply(R"({"choices":[{"finish_reason":"stop"}]})").error().kind, Kind::malformed);
  EXPECT_EQ(client.parse_reply("[1,2]").error().kind, Kind::malformed);
  EXPECT_EQ(client.parse_reply("").error().kind, Kind::malformed);
}

// The bodies each server sends when the prompt does not fit.
TEST(LlmClient, ContextLengthRecognisedInEachServersPhrasing) {
  const std::vector<std::pair<std::string, json>> bodies = {
      {"openai", error_body("This model's maximum context length is 8192 tokens. However, your messages "
                            "resulted in 9000 tokens. Please reduce the length of the messages.",
                            "invalid_request_error", "context_length_exceeded")},
      {"openai-new", error_body("Your input exceeds the context window of this model. Please adjust your "
                                "input and try again.",
                                "invalid_request_error", "context_length_exceeded")},
      {"vllm-old", json{{"object", "error"},
                        {"message", "This model's maximum context length is 4096 tokens. However, you "
                                    "requested 5000 tokens (4000 in the messages, 1000 in the completion). "
                                    "Please reduce the length of the messages or completion."},
                        {"type", "BadRequestError"},
                        {"param", nullptr},
                        {"code", 400}}},
      {"vllm", error_body("'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum "
                          "context length is 4096 tokens and your request has 3500 input tokens "
                          "(1000 > 4096 - 3500).",
                          "BadRequestError", 400)},
      {"vllm-v1", error_body("The decoder prompt (length 5000) is longer than the maximum model length "
                             "of 4096. Make sure that `max_model_len` is no smaller than the number of "
                             "text tokens.",
                             "BadRequestError", 400)},
      {"llama.cpp", json{{"error", {{"code", 400},
                                    {"message", "the request exceeds the available context size, try "
                                                "increasing it"},
                                    {"type", "exceed_context_size_error"},
                                    {"n_prompt_tokens", 4476},
                                    {"n_ctx", 4096}}}}},
      {"llama.cpp-new", json{{"error", {{"code", 400},
                                        {"message", "request (4476 tokens) exceeds the available context "
                                                    "size (4096 tokens), try increasing it"},
                                        {"type", "exceed_context_size_error"}}}}},
  };
  for (const auto& [who, body] : bodies) {
    ScriptedServer server([&](const json&, size_t) { return ScriptedServer::status(400, body); });
    FakeTime time;
    ChatResult r = ChatClient(config_for(server.base_url()), time.hooks()).complete(conversation());
    ASSERT_FALSE(r.ok()) << who;
    EXPECT_EQ(r.error().kind, Kind::context_length) << who << ": " << r.error().message;
    EXPECT_EQ(r.error().http_status, 400) << who;
    EXPECT_EQ(server.request_count(), 1u) << who << " was retried";
  }
  // A 400 about something else is a bad request, and is not retried either.
  ScriptedServer other([](const json&, size_t) {
    return ScriptedServer::status(400, error_body("Invalid schema for function 'read_file'",
                                                  "invalid_request_error", "invalid_function_parameters"));
  });
  FakeTime time;
  ChatResult r = ChatClient(config_for(other.base_url()), time.hooks()).complete(conversation());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::bad_request);
  EXPECT_NE(r.error().message.find("Invalid schema"), std::string::npos);
  EXPECT_EQ(other.request_count(), 1u);
  EXPECT_FALSE(mentions_context_length("Invalid schema for function"));
}

TEST(LlmClient, BadToolArgumentsSurfaceOnTheCall) {
  ScriptedServer server([](const json&, size_t) {
    return ScriptedServer::ok(ScriptedServer::completion(
        "", json::array({{{"id", "a"}, {"name", "read_file"}, {"arguments", "{path: 'x.cc'"}},
                         {{"id", "b"}, {"name", "read_file"}, {"arguments", "[1, 2]"}},
                         {{"id", "c"}, {"name", "list_files"}, {"arguments", ""}},
                         {{"id", "d"}, {"name", ""}, {"arguments", "{}"}},
                         {{"id", "e"}, {"name", "read_file"}, {"arguments", R"({"path":"y.cc"})"}}})));
  });
  ChatResult r = ChatClient(config_for(server.base_url())).complete(conversation());
  ASSERT_TRUE(r.ok()) << r.error().message;  // the reply itself is fine
  ASSERT_EQ(r->tool_calls.size(), 5u);
  EXPECT_NE(r->tool_calls[0].error.find("not valid JSON"), std::string::npos) << r->tool_calls[0].error;
  EXPECT_EQ(r->tool_calls[0].arguments, "{path: 'x.cc'");  // kept verbatim, to show the model
  EXPECT_NE(r->tool_calls[1].error.find("JSON object"), std::string::npos) << r->tool_calls[1].error;
  EXPECT_EQ(r->tool_calls[2].error, "");  // no arguments: {}
  EXPECT_TRUE(r->tool_calls[2].args.is_object());
  EXPECT_NE(r->tool_calls[3].error.find("name"), std::string::npos);
  EXPECT_EQ(r->tool_calls[4].error, "");
  EXPECT_EQ(r->tool_calls[4].args["path"], "y.cc");
  EXPECT_EQ(server.request_count(), 1u);
}

TEST(LlmClient, RetryBudgetBoundsAttempts) {
  ScriptedServer server([](const json&, size_t) { return ScriptedServer::status(500, json::object()); });
  {  // by count
    ClientConfig c = config_for(server.base_url());
    c.retry.max_attempts = 3;
    FakeTime time;
    ChatResult r = ChatClient(c, time.hooks()).complete(conversation());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, Kind::server_error);
    EXPECT_EQ(r.error().attempts, 3);
    EXPECT_EQ(server.request_count(), 3u);
  }
  {  // by time: waits of 0.3, 0.6 fit in 1 s; the next (1.2) would not
    ClientConfig c = config_for(server.base_url());
    c.retry.max_attempts = 100;
    c.retry.max_total_s = 1.0;
    c.retry.base_delay_s = 0.3;
    c.retry.max_delay_s = 10;
    FakeTime time;
    ChatResult r = ChatClient(c, time.hooks()).complete(conversation());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().attempts, 3);
    EXPECT_EQ(time.sleeps, (std::vector<double>{0.3, 0.6}));
    EXPECT_LE(time.total(), 1.0);
    EXPECT_EQ(server.request_count(), 6u);
  }
  {  // a Retry-After beyond the budget is not waited for
    ScriptedServer slow([](const json&, size_t) {
      return ScriptedServer::status(429, json::object(), {{"Retry-After", "120"}});
    });
    FakeTime time;
    ChatResult r = ChatClient(config_for(slow.base_url()), time.hooks()).complete(conversation());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, Kind::rate_limited);
    EXPECT_EQ(r.error().retry_after_s, 120);
    EXPECT_EQ(r.error().attempts, 1);
    EXPECT_TRUE(time.sleeps.empty());
  }
}

TEST(LlmClient, CancelEndsAHangingCall) {
  ScriptedServer server([](const json&, size_t) {
    ScriptedResponse r = ScriptedServer::ok(ScriptedServer::completion("late"));
    r.delay_s = 5;
    return r;
  });
  std::atomic<bool> cancel{false};
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  ChatResult r = ChatClient(config_for(server.base_url())).complete(conversation(), &cancel);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  raiser.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::cancelled);
  EXPECT_LT(took, 1.5);
}

TEST(LlmClient, Kinds) {
  EXPECT_TRUE(is_retryable(Kind::rate_limited));
  EXPECT_TRUE(is_retryable(Kind::server_error));
  EXPECT_TRUE(is_retryable(Kind::timeout));
  EXPECT_TRUE(is_retryable(Kind::connection));
  EXPECT_FALSE(is_retryable(Kind::context_length));
  EXPECT_FALSE(is_retryable(Kind::bad_request));
  EXPECT_FALSE(is_retryable(Kind::malformed));
  EXPECT_FALSE(is_retryable(Kind::config));
  EXPECT_STREQ(to_string(Kind::context_length), "context_length");
}

}  // namespace
}  // namespace longhaul::llm
