// docker-compose.yml describes the same ZooKeeper topology that the test harness starts.
//
// This test reads the file (with a parser for the small YAML subset it keeps to, after Compose's
// "${NAME:-default}" substitution) and checks it against the facts a running TestingEnsemble
// reports through describe(): member ids, `server.N` entries on 127.0.0.1 with a port of their own
// each, and the members every client is given. It also keeps the file to what Debian's
// docker-compose 1.29 accepts. The file itself is brought up through Docker by
// compose_e2e_test.cpp. Negative controls: altered copies of the file must be rejected.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlock/testing/ensemble.hpp"
#include "dlock_test_paths.hpp"

namespace dlock::testing {
namespace {

const std::filesystem::path kRepo = std::filesystem::path(DLOCK_TESTS_DIR).parent_path();

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// --- a parser for the YAML subset docker-compose.yml keeps to ------------------------------------
// Block maps ("key: value", "key:" + an indented block), block sequences of scalars ("- value"),
// flow sequences of scalars ("[a, "b"]"), "{}", double- or single-quoted and plain scalars, and
// comments. Anything else (tabs, anchors, aliases, multi-line strings, maps inside sequences)
// throws, so the file cannot drift into YAML this test would misread.
struct Yaml {
  std::string scalar;
  std::vector<std::pair<std::string, Yaml>> map;
  std::vector<Yaml> seq;
  enum Kind { Scalar, Map, Seq } kind = Scalar;

  const Yaml* find(const std::string& key) const {
    for (const auto& [k, v] : map) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  const Yaml& at(const std::string& key) const {
    if (const Yaml* v = find(key)) return *v;
    throw std::runtime_error("no key '" + key + "'");
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& entry : map) out.push_back(entry.first);
    return out;
  }
};

struct Line {
  int number;
  int indent;
  std::string text;
};

std::runtime_error yaml_error(int line, const std::string& what) {
  return std::runtime_error("docker-compose.yml line " + std::to_string(line) + ": " + what);
}

// Strips a comment that starts outside quotes.
std::string strip_comment(const std::string& text) {
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || text[i - 1] == ' ')) {
      return text.substr(0, i);
    }
  }
  return text;
}

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(' ');
  if (begin == std::string::npos) return {};
  return text.substr(begin, text.find_last_not_of(' ') - begin + 1);
}

Yaml scalar_node(const std::string& raw, int line) {
  Yaml node;
  const std::string text = trim(raw);
  if (text.empty()) throw yaml_error(line, "empty value");
  const char first = text.front();
  if (first == '&' || first == '*' || first == '|' || first == '>' || first == '!') {
    throw yaml_error(line, "unsupported YAML (anchor, alias, tag or block scalar): " + text);
  }
  if (first == '"' || first == '\'') {
    if (text.size() < 2 || text.back() != first) throw yaml_error(line, "unterminated string: " + text);
    for (std::size_t i = 1; i + 1 < text.size(); ++i) {
      if (first == '"' && text[i] == '\\' && i + 2 < text.size()) ++i;
      node.scalar += text[i];
    }
  } else {
    node.scalar = text;
  }
  return node;
}

Yaml value_node(const std::string& raw, int line) {
  const std::string text = trim(raw);
  if (text == "{}") {
    Yaml node;
    node.kind = Yaml::Map;
    return node;
  }
  if (!text.empty() && text.front() == '[') {
    if (text.back() != ']') throw yaml_error(line, "unterminated flow sequence: " + text);
    Yaml node;
    node.kind = Yaml::Seq;
    std::string item;
    char quote = 0;
    for (std::size_t i = 1; i + 1 < text.size(); ++i) {
      const char c = text[i];
      if (quote != 0 && c == quote)
        quote = 0;
      else if (quote == 0 && (c == '"' || c == '\''))
        quote = c;
      if (quote == 0 && c == ',') {
        node.seq.push_back(scalar_node(item, line));
        item.clear();
      } else {
        item += c;
      }
    }
    if (!trim(item).empty()) node.seq.push_back(scalar_node(item, line));
    return node;
  }
  if (!text.empty() && text.front() == '{') throw yaml_error(line, "unsupported flow map: " + text);
  return scalar_node(text, line);
}

