// The prize draw: a pool of prizes in PostgreSQL, several instances drawing at once for many
// users, and the same draws guarded six ways (README.md). One run compares them on the same
// pool and prints draws per second and prizes oversold.
//
//   prize_draw [--instances 3] [--threads 8] [--draws 200] [--prizes 10] [--think-us 0]
//              [--variants none,for-update,optimistic,dlock-nohandoff,dlock,dlock-batch]
//              [--runs 3] [--warmup-draws 50]
//              [--max-passes 8] [--max-time-ms 10] [--zk host:port] [--db conninfo] [--pg-fsync] [--check]
//
// Each variant is measured --runs times, the order of the variants rotated from run to run so that
// none always meets a server just warmed (or left busy) by the same other one; before each
// measurement the same variant draws --warmup-draws per thread unmeasured (the servers' caches and
// the JVM's JIT, the instances' connections). The table gives each variant's median run, with the
// smallest and largest draws/s of its runs.
//
// Without --zk / --db it starts its own ZooKeeper and PostgreSQL 15 (Debian's packages) on free
// loopback ports and stops them at the end; that PostgreSQL skips fsync unless --pg-fsync (then
// every COMMIT waits for the disk, as in production). Each instance is this program run again with
// --instance-of. --check exits 1 unless every guarded variant oversold nothing (and failed no
// draw) and the unguarded one oversold something (the control: the race is really there).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "dlock/testing/postgres.hpp"
#include "dlock/testing/process.hpp"
#include "dlock/testing/server.hpp"
#include "instance.hpp"
#include "options.hpp"
#include "pg_connection.hpp"
#include "prize_pool.hpp"
#include "variant.hpp"

