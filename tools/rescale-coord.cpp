// rescale-coord: the coordinator of no-restart rescaling for one job (serve), its admin client (status, shrink,
// expand, drain-host, set, close) over the workers' port, the reference worker (worker) and the spot
// interruption agent (spot-agent).
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <mutex>
#include <random>

#include <fmt/format.h>

#include "gpuops/core/cli.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/rescale/admin_client.hpp"
#include "gpuops/rescale/admin_report.hpp"
#include "gpuops/rescale/client.hpp"
#include "gpuops/rescale/metadata_poller.hpp"
#include "gpuops/rescale/reference_worker.hpp"
#include "gpuops/rescale/server.hpp"
#include "gpuops/rescale/spot_agent.hpp"
#include "gpuops/rescale/token_file.hpp"

using namespace gpuops;
using namespace gpuops::rescale;

namespace {

/// An admin command waits this long for its reply unless --timeout says otherwise.
constexpr std::chrono::milliseconds default_admin_timeout{10000};

struct ServeArgs {
    std::string listen = fmt::format("{}:{}", default_host, default_port);
    std::string db, token_file, admin_token_file, port_file, below_min = "wait";
    bool manual_expand = false;
    CoordinatorConfig config;
    ServerOptions server;
};

struct AdminArgs {
    std::string coord = fmt::format("{}:{}", default_host, default_port);
    std::string token_file, host, deadline;
    std::uint64_t count = 0, min_size = 0, max_size = 0;
    TimeMs batch_window_ms = 0;
    std::vector<MemberId> members;
    std::vector<std::string> workers;
};

HostPort address_option(std::string_view option, std::string_view text) {
    try {
        return parse_host_port(text);
    } catch (const DataError& e) {
        throw UsageError(fmt::format("{}: {}", option, e.reason()));
    }
}

CLI::App* add_serve(CLI::App& app, ServeArgs& a) {
    auto* cmd = app.add_subcommand("serve", "Run the coordinator for one job until it is closed or signalled");
    auto& c = a.config;
    cmd->add_option("--listen", a.listen, "Listen on HOST:PORT (default 127.0.0.1:7100; port 0: any free port)")
        ->type_name("ADDR");
    cmd->add_option("--db", a.db, "The coordinator's record store")->required()->type_name("FILE");
    cmd->add_option("--job", c.job, "The job id that workers name in HELLO")->required()->type_name("ID");
    cmd->add_option("--token-file", a.token_file, "The job token (mode 600 or stricter)")->required()->type_name("F");
    cmd->add_option("--admin-token-file", a.admin_token_file, "The admin token (default: the job token)")
        ->type_name("F");
    cmd->add_option("--port-file", a.port_file, "Once listening, write the bound port to F (atomically)")
        ->type_name("F");
    cmd->add_option("--min", c.min_size, "Smallest view the job may run with (default 1)")->type_name("N");
    cmd->add_option("--max", c.max_size, "Largest view (default 1024)")->type_name("N");
    cmd->add_option("--lease-ms", c.lease_ms, "A member is dead this long after its last message (default 5000)")
        ->type_name("MS");
    cmd->add_option("--reconnect-grace-ms", c.reconnect_grace_ms,
                    "Time to resume after a lost connection (default 5000)")
        ->type_name("MS");
    cmd->add_option("--batch-window-ms", c.batch_window_ms, "Coalesce joiners and notices this long (default 100)")
        ->type_name("MS");
    cmd->add_option("--safe-point-timeout-ms", c.safe_point_timeout_ms,
                    "Wait this long for safe points and drains (default 20000)")
        ->type_name("MS");
    cmd->add_option("--prepare-timeout-ms", c.prepare_timeout_ms, "Wait this long for ACKs (default 2000)")
        ->type_name("MS");
    cmd->add_option("--fence-timeout-ms", c.fence_timeout_ms, "A fence fails after this long (default 30000)")
        ->type_name("MS");
    cmd->add_option("--below-min", a.below_min, "When failures leave fewer than --min: wait (default) or close")
        ->check(CLI::IsMember({"wait", "close"}))
        ->type_name("POLICY");
    cmd->add_flag("--manual-expand", a.manual_expand, "Admit joiners only on 'expand', not after the batch window");
    cmd->add_option("--max-line-bytes", a.server.max_line_bytes, "Longest line a peer may send (default 1 MiB)")
        ->type_name("B");
    cmd->add_option("--max-queue-bytes", a.server.max_queue_bytes,
                    "Drop a peer that leaves more than B bytes unread (default 16 MiB)")
        ->type_name("B");
    return cmd;
}

ExitCode serve(const cli::Tool& tool, ServeArgs& a) {
    a.server.listen = address_option("--listen", a.listen);
    if (a.config.min_size < 1 || a.config.max_size < a.config.min_size) {
        throw UsageError(fmt::format("need 1 <= --min ({}) <= --max ({})", a.config.min_size, a.config.max_size));
    }
    a.config.token = read_token_file(a.token_file);
    a.config.admin_token = a.admin_token_file.empty() ? a.config.token : read_token_file(a.admin_token_file);
    a.config.below_min = a.below_min == "close" ? BelowMinPolicy::close : BelowMinPolicy::wait;
    a.config.auto_expand = !a.manual_expand;
    std::random_device entropy;
    a.config.session_seed = (std::uint64_t{entropy()} << 32U) | entropy();
    a.server.handle_signals = true;
    a.server.note = [&tool](std::string_view message) { tool.note(message); };

    serve_job(a.server, a.config, a.db, a.port_file, [&](const HostPort& bound) {
        if (!tool.common().quiet) {
            std::cerr << fmt::format("{}: listening on {} for job {}\n", tool.name(), to_string(bound),
                                     quote(a.config.job));
        }
    });
    return ExitCode::ok;
}

/// SIGINT/SIGTERM ask the worker or the agent to leave cleanly.
std::atomic<bool> stop_requested{false};
extern "C" void request_stop(int /*signal*/) { stop_requested = true; }

struct WorkerArgs {
    std::string coord = fmt::format("{}:{}", default_host, default_port);
    std::string token_file;
    ReferenceWorkerOptions worker;
    std::int64_t heartbeat_ms = 1000;
    std::int64_t step_ms = 5;
    std::int64_t prepare_delay_ms = 0;
    bool no_exchange = false;
};

CLI::App* add_worker(CLI::App& app, WorkerArgs& a) {
    auto* cmd = app.add_subcommand("worker", "Run the reference worker: live state kept across rescales, events as "
                                             "JSON lines");
    auto& c = a.worker.client;
    cmd->add_option("--coord", a.coord, "The coordinator's HOST:PORT (default 127.0.0.1:7100)")->type_name("ADDR");
    cmd->add_option("--token-file", a.token_file, "The job token")->required()->type_name("F");
    cmd->add_option("--id", c.worker_id, "This worker's stable id (e.g. instance id and slot)")
        ->required()
        ->type_name("NAME");
    cmd->add_option("--job", c.job, "The job to join (default: the one the coordinator serves)")->type_name("ID");
    cmd->add_option("--host", c.host, "The host name to register (default: this host's)")->type_name("HOST");
    cmd->add_option("--buffer-bytes", a.worker.buffer_bytes, "Live state checked at every view change (default 1 MiB)")
        ->type_name("B");
    cmd->add_option("--step-ms", a.step_ms, "One step of work between safe points (default 5)")->type_name("MS");
    cmd->add_option("--heartbeat-ms", a.heartbeat_ms, "Heartbeat period (default 1000)")->type_name("MS");
    cmd->add_flag("--no-exchange", a.no_exchange, "Skip the put/fence address exchange after each commit");
    cmd->add_option("--prepare-delay-ms", a.prepare_delay_ms,
                    "Time endpoint reconciliation takes before each ACK (default 0)")
        ->type_name("MS");
    return cmd;
}

ExitCode worker(const cli::Tool& tool, WorkerArgs& a) {
    (void)address_option("--coord", a.coord);
    auto& c = a.worker.client;
    c.coord = a.coord;
    c.token = read_token_file(a.token_file);
    c.addr_b64 = base64_encode(fmt::format("{}@{}", c.worker_id, c.host.empty() ? "localhost" : c.host));
    c.heartbeat = std::chrono::milliseconds(std::max<std::int64_t>(a.heartbeat_ms, 1));
    a.worker.step = std::chrono::milliseconds(std::max<std::int64_t>(a.step_ms, 1));
    a.worker.exchange = !a.no_exchange;
    a.worker.prepare_delay = std::chrono::milliseconds(std::max<std::int64_t>(a.prepare_delay_ms, 0));
    (void)std::signal(SIGINT, request_stop);
    (void)std::signal(SIGTERM, request_stop);
    // Events are a record stream: one JSON line each, flushed, so a pipe sees them as they happen.
    std::mutex out;
    const WorkerEventSink sink = [&](const json_io::Json& event) {
        const std::lock_guard lock(out);
        std::cout << event.dump() << '\n' << std::flush;
    };
    const int rc = run_reference_worker(a.worker, stop_requested, sink);
    if (rc != 0) tool.warn(fmt::format("worker {} ended evicted or with its state corrupted", quote(c.worker_id)));
    return rc == 0 ? ExitCode::ok : ExitCode::negative;
}

struct SpotArgs {
    std::string coord = fmt::format("{}:{}", default_host, default_port);
    std::string token_file, provider = "aws", worker_id;
    PollerOptions poller;
    std::int64_t interval_ms = 1000;
    bool once = false;
};

CLI::App* add_spot_agent(CLI::App& app, SpotArgs& a) {
    auto* cmd = app.add_subcommand("spot-agent", "Poll the cloud's interruption notice and forward it as NOTICE");
    cmd->add_option("--provider", a.provider, "aws (default), gcp or azure")
        ->check(CLI::IsMember({"aws", "gcp", "azure"}))
        ->type_name("CLOUD");
    cmd->add_option("--metadata-url", a.poller.metadata_url, "The metadata service (default: the provider's)")
        ->type_name("URL");
    cmd->add_option("--coord", a.coord, "The coordinator's HOST:PORT (default 127.0.0.1:7100)")->type_name("ADDR");
    cmd->add_option("--token-file", a.token_file, "The job token")->required()->type_name("F");
    cmd->add_option("--worker-id", a.worker_id, "The worker(s) on this instance, as they registered")
        ->required()
        ->type_name("NAME");
    cmd->add_option("--interval-ms", a.interval_ms, "Time between polls (default 1000)")->type_name("MS");
    cmd->add_option("--azure-vm-name", a.poller.azure_vm_name, "azure: only events for this VM")->type_name("NAME");
    cmd->add_flag("--azure-acknowledge", a.poller.azure_acknowledge,
                  "azure: start the event early once the coordinator took the notice");
    cmd->add_flag("--once", a.once, "Poll once: forward a notice if there is one, exit 1 if there is none");
    return cmd;
}

ExitCode spot_agent(const cli::Tool& tool, SpotArgs& a) {
    const NoticeForwarder forwarder{address_option("--coord", a.coord), read_token_file(a.token_file), a.worker_id,
                                    default_admin_timeout};
    a.poller.provider = *parse_provider(a.provider);
    if (a.poller.metadata_url.empty()) a.poller.metadata_url = std::string(default_metadata_url(a.poller.provider));
    a.poller.interval = std::chrono::milliseconds(std::max<std::int64_t>(a.interval_ms, 1));
    MetadataPoller poller(a.poller);
    const NoticeHandler forward = [&](const SpotNotice& n) {
        const std::string taken = forward_notice(forwarder, n);
        tool.note(fmt::format("forwarded {} notice for {}: {}", to_string(n.provider), quote(a.worker_id), taken));
        std::cout << to_json(n).dump() << '\n' << std::flush;
    };
    if (a.once) {
        const auto notice = poller.poll_once();
        if (!notice) return ExitCode::negative;
        forward(*notice);
        if (a.poller.azure_acknowledge) poller.acknowledge(*notice);  // only once the coordinator took it
        return ExitCode::ok;
    }
    (void)std::signal(SIGINT, request_stop);
    (void)std::signal(SIGTERM, request_stop);
    poller.run(stop_requested, forward, [&](const Error& e) { tool.warn(e.what()); });
    return ExitCode::ok;
}

/// The options every admin command has; each subcommand gets its own copy bound to the same variables.
CLI::App* add_admin(CLI::App& app, AdminArgs& a, const std::string& name, const std::string& summary) {
    auto* cmd = app.add_subcommand(name, summary);
    cmd->add_option("--coord", a.coord, "The coordinator's HOST:PORT (default 127.0.0.1:7100)")->type_name("ADDR");
    cmd->add_option("--token-file", a.token_file, "The admin token")->required()->type_name("F");
    return cmd;
}

std::optional<TimeMs> deadline_ms(const std::string& text) {
    if (text.empty()) return std::nullopt;
    try {
        return std::chrono::duration_cast<std::chrono::milliseconds>(units::parse_duration(text)).count();
    } catch (const DataError& e) {
        throw UsageError("--deadline: " + e.reason());
    }
}

AdminCommand shrink_command(const CLI::App& cmd, const AdminArgs& a) {
    if ((cmd.count("--count") > 0) == (cmd.count("--members") > 0)) throw UsageError("give --count or --members");
    if (cmd.count("--count") > 0 && a.count == 0) throw UsageError("--count: must be at least 1");
    return ShrinkCmd{{}, a.members, a.count, deadline_ms(a.deadline)};
}

AdminCommand expand_command(const CLI::App& cmd, const AdminArgs& a) {
    if (cmd.count("--count") > 0 && cmd.count("--workers") > 0) throw UsageError("give --count or --workers");
    return ExpandCmd{{}, a.count, a.workers};
}

AdminCommand set_command(const CLI::App& cmd, const AdminArgs& a) {
    SetCmd c;
    if (cmd.count("--min") > 0) c.min_size = a.min_size;
    if (cmd.count("--max") > 0) c.max_size = a.max_size;
    if (cmd.count("--batch-window-ms") > 0) c.batch_window_ms = a.batch_window_ms;
    if (!c.min_size && !c.max_size && !c.batch_window_ms) throw UsageError("give --min, --max or --batch-window-ms");
    return c;
}

ExitCode admin(const cli::Tool& tool, AdminCommand command, const AdminArgs& a) {
    const HostPort coord = address_option("--coord", a.coord);
    const std::string token = read_token_file(a.token_file);
    std::visit([&](auto& c) { c.token = token; }, command);
    auto timeout = default_admin_timeout;
    if (!tool.common().timeout.empty()) {
        timeout = std::chrono::duration_cast<std::chrono::milliseconds>(units::parse_duration(tool.common().timeout));
    }
    const AdminReply reply = request_admin(coord, command, timeout);
    if (!reply.ok) {
        throw Error(ExitCode::negative, fmt::format("the coordinator refused: {} ({})", reply.msg,
                                                    reply.code ? to_string(*reply.code) : "no code"));
    }
    if (tool.common().format == "text") {
        tool.write(admin_report_text(reply));
    } else {
        tool.write(json_io::dump(admin_report_json(reply, tool.name()), !tool.common().compact));
    }
    return ExitCode::ok;
}

}  // namespace