Yaml parse_block(const std::vector<Line>& lines, std::size_t& i, int indent) {
  Yaml node;
  const bool sequence = lines[i].text.rfind("- ", 0) == 0 || lines[i].text == "-";
  node.kind = sequence ? Yaml::Seq : Yaml::Map;
  while (i < lines.size() && lines[i].indent == indent) {
    const Line& line = lines[i];
    if (sequence) {
      if (line.text.rfind("- ", 0) != 0) throw yaml_error(line.number, "expected '- item'");
      const std::string item = line.text.substr(2);
      if (item.find(": ") != std::string::npos && item.front() != '"' && item.front() != '\'') {
        throw yaml_error(line.number, "maps inside sequences are not supported");
      }
      node.seq.push_back(value_node(item, line.number));
      ++i;
      continue;
    }
    std::size_t colon = std::string::npos;
    if (!line.text.empty() && (line.text.front() == '"' || line.text.front() == '\'')) {
      const auto close = line.text.find(line.text.front(), 1);
      if (close != std::string::npos && close + 1 < line.text.size() && line.text[close + 1] == ':') colon = close + 1;
    } else {
      colon = line.text.find(':');
      while (colon != std::string::npos && colon + 1 < line.text.size() && line.text[colon + 1] != ' ') {
        colon = line.text.find(':', colon + 1);
      }
    }
    if (colon == std::string::npos) throw yaml_error(line.number, "expected 'key: value': " + line.text);
    const std::string key = scalar_node(line.text.substr(0, colon), line.number).scalar;
    const std::string rest = trim(line.text.substr(colon + 1));
    if (node.find(key) != nullptr) throw yaml_error(line.number, "duplicate key '" + key + "'");
    ++i;
    if (!rest.empty()) {
      node.map.emplace_back(key, value_node(rest, line.number));
    } else if (i < lines.size() && lines[i].indent > indent) {
      node.map.emplace_back(key, parse_block(lines, i, lines[i].indent));
    } else {
      throw yaml_error(line.number, "key '" + key + "' has no value");
    }
  }
  if (i < lines.size() && lines[i].indent > indent) throw yaml_error(lines[i].number, "unexpected indentation");
  return node;
}

Yaml parse_yaml(const std::string& text) {
  std::vector<Line> lines;
  std::istringstream in(text);
  int number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    if (raw.find('\t') != std::string::npos) throw yaml_error(number, "tab character");
    const std::string content = strip_comment(raw);
    if (trim(content).empty()) continue;
    const int indent = static_cast<int>(content.find_first_not_of(' '));
    std::string body = trim(content);
    if (body == "---") throw yaml_error(number, "multiple documents are not supported");
    lines.push_back({number, indent, body});
  }
  if (lines.empty()) throw std::runtime_error("docker-compose.yml is empty");
  std::size_t i = 0;
  if (lines[0].indent != 0) throw yaml_error(lines[0].number, "the top level must not be indented");
  Yaml root = parse_block(lines, i, 0);
  if (i != lines.size()) throw yaml_error(lines[i].number, "unexpected line");
  return root;
}

// --- the checks --------------------------------------------------------------------------------

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, separator)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string env(const Yaml& service, const std::string& name) {
  const Yaml* environment = service.find("environment");
  const Yaml* value = environment != nullptr ? environment->find(name) : nullptr;
  return value != nullptr ? value->scalar : std::string();
}