namespace prize_draw {
namespace {

using Clock = std::chrono::steady_clock;
using dlock::testing::ChildProcess;

constexpr std::int64_t kPool = 1;

struct Plan {
  std::string zk, db;
  int instances = 3, threads = 8, draws = 200, prizes = 10;
  std::chrono::microseconds think{0};
  dlock::HandoffOptions handoff;  // max_passes and max_time of the dlock variant
  std::vector<Variant> variants;
};

struct Outcome {
  Variant variant{};
  long long draws = 0, errors = 0, retries = 0, requests = 0;
  long long local_grants = 0, zookeeper_grants = 0;  // of the pool lock (dlock's metrics)
  long long batches = 0;                             // dlock-batch: batches served
  std::vector<std::int64_t> latencies_us;            // every draw's, all instances
  double seconds = 0;
  PoolTally pool;
};

// "key=value" of a result line.
long long field(const std::string& line, const std::string& key) {
  const auto at = line.find(" " + key + "=");
  if (at == std::string::npos) throw std::runtime_error("no " + key + " in \"" + line + "\"");
  return std::stoll(line.substr(at + key.size() + 2));
}

// "key=1,2,3" of a result line (the last field).
void append_list(const std::string& line, const std::string& key, std::vector<std::int64_t>& to) {
  const auto at = line.find(" " + key + "=");
  if (at == std::string::npos) throw std::runtime_error("no " + key + " in a result line");
  std::stringstream list(line.substr(at + key.size() + 2));
  for (std::string value; std::getline(list, value, ',');) {
    if (!value.empty()) to.push_back(std::stoll(value));
  }
}

// The q-quantile (0..1) of `values` in milliseconds; 0 for none.
double quantile_ms(std::vector<std::int64_t> values, double q) {
  if (values.empty()) return 0;
  const auto at = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(at), values.end());
  return static_cast<double>(values[at]) / 1000.0;
}

Outcome run_variant(const Plan& plan, Variant variant, dlock_examples::PgConnection& db) {
  const int total = plan.instances * plan.threads * plan.draws;
  // Half the draws win: the pool runs out half-way, where an unguarded draw oversells most.
  restock(db, kPool, plan.prizes, (total / 2 + plan.prizes - 1) / plan.prizes);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<ChildProcess> instances;
  for (int i = 0; i < plan.instances; ++i) {
    instances.emplace_back(std::vector<std::string>{
        self, "--instance-of", std::string(to_string(variant)), "--index", std::to_string(i), "--zk", plan.zk, "--db",
        plan.db, "--threads", std::to_string(plan.threads), "--draws", std::to_string(plan.draws), "--think-us",
        std::to_string(plan.think.count()), "--max-passes", std::to_string(plan.handoff.max_passes), "--max-time-ms",
        std::to_string(plan.handoff.max_time.count())});
  }
  for (auto& instance : instances) {
    const auto line = instance.read_line(std::chrono::seconds(60));
    if (line != "ready") throw std::runtime_error("an instance did not start (said \"" + line.value_or("") + "\")");
  }
  const auto start = Clock::now();
  for (auto& instance : instances) instance.write_line("go");
  Outcome outcome;
  outcome.variant = variant;
  for (auto& instance : instances) {
    const auto line = instance.read_line(std::chrono::minutes(10));
    if (!line || line->rfind("result ", 0) != 0) throw std::runtime_error("an instance ended without a result");
    outcome.draws += field(*line, "draws");
    outcome.errors += field(*line, "errors");
    outcome.retries += field(*line, "retries");
    outcome.requests += field(*line, "requests");
    outcome.local_grants += field(*line, "local_grants");
    outcome.zookeeper_grants += field(*line, "zookeeper_grants");
    outcome.batches += field(*line, "batches");
    append_list(*line, "latency_us", outcome.latencies_us);
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& instance : instances) instance.wait();
  outcome.pool = tally(db, kPool);
  return outcome;
}

double draws_per_s(const Outcome& o) { return static_cast<double>(o.draws) / o.seconds; }

// A variant's runs: the median one (by draws/s), and the range of draws/s over all of them.
struct Measured {
  Outcome median;
  double slowest = 0, fastest = 0;
};

Measured summarize(std::vector<Outcome> runs) {
  std::sort(runs.begin(), runs.end(),
            [](const Outcome& a, const Outcome& b) { return draws_per_s(a) < draws_per_s(b); });
  return {runs[runs.size() / 2], draws_per_s(runs.front()), draws_per_s(runs.back())};
}

void print_table(const Plan& plan, int runs, int warmup_draws, const std::vector<Measured>& measured) {
  std::printf(
      "%d instances x %d threads x %d draws on one pool of %d prizes (half the draws win), think %lld us, "
      "hand-off max_passes %u, max_time %lld ms; %d runs, order rotated, each after %d warm-up draws per "
      "thread\n\n",
      plan.instances, plan.threads, plan.draws, plan.prizes, static_cast<long long>(plan.think.count()),
      plan.handoff.max_passes, static_cast<long long>(plan.handoff.max_time.count()), runs, warmup_draws);
  std::printf(
      "| variant | draws/s (median run) | slowest-fastest run | draws | seconds | prizes awarded | oversold | "
      "lost stock writes | unfenced | retries | ZooKeeper requests per draw | locks passed locally | draws per batch "
      "| p50 ms | p99 ms |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& m : measured) {
    const Outcome& o = m.median;
    const long long grants = o.local_grants + o.zookeeper_grants;
    const std::string local = grants > 0 ? std::to_string(o.local_grants * 100 / grants) + " %" : std::string("-");
    const std::string per_batch =
        o.batches > 0 ? std::to_string(static_cast<double>(o.draws) / static_cast<double>(o.batches)).substr(0, 4)
                      : std::string("-");
    std::printf(
        "| %s | %.0f | %.0f-%.0f | %lld | %.2f | %lld | %lld | %lld | %lld | %lld | %.3f | %s | %s | %.2f | %.2f |\n",
        std::string(to_string(o.variant)).c_str(), draws_per_s(o), m.slowest, m.fastest, o.draws, o.seconds,
        static_cast<long long>(o.pool.awarded), static_cast<long long>(o.pool.oversold),
        static_cast<long long>(o.pool.lost_writes), static_cast<long long>(o.pool.unfenced), o.retries,
        o.draws > 0 ? static_cast<double>(o.requests) / static_cast<double>(o.draws) : 0.0, local.c_str(),
        per_batch.c_str(), quantile_ms(o.latencies_us, 0.5), quantile_ms(o.latencies_us, 0.99));
  }
  std::fflush(stdout);
}

// The --check verdict: a list of what is wrong (empty when all is as expected).
std::vector<std::string> problems_of(const std::vector<Outcome>& outcomes) {
  std::vector<std::string> problems;
  for (const auto& o : outcomes) {
    const std::string name(to_string(o.variant));
    if (o.errors > 0) problems.push_back(name + ": " + std::to_string(o.errors) + " draws failed");
    if (o.pool.draws != o.draws) {
      problems.push_back(name + ": " + std::to_string(o.pool.draws) + " draws recorded, " + std::to_string(o.draws) +
                         " reported");
    }
    if (guards_stock(o.variant) && (o.pool.oversold != 0 || o.pool.lost_writes != 0)) {
      problems.push_back(name + ": " + std::to_string(o.pool.oversold) + " prizes oversold, " +
                         std::to_string(o.pool.lost_writes) + " stock writes lost");
    }
    // dlock's metrics count every pool lock granted: one per draw, passed locally only with hand-off.
    if ((o.variant == Variant::dlock || o.variant == Variant::dlock_nohandoff) &&
        o.local_grants + o.zookeeper_grants != o.draws) {
      problems.push_back(name + ": the metrics counted " + std::to_string(o.local_grants + o.zookeeper_grants) +
                         " pool locks granted for " + std::to_string(o.draws) + " draws");
    }
    if (o.variant == Variant::dlock && o.draws > 0 && o.local_grants == 0) {
      problems.push_back(name + ": no pool lock was passed locally among " + std::to_string(o.draws) +
                         " draws by threads of the same instances");
    }
    if (o.variant == Variant::dlock_nohandoff && o.local_grants != 0) {
      problems.push_back(name + ": " + std::to_string(o.local_grants) + " pool locks passed locally with hand-off off");
    }
    if (uses_dlock(o.variant) && o.pool.unfenced != 0) {
      problems.push_back(name + ": " + std::to_string(o.pool.unfenced) + " draws recorded without a fencing token");
    }
    if (o.variant == Variant::dlock_batch && (o.batches == 0 || o.batches > o.draws)) {
      problems.push_back(name + ": " + std::to_string(o.batches) + " batches served " + std::to_string(o.draws) +
                         " draws");
    }
    if (!guards_stock(o.variant) && o.pool.oversold == 0) {
      problems.push_back(name + ": the unguarded control oversold nothing, so this run cannot show a guard working");
    }
  }
  return problems;
}

int compare(const Options& options) {
  Plan plan;
  plan.instances = static_cast<int>(options.integer("--instances", 3, 1, 64));
  plan.threads = static_cast<int>(options.integer("--threads", 8, 1, 64));
  plan.draws = static_cast<int>(options.integer("--draws", 200, 1, 1'000'000));
  plan.prizes = static_cast<int>(options.integer("--prizes", 10, 1, 10'000));
  plan.think = std::chrono::microseconds(options.integer("--think-us", 0, 0, 10'000'000));
  plan.handoff.max_passes = static_cast<unsigned>(options.integer("--max-passes", 8, 1, 1'000'000));
  plan.handoff.max_time = std::chrono::milliseconds(options.integer("--max-time-ms", 10, 0, 3'600'000));
  std::stringstream list(options.text("--variants", "none,for-update,optimistic,dlock-nohandoff,dlock,dlock-batch"));
  for (std::string name; std::getline(list, name, ',');) {
    const auto variant = parse_variant(name);
    if (!variant) {
      throw std::invalid_argument("--variants: unknown variant \"" + name +
                                  "\" (expected none, for-update, optimistic, dlock-nohandoff, dlock or dlock-batch)");
    }
    plan.variants.push_back(*variant);
  }
  std::unique_ptr<dlock::testing::TestingServer> zk;
  std::unique_ptr<dlock::testing::PostgresServer> pg;
  if (options.has("--zk")) {
    plan.zk = options.text("--zk", "");
  } else {
    zk = std::make_unique<dlock::testing::TestingServer>();
    plan.zk = zk->connect_string();
  }
  if (options.has("--db")) {
    plan.db = options.text("--db", "");
  } else {
    pg = std::make_unique<dlock::testing::PostgresServer>(dlock::testing::PostgresOptions{
        .max_connections = plan.instances * plan.threads + 10, .fsync = options.has("--pg-fsync")});
    plan.db = pg->conninfo();
  }
  dlock_examples::PgConnection db(plan.db);
  create_schema(db);
  const int runs = static_cast<int>(options.integer("--runs", 3, 1, 100));
  const int warmup_draws = static_cast<int>(options.integer("--warmup-draws", 50, 0, 1'000'000));
  Plan warmup = plan;
  warmup.draws = warmup_draws;
  std::vector<std::vector<Outcome>> runs_of(plan.variants.size());
  std::vector<Outcome> outcomes;  // every measured run, for --check
  for (int run = 0; run < runs; ++run) {
    for (std::size_t k = 0; k < plan.variants.size(); ++k) {
      const std::size_t i = (k + static_cast<std::size_t>(run)) % plan.variants.size();
      if (warmup_draws > 0) run_variant(warmup, plan.variants[i], db);
      outcomes.push_back(run_variant(plan, plan.variants[i], db));
      runs_of[i].push_back(outcomes.back());
      std::fprintf(stderr, "run %d of %d: %s %.0f draws/s\n", run + 1, runs,
                   std::string(to_string(plan.variants[i])).c_str(), draws_per_s(outcomes.back()));
    }
  }
  std::vector<Measured> measured;
  for (auto& of_variant : runs_of) measured.push_back(summarize(of_variant));
  print_table(plan, runs, warmup_draws, measured);
  if (!options.has("--check")) return 0;
  const auto problems = problems_of(outcomes);
  for (const auto& problem : problems) std::fprintf(stderr, "check failed: %s\n", problem.c_str());
  if (problems.empty()) std::printf("\ncheck passed: every guard oversold nothing; the unguarded control oversold\n");
  return problems.empty() ? 0 : 1;
}

int instance(const Options& options) {
  InstanceOptions o;
  const auto variant = parse_variant(options.text("--instance-of", ""));
  if (!variant)
    throw std::invalid_argument("--instance-of: unknown variant \"" + options.text("--instance-of", "") + "\"");
  o.variant = *variant;
  o.index = static_cast<int>(options.integer("--index", 0, 0, 1000));
  o.name = "instance-" + std::to_string(o.index);
  o.zk = options.text("--zk", "");
  o.db = options.text("--db", "");
  o.threads = static_cast<int>(options.integer("--threads", 8, 1, 64));
  o.draws = static_cast<int>(options.integer("--draws", 200, 1, 1'000'000));
  o.think = std::chrono::microseconds(options.integer("--think-us", 0, 0, 10'000'000));
  o.handoff.max_passes = static_cast<unsigned>(options.integer("--max-passes", 8, 1, 1'000'000));
  o.handoff.max_time = std::chrono::milliseconds(options.integer("--max-time-ms", 10, 0, 3'600'000));
  return run_instance(o);
}

}  // namespace
}  // namespace prize_draw

namespace {

constexpr const char* kUsage =
    "usage: prize_draw [OPTIONS]\n"
    "A pool of prizes in PostgreSQL, several instances drawing at once for many users, and the same\n"
    "draws guarded six ways; prints draws per second and prizes oversold for each.\n"
    "\n"
    "  --instances N     processes drawing at once (default 3, 1..64)\n"
    "  --threads N       threads per instance (default 8, 1..64)\n"
    "  --draws N         draws per thread (default 200)\n"
    "  --prizes N        prizes in the pool (default 10)\n"
    "  --think-us N      work per draw outside the lock, in microseconds (default 0)\n"
    "  --variants LIST   of none, for-update, optimistic, dlock-nohandoff, dlock, dlock-batch\n"
    "                    (default: all six, in that order)\n"
    "  --runs N          measure each variant N times, the order rotated from run to run; the table\n"
    "                    shows the median run and the slowest and fastest (default 3, 1..100)\n"
    "  --warmup-draws N  unmeasured draws per thread before each measurement, of the same variant\n"
    "                    (default 50: the servers and connections warm; 0: none)\n"
    "  --max-passes N    the dlock variants' HandoffOptions::max_passes (default 8)\n"
    "  --max-time-ms N   their HandoffOptions::max_time (default 10)\n"
    "  --zk HOST:PORT    a ZooKeeper to use (default: one started on a free loopback port)\n"
    "  --db CONNINFO     a PostgreSQL to use (default: one started on a free loopback port)\n"
    "  --pg-fsync        the started PostgreSQL waits for the disk at each COMMIT\n"
    "  --check           exit 1 unless every guard oversold nothing and the unguarded control did\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit status: 0 done (and with --check, passed); 1 --check failed; 2 bad command line or a\n"
    "failure (the message says which).\n";

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (std::find(args.begin(), args.end(), "--help") != args.end() ||
        std::find(args.begin(), args.end(), "-h") != args.end()) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    const prize_draw::Options options(
        args,
        {"--instances", "--threads", "--draws", "--prizes", "--think-us", "--variants", "--max-passes", "--max-time-ms",
         "--zk", "--db", "--instance-of", "--index", "--runs", "--warmup-draws"},
        {"--check", "--pg-fsync"});
    return options.has("--instance-of") ? prize_draw::instance(options) : prize_draw::compare(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prize_draw: %s\n", e.what());
    return 2;
  }
}
