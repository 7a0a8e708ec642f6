#include "llm/agent_config.h"

#include <set>

#include <toml++/toml.h>

#include "util/duration.h"

namespace longhaul::llm {
using nlohmann::json;

json to_json(const AgentConfig& c) {
  const ClientConfig& k = c.client;
  json llm = {{"base_url", k.base_url},
              {"model", k.model},
              {"api_key_env", k.api_key_env},
              {"timeout_s", k.timeout_s},
              {"connect_timeout_s", k.connect_timeout_s},
              {"max_tokens", k.max_tokens},
              {"use_max_completion_tokens", k.use_max_completion_tokens},
              {"price_input_per_mtok", k.price_input_per_mtok},
              {"price_output_per_mtok", k.price_output_per_mtok},
              {"max_attempts", k.retry.max_attempts},
              {"retry_budget_s", k.retry.max_total_s},
              {"retry_base_delay_s", k.retry.base_delay_s},
              {"retry_max_delay_s", k.retry.max_delay_s}};
  if (k.temperature) llm["temperature"] = *k.temperature;
  json agent = {{"context_tokens", c.context_tokens},
                {"stale_after", c.stale_after},
                {"tool_output_bytes", c.tool_output_bytes}};
  if (c.max_turns) agent["max_turns"] = *c.max_turns;
  if (c.max_tokens) agent["max_tokens"] = *c.max_tokens;
  if (c.max_cost) agent["max_cost"] = *c.max_cost;
  return {{"llm", llm}, {"agent", agent}};
}

Result<AgentConfig> agent_config_from_json(const json& j) {
  AgentConfig c;
  if (!j.is_object() || !j.contains("llm") || !j["llm"].is_object())
    return Error{"the run's proposer_config has no llm settings"};
  try {
    const json& l = j["llm"];
    ClientConfig& k = c.client;
    k.base_url = l.value("base_url", k.base_url);
    k.model = l.value("model", k.model);
    k.api_key_env = l.value("api_key_env", k.api_key_env);
    k.timeout_s = l.value("timeout_s", k.timeout_s);
    k.connect_timeout_s = l.value("connect_timeout_s", k.connect_timeout_s);
    k.max_tokens = l.value("max_tokens", k.max_tokens);
    k.use_max_completion_tokens = l.value("use_max_completion_tokens", k.use_max_completion_tokens);
    k.price_input_per_mtok = l.value("price_input_per_mtok", 0.0);
    k.price_output_per_mtok = l.value("price_output_per_mtok", 0.0);
    k.retry.max_attempts = l.value("max_attempts", k.retry.max_attempts);
    k.retry.max_total_s = l.value("retry_budget_s", k.retry.max_total_s);
    k.retry.base_delay_s = l.value("retry_base_delay_s", k.retry.base_delay_s);
    k.retry.max_delay_s = l.value("retry_max_delay_s", k.retry.max_delay_s);
    if (l.contains("temperature") && l["temperature"].is_number()) k.temperature = l["temperature"].get<double>();
    json a = j.value("agent", json::object());
    c.context_tokens = a.value("context_tokens", c.context_tokens);
    c.stale_after = a.value("stale_after", c.stale_after);
    c.tool_output_bytes = a.value("tool_output_bytes", c.tool_output_bytes);
    if (a.contains("max_turns")) c.max_turns = a["max_turns"].get<int64_t>();
    if (a.contains("max_tokens")) c.max_tokens = a["max_tokens"].get<int64_t>();
    if (a.contains("max_cost")) c.max_cost = a["max_cost"].get<double>();
  } catch (const json::exception& e) {
    return Error{std::string("the run's proposer_config is malformed: ") + e.what()};
  }
  return c;
}

bool env_name(const std::string& name) {
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::vector<std::string> secret_env(const json& proposer_config) {
  if (!proposer_config.is_object() || !proposer_config.contains("llm") || !proposer_config["llm"].is_object())
    return {};
  const json& name = proposer_config["llm"].value("api_key_env", json());
  if (!name.is_string() || name.get<std::string>().empty()) return {};
  return {name.get<std::string>()};
}

namespace {

struct Reader {
  std::string file;
  std::string error;

  std::string where(const toml::node& n, const std::string& key) const {
    return file + ":" + std::to_string(n.source().begin.line) + ": " + key;
  }
  bool fail(const toml::node& n, const std::string& key, const std::string& what) {
    if (error.empty()) error = where(n, key) + ": " + what;
    return false;
  }
  bool number(const toml::node& n, const std::string& key, double& out) {
    if (auto v = n.value<double>()) { out = *v; return true; }
    return fail(n, key, "expected a number");
  }
  bool integer(const toml::node& n, const std::string& key, int64_t& out) {
    if (auto v = n.as_integer()) { out = v->get(); return true; }
    return fail(n, key, "expected an integer");
  }
  bool string(const toml::node& n, const std::string& key, std::string& out) {
    if (auto v = n.as_string()) { out = v->get(); return true; }
    return fail(n, key, "expected a string");
  }
  bool duration(const toml::node& n, const std::string& key, double& out) {
    if (auto s = n.as_string()) {
      auto d = parse_duration(s->get());
      if (d && *d > 0) { out = *d; return true; }
      return fail(n, key, "'" + s->get() + "' is not a duration (e.g. 90s, 5m)");
    }
    if (auto v = n.value<double>(); v && *v > 0) { out = *v; return true; }
    return fail(n, key, "expected a duration such as \"90s\" or a number of seconds");
  }
};

}  // namespace

Result<AgentConfig> load_agent_config(const std::filesystem::path& path) {
  toml::table root;
  try {
    root = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    return Error{path.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                 std::string(e.description())};
  }
  Reader r{path.string(), ""};
  AgentConfig c;
  for (auto&& [k, v] : root)
    if (k.str() != "llm" && k.str() != "agent") r.fail(v, std::string(k.str()), "unknown table (expected [llm] or [agent])");
  const toml::table* llm = root["llm"].as_table();
  if (!llm) return Error{path.string() + ": no [llm] table"};
  ClientConfig& k = c.client;
  for (auto&& [key_, v] : *llm) {
    std::string key = "llm." + std::string(key_.str());
    std::string name(key_.str());
    int64_t i = 0;
    if (name == "base_url") r.string(v, key, k.base_url);
    else if (name == "model") r.string(v, key, k.model);
    else if (name == "api_key_env") {
      if (r.string(v, key, k.api_key_env) && !env_name(k.api_key_env))
        r.fail(v, key, "expected the NAME of an environment variable (letters, digits, _), not the key");
    }
    else if (name == "timeout") r.duration(v, key, k.timeout_s);
    else if (name == "connect_timeout") r.duration(v, key, k.connect_timeout_s);
    else if (name == "temperature") { double t; if (r.number(v, key, t)) k.temperature = t; }
    else if (name == "max_tokens") { if (r.integer(v, key, i)) k.max_tokens = int(i); }
    else if (name == "use_max_completion_tokens") {
      if (auto b = v.as_boolean()) k.use_max_completion_tokens = b->get();
      else r.fail(v, key, "expected true or false");
    }
    else if (name == "price_input_per_mtok") r.number(v, key, k.price_input_per_mtok);
    else if (name == "price_output_per_mtok") r.number(v, key, k.price_output_per_mtok);
    else if (name == "max_retries") { if (r.integer(v, key, i)) k.retry.max_attempts = int(i) + 1; }
    else if (name == "retry_budget") r.duration(v, key, k.retry.max_total_s);
    else if (name == "retry_base_delay") r.duration(v, key, k.retry.base_delay_s);
    else if (name == "retry_max_delay") r.duration(v, key, k.retry.max_delay_s);
    else if (name == "api_key") r.fail(v, key, "the key itself does not belong in a file: name its environment variable with api_key_env");
    else r.fail(v, key, "unknown key");
  }
  if (const toml::table* agent = root["agent"].as_table()) {
    for (auto&& [key_, v] : *agent) {
      std::string key = "agent." + std::string(key_.str());
      std::string name(key_.str());
      int64_t i = 0;
      double d = 0;
      if (name == "context_tokens") { if (r.integer(v, key, i)) c.context_tokens = i; }
      else if (name == "max_turns") { if (r.integer(v, key, i)) c.max_turns = i; }
      else if (name == "max_tokens") { if (r.integer(v, key, i)) c.max_tokens = i; }
      else if (name == "max_cost") { if (r.number(v, key, d)) c.max_cost = d; }
      else if (name == "stale_after") { if (r.integer(v, key, i)) c.stale_after = int(i); }
      else if (name == "tool_output_bytes") { if (r.integer(v, key, i)) c.tool_output_bytes = i; }
      else r.fail(v, key, "unknown key");
    }
  }
  if (!r.error.empty()) return Error{r.error};
  if (c.context_tokens < 2000) return Error{path.string() + ": agent.context_tokens must be at least 2000"};
  if (c.stale_after < 1) return Error{path.string() + ": agent.stale_after must be at least 1"};
  if (c.tool_output_bytes < 200) return Error{path.string() + ": agent.tool_output_bytes must be at least 200"};
  return c;
}

}  // namespace longhaul::llm