// Compose's variable substitution as the file uses it: "${NAME:-default}" becomes the value of
// NAME in `variables`, else the default. Any other "${" or "$" form throws (the file keeps to this one).
std::string interpolate(const std::string& text, const std::map<std::string, std::string>& variables = {}) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      out += text[i];
      continue;
    }
    const auto close = text.find('}', i);
    const auto sep = text.find(":-", i);
    if (i + 1 >= text.size() || text[i + 1] != '{' || close == std::string::npos || sep == std::string::npos ||
        sep > close) {
      throw std::runtime_error("docker-compose.yml: unsupported substitution at: " + text.substr(i, 40));
    }
    const std::string name = text.substr(i + 2, sep - i - 2);
    const auto found = variables.find(name);
    out += found != variables.end() ? found->second : text.substr(sep + 2, close - sep - 2);
    i = close;
  }
  return out;
}

// Every way docker-compose.yml (`compose_text`) departs from the harness's topology; empty if none.
std::vector<std::string> topology_problems(const std::string& compose_text, const EnsembleTopology& harness) {
  std::vector<std::string> problems;
  const auto problem = [&problems](const std::string& text) { problems.push_back(text); };
  const Yaml compose = parse_yaml(interpolate(compose_text));
  // docker-compose 1.29 (Debian 12's) refuses any top-level key but these.
  for (const auto& key : compose.keys()) {
    if (key != "services" && key != "volumes" && key != "networks" && key != "version") {
      problem("top-level key '" + key + "': docker-compose 1.29 rejects it");
    }
  }
  const Yaml& services = compose.at("services");

  std::vector<std::string> zk_names, account_names, postgres_names;
  for (const auto& [name, service] : services.map) {
    if (!env(service, "ZOO_MY_ID").empty())
      zk_names.push_back(name);
    else if (!env(service, "POSTGRES_PASSWORD").empty())
      postgres_names.push_back(name);
    else if (name.rfind("account-", 0) == 0)
      account_names.push_back(name);
    else
      problem("service " + name + " is neither ZooKeeper, PostgreSQL nor an account service");
    // The host's network, each service on its own loopback ports, as the harness runs them (and
    // as an engine without bridge or NAT can run them).
    const Yaml* network = service.find("network_mode");
    if (network == nullptr || network->scalar != "host")
      problem(name + " is not on the host network (network_mode: host)");
    if (service.find("ports") != nullptr) problem(name + " publishes ports (host networking has none to publish)");
  }

  // ZooKeeper: as many members as the harness starts, the same ids, all listing the same server.N
  // entries, each built from docker/zookeeper unless an image is given.
  if (zk_names.size() != harness.members.size()) {
    problem(std::to_string(zk_names.size()) + " ZooKeeper services, the harness starts " +
            std::to_string(harness.members.size()));
  }
  std::set<int> harness_ids;
  for (const auto& member : harness.members) harness_ids.insert(member.id);
  std::set<int> harness_entry_ids;
  for (const auto& line : harness.server_entries) {
    const auto entry = parse_server_entry(line);
    if (!entry) {
      problem("the harness wrote an unreadable server entry: " + line);
      continue;
    }
    harness_entry_ids.insert(entry->id);
    const auto member = std::find_if(harness.members.begin(), harness.members.end(),
                                     [&](const EnsembleMember& m) { return m.id == entry->id; });
    if (member == harness.members.end() || member->peer_port != entry->peer_port ||
        member->election_port != entry->election_port) {
      problem("the harness's entry " + line + " does not match the member with myid " + std::to_string(entry->id));
    }
    if (entry->host != "127.0.0.1") problem("the harness's entry " + line + " is not on 127.0.0.1");
  }
  if (harness_entry_ids != harness_ids) problem("the harness's server.N ids differ from its members' myid files");

  std::set<int> compose_ids;
  std::string first_servers;
  for (const auto& name : zk_names) {
    const Yaml& service = services.at(name);
    const std::string my_id = env(service, "ZOO_MY_ID");
    if (my_id.find_first_not_of("0123456789") != std::string::npos)
      problem(name + " has no numeric ZOO_MY_ID");
    else
      compose_ids.insert(std::stoi(my_id));
    if (env(service, "ZOO_4LW_COMMANDS_WHITELIST") != "*") problem(name + ": ZOO_4LW_COMMANDS_WHITELIST is not \"*\"");
    const std::string servers = env(service, "ZOO_SERVERS");
    if (first_servers.empty())
      first_servers = servers;
    else if (servers != first_servers)
      problem(name + "'s ZOO_SERVERS differs from " + zk_names.front() + "'s");
    const Yaml* build = service.find("build");
    const Yaml* context = build != nullptr ? build->find("context") : nullptr;
    if (context == nullptr || context->scalar != "docker/zookeeper")
      problem(name + " is not built from docker/zookeeper");
  }
  if (compose_ids != harness_ids) problem("ZOO_MY_ID values differ from the harness's member ids");

  std::set<int> entry_ids, ports;
  std::set<std::string> zk_client_addresses;  // "127.0.0.1:2181", ... from ZOO_SERVERS
  for (const auto& text : split(first_servers, ' ')) {
    const auto entry = parse_server_entry(text);
    if (!entry || !entry->client_port) {
      problem("unreadable ZOO_SERVERS entry (want server.N=host:peer:election;client): " + text);
      continue;
    }
    if (!entry_ids.insert(entry->id).second)
      problem("ZOO_SERVERS lists server." + std::to_string(entry->id) + " twice");
    if (entry->host != "127.0.0.1") problem("ZOO_SERVERS entry " + text + " is not on 127.0.0.1");
    for (const int port : {entry->peer_port, entry->election_port, *entry->client_port}) {
      if (!ports.insert(port).second) problem("ZOO_SERVERS entry " + text + " reuses port " + std::to_string(port));
    }
    zk_client_addresses.insert(entry->host + ":" + std::to_string(*entry->client_port));
  }
  if (entry_ids != harness_entry_ids) problem("ZOO_SERVERS ids differ from the harness's server.N ids");

  // PostgreSQL 15, one, built from docker/postgres unless an image is given.
  if (postgres_names.size() != 1) problem(std::to_string(postgres_names.size()) + " PostgreSQL services, want 1");
  std::string pg_port, pg_user, pg_password, pg_db;
  for (const auto& name : postgres_names) {
    const Yaml& service = services.at(name);
    const Yaml* build = service.find("build");
    const Yaml* context = build != nullptr ? build->find("context") : nullptr;
    if (context == nullptr || context->scalar != "docker/postgres")
      problem(name + " is not built from docker/postgres");
    pg_port = env(service, "PGPORT");
    pg_user = env(service, "POSTGRES_USER");
    pg_password = env(service, "POSTGRES_PASSWORD");
    pg_db = env(service, "POSTGRES_DB");
    if (pg_port.empty() || !ports.insert(std::stoi(pg_port)).second) problem(name + "'s PGPORT is missing or taken");
  }

  // Account services: three, built from the Dockerfile, each given every ZooKeeper member (as the
  // harness gives clients every member), the database, and its own port.
  if (account_names.size() != 3) problem(std::to_string(account_names.size()) + " account services, want 3");
  const std::size_t harness_clients = split(harness.connect_string, ',').size();
  for (const auto& name : account_names) {
    const Yaml& service = services.at(name);
    const Yaml* build = service.find("build");
    const Yaml* dockerfile = build != nullptr ? build->find("dockerfile") : nullptr;
    if (dockerfile == nullptr || dockerfile->scalar != "examples/account_service/Dockerfile") {
      problem(name + " is not built from examples/account_service/Dockerfile");
    }
    const auto zk = split(env(service, "DLOCK_ZK"), ',');
    if (std::set<std::string>(zk.begin(), zk.end()) != zk_client_addresses || zk.size() != zk_client_addresses.size()) {
      problem(name + "'s DLOCK_ZK '" + env(service, "DLOCK_ZK") + "' does not list every ZooKeeper member once");
    }
    if (zk.size() != harness_clients) problem(name + "'s DLOCK_ZK has another member count than the harness's");
    const std::string db = " " + env(service, "DATABASE_URL") + " ";
    for (const std::string& want : {std::string("host=127.0.0.1"), "port=" + pg_port, "user=" + pg_user,
                                    "password=" + pg_password, "dbname=" + pg_db}) {
      if (db.find(" " + want + " ") == std::string::npos) problem(name + "'s DATABASE_URL lacks " + want);
    }
    const std::string port = env(service, "PORT");
    if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
        !ports.insert(std::stoi(port)).second) {
      problem(name + "'s PORT '" + port + "' is missing or taken");
    }
    const Yaml* depends = service.find("depends_on");
    for (const auto& other : zk_names) {
      if (depends == nullptr || depends->find(other) == nullptr) problem(name + " does not depend on " + other);
    }
    for (const auto& other : postgres_names) {
      if (depends == nullptr || depends->find(other) == nullptr) problem(name + " does not depend on " + other);
    }
  }
  return problems;
}