int main(int argc, char** argv) {
    cli::Tool tool("rescale-coord",
                   "Coordinate no-restart rescaling of one job: 'serve' runs the coordinator; the other commands\n"
                   "ask a running coordinator for its status or to change the job's membership.",
                   {"json", "text"});
    auto& app = tool.app();
    app.fallthrough();  // --format, -o, --timeout may follow the subcommand
    ServeArgs serve_args;
    AdminArgs a;
    auto* serve_cmd = add_serve(app, serve_args);
    auto* status_cmd = add_admin(app, a, "status", "Print the coordinator's view, transition and members");
    auto* shrink_cmd = add_admin(app, a, "shrink", "Drain and remove members (the highest ranks with --count)");
    shrink_cmd->add_option("--count", a.count, "Remove this many members")->type_name("K");
    shrink_cmd->add_option("--members", a.members, "Remove these member ids")->delimiter(',')->type_name("ID");
    shrink_cmd->add_option("--deadline", a.deadline, "Time the victims have to drain (e.g. 30s)")->type_name("D");
    auto* expand_cmd = add_admin(app, a, "expand", "Admit waiting joiners now (all of them by default)");
    expand_cmd->add_option("--count", a.count, "Admit this many, in arrival order")->type_name("K");
    expand_cmd->add_option("--workers", a.workers, "Admit these worker ids")->delimiter(',')->type_name("ID");
    auto* drain_cmd = add_admin(app, a, "drain-host", "Drain and remove every member on a host");
    drain_cmd->add_option("host", a.host, "The host name the workers registered with")->required()->type_name("HOST");
    drain_cmd->add_option("--deadline", a.deadline, "Time the victims have to drain (e.g. 30s)")->type_name("D");
    auto* set_cmd = add_admin(app, a, "set", "Change the job's size limits or batch window");
    set_cmd->add_option("--min", a.min_size, "Smallest view")->type_name("N");
    set_cmd->add_option("--max", a.max_size, "Largest view")->type_name("N");
    set_cmd->add_option("--batch-window-ms", a.batch_window_ms, "Coalescing window for joiners")->type_name("MS");
    auto* close_cmd = add_admin(app, a, "close", "End the job: members are released and the coordinator stops");
    WorkerArgs worker_args;
    auto* worker_cmd = add_worker(app, worker_args);
    SpotArgs spot_args;
    auto* spot_cmd = add_spot_agent(app, spot_args);

    return tool.run(argc, argv, [&] {
        if (serve_cmd->parsed()) return serve(tool, serve_args);
        if (status_cmd->parsed()) return admin(tool, StatusCmd{}, a);
        if (shrink_cmd->parsed()) return admin(tool, shrink_command(*shrink_cmd, a), a);
        if (expand_cmd->parsed()) return admin(tool, expand_command(*expand_cmd, a), a);
        if (drain_cmd->parsed()) return admin(tool, DrainHostCmd{{}, a.host, deadline_ms(a.deadline)}, a);
        if (set_cmd->parsed()) return admin(tool, set_command(*set_cmd, a), a);
        if (close_cmd->parsed()) return admin(tool, CloseCmd{}, a);
        if (worker_cmd->parsed()) return worker(tool, worker_args);
        if (spot_cmd->parsed()) return spot_agent(tool, spot_args);
        throw UsageError(
            "give a command: serve, status, shrink, expand, drain-host, set, close, worker or spot-agent (see --help)");
    });
}