std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += "\n  " + p;
  return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to, bool all = false) {
  bool any = false;
  for (auto at = text.find(from); at != std::string::npos;
       at = all ? text.find(from, at + to.size()) : std::string::npos) {
    text.replace(at, from.size(), to);
    any = true;
  }
  if (!any) throw std::logic_error("negative control: '" + from + "' is not in docker-compose.yml");
  return text;
}

bool mentions(const std::vector<std::string>& problems, const std::string& needle) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string& p) { return p.find(needle) != std::string::npos; });
}

class ComposeTopology : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const TestingEnsemble ensemble;  // only the facts it started with are needed
    harness_ = ensemble.describe();
  }
  static EnsembleTopology harness_;
  const std::string compose_ = read_text(kRepo / "docker-compose.yml");
};
EnsembleTopology ComposeTopology::harness_;

TEST_F(ComposeTopology, TheHarnessStartsMembersOneToThreeWithServerEntries) {
  ASSERT_EQ(harness_.members.size(), 3u);
  ASSERT_EQ(harness_.server_entries.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(harness_.members[i].id, static_cast<int>(i) + 1);
    const auto entry = parse_server_entry(harness_.server_entries[i]);
    ASSERT_TRUE(entry) << harness_.server_entries[i];
    EXPECT_EQ(entry->id, static_cast<int>(i) + 1);
  }
}

TEST_F(ComposeTopology, ComposeFileMatchesTheHarness) {
  const auto problems = topology_problems(compose_, harness_);
  EXPECT_TRUE(problems.empty()) << "docker-compose.yml departs from the harness:" << joined(problems);
}

TEST_F(ComposeTopology, TheDockerfileBuildsTheServiceOnDebian12) {
  const std::string dockerfile = read_text(kRepo / "examples/account_service/Dockerfile");
  EXPECT_NE(dockerfile.find("\nARG BASE_IMAGE=debian:12"), std::string::npos);
  for (const char* package :
       {"build-essential", "cmake", "libzookeeper-st-dev", "nlohmann-json3-dev", "libboost1.81-dev", "libpq-dev"}) {
    EXPECT_NE(dockerfile.find(std::string(" ") + package), std::string::npos) << package;
  }
  EXPECT_NE(dockerfile.find("--target account_service"), std::string::npos);
  EXPECT_NE(dockerfile.find("ENTRYPOINT [\"/usr/local/bin/account_service\"]"), std::string::npos);
}

TEST_F(ComposeTopology, VariablesReplaceTheDefaults) {
  EXPECT_EQ(interpolate("a ${X:-1} b ${Y:-} c"), "a 1 b  c");
  EXPECT_EQ(interpolate("${X:-1}:${Y:-2}", {{"X", "7"}}), "7:2");
  EXPECT_THROW(interpolate("$X"), std::runtime_error);
  EXPECT_THROW(interpolate("${X}"), std::runtime_error);
}

// Negative controls: each departure is caught, by the check meant for it.
TEST_F(ComposeTopology, NegativeControlATopLevelNameIsRejected) {
  const auto problems = topology_problems("name: accounts\n" + compose_, harness_);
  EXPECT_TRUE(mentions(problems, "docker-compose 1.29 rejects it")) << joined(problems);
}

TEST_F(ComposeTopology, NegativeControlAServiceOffTheHostNetworkIsRejected) {
  const auto problems =
      topology_problems(replaced(compose_, "      - \"pgdata:/var/lib/postgresql/data\"",
                                 "      - \"pgdata:/var/lib/postgresql/data\"\n    ports:\n      - \"5432:5432\""),
                        harness_);
  EXPECT_TRUE(mentions(problems, "postgres publishes ports")) << joined(problems);
}

TEST_F(ComposeTopology, NegativeControlAClientMissingAMemberIsRejected) {
  const auto problems =
      topology_problems(replaced(compose_, ",127.0.0.1:${DLOCK_ZK3_PORT:-2183}\"", "\"", true), harness_);
  EXPECT_TRUE(mentions(problems, "does not list every ZooKeeper member")) << joined(problems);
}

TEST_F(ComposeTopology, NegativeControlTwoMembersOnOnePortAreRejected) {
  const auto problems = topology_problems(
      replaced(compose_, "${DLOCK_ZK3_ELECTION_PORT:-3890}", "${DLOCK_ZK3_ELECTION_PORT:-3889}", true), harness_);
  EXPECT_TRUE(mentions(problems, "reuses port 3889")) << joined(problems);
}

TEST_F(ComposeTopology, NegativeControlAMismatchedMemberIdIsRejected) {
  const auto problems = topology_problems(replaced(compose_, "ZOO_MY_ID: \"3\"", "ZOO_MY_ID: \"4\""), harness_);
  EXPECT_TRUE(mentions(problems, "ZOO_MY_ID values differ")) << joined(problems);
}

TEST_F(ComposeTopology, NegativeControlAMissingAccountServiceIsRejected) {
  // account-3 becomes a service of another kind: the count is off.
  const auto problems = topology_problems(replaced(compose_, "  account-3:", "  billing:"), harness_);
  EXPECT_TRUE(mentions(problems, "2 account services")) << joined(problems);
}

TEST_F(ComposeTopology, NegativeControlAHarnessOfAnotherSizeIsRejected) {
  EnsembleTopology five = harness_;
  five.members.push_back({4, 1, 2, 3});
  five.members.push_back({5, 4, 5, 6});
  five.server_entries.push_back("server.4=127.0.0.1:2:3");
  five.server_entries.push_back("server.5=127.0.0.1:5:6");
  five.connect_string += ",127.0.0.1:1,127.0.0.1:4";
  const auto problems = topology_problems(compose_, five);
  EXPECT_TRUE(mentions(problems, "the harness starts 5")) << joined(problems);
}

TEST(ComposeYamlSubset, UnsupportedYamlIsRefusedNotMisread) {
  EXPECT_THROW(parse_yaml("x: &anchor 1\n"), std::runtime_error);
  EXPECT_THROW(parse_yaml("x: |\n  text\n"), std::runtime_error);
  EXPECT_THROW(parse_yaml("x:\n\t- a\n"), std::runtime_error);
  EXPECT_THROW(parse_yaml("x:\n  - a: 1\n"), std::runtime_error);
  EXPECT_THROW(parse_yaml("x: 1\nx: 2\n"), std::runtime_error);
  const Yaml ok =
      parse_yaml("# c\na:\n  b: \"q # not a comment\"  # comment\n  c: [\"x\", 'y, z']\n  d:\n    - \"1:2\"\n");
  EXPECT_EQ(ok.at("a").at("b").scalar, "q # not a comment");
  ASSERT_EQ(ok.at("a").at("c").seq.size(), 2u);
  EXPECT_EQ(ok.at("a").at("c").seq[1].scalar, "y, z");
  EXPECT_EQ(ok.at("a").at("d").seq.at(0).scalar, "1:2");
}

}  // namespace
}  // namespace dlock::testing
