//! `web-bench compare`: `web` beside hyper, actix-web, may_minihttp, tiny_http and
//! tokio-tungstenite (and tungstenite), with no-parsing "ceiling" servers as anchors, in one
//! run.
//!
//! Each server runs with one worker pinned to CPU 0, the load on CPU 1. Throughput is counted
//! per **server core-second** (replies ÷ the CPU time the server used), the figure another
//! process on the host moves least; ratios are taken inside each round — to the best real peer
//! of that round and to the ceiling — and the rounds' spread is shown. Idle cost is
//! `web-bench idle` against each server. HTTP load comes from `wrk` when it is installed, else
//! from this tool's own generator (the report says which); WebSocket load always from its own.

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::args::{self, Opt, Refused};
use crate::conns::Kind;
use crate::idle;
use crate::load::{self, Ask};
use crate::peers::{self, Peer, Running, Speaks};
use crate::report::{self, Panel, Progress};

const ABOUT: &str = "web-bench compare: web beside other Rust servers, side by side, in one run.\n\
\n\
Builds web's examples and the peers of bench/peers (release; the first build takes minutes),\n\
then for each scenario and round starts every server with one worker on CPU 0 and loads it\n\
from CPU 1: HTTP keep-alive (64 connections) and pipelined (64 x 16), HTTP/2 over h2c and over\n\
TLS (h2load, 64 connections x 16 streams; web, hyper's h2, nginx), WebSocket ping-pong\n\
(64 connections, 32 B and 16 KiB) and windowed (64 x 16, 32 B); then each server's idle cost\n\
(web-bench idle). Figures per server core-second; ratios to the best peer and to the ceiling\n\
inside each round. Uses wrk for HTTP when installed, else its own generator, and says which.\n\
Needs 2 CPUs. A full run takes about 10 minutes; --quick about 3.";

const OPTS: &[Opt] = &[
    Opt {
        name: "--rounds",
        value: Some("R"),
        help: "rounds (default 2; each reverses the order)",
    },
    Opt {
        name: "--duration",
        value: Some("SECONDS"),
        help: "measured time per run (default 5)",
    },
    Opt {
        name: "--warmup",
        value: Some("SECONDS"),
        help: "warm-up per run (default 2)",
    },
    Opt {
        name: "--idle-n",
        value: Some("N"),
        help: "connections held per idle measurement (default 10000; 0 skips idle)",
    },
    Opt {
        name: "--only",
        value: Some("LIST"),
        help: "scenarios, comma-separated: http, h2, ws, idle (default all)",
    },
    Opt {
        name: "--quick",
        value: None,
        help: "one round of 2 s runs, 2000 idle connections",
    },
    Opt {
        name: "--no-build",
        value: None,
        help: "use the binaries already built",
    },
    Opt {
        name: "--json",
        value: Some("FILE"),
        help: "where the records go (default target/web-bench/compare.json)",
    },
    Opt {
        name: "--svg",
        value: Some("FILE"),
        help: "also draw the idle cost and the ratios",
    },
];

/// One load scenario.
struct Scenario {
    name: &'static str,
    speaks: Speaks,
    conns: usize,
    depth: usize,
    /// WebSocket message size (binary when over 125 bytes).
    size: usize,
    /// Over TLS (HTTP/2: h2 by ALPN).
    tls: bool,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "http keep-alive c64",
        speaks: Speaks::Http,
        conns: 64,
        depth: 1,
        size: 0,
        tls: false,
    },
    Scenario {
        name: "http pipelined c64 x16",
        speaks: Speaks::Http,
        conns: 64,
        depth: 16,
        size: 0,
        tls: false,
    },
    Scenario {
        name: "h2 c64 x m16 (h2load)",
        speaks: Speaks::H2,
        conns: 64,
        depth: 16,
        size: 0,
        tls: false,
    },
    Scenario {
        name: "h2 TLS c64 x m16 (h2load)",
        speaks: Speaks::H2,
        conns: 64,
        depth: 16,
        size: 0,
        tls: true,
    },
    Scenario {
        name: "ws ping-pong 32 B",
        speaks: Speaks::Ws,
        conns: 64,
        depth: 1,
        size: 32,
        tls: false,
    },
    Scenario {
        name: "ws ping-pong 16 KiB",
        speaks: Speaks::Ws,
        conns: 64,
        depth: 1,
        size: 16384,
        tls: false,
    },
    Scenario {
        name: "ws window16 32 B",
        speaks: Speaks::Ws,
        conns: 64,
        depth: 16,
        size: 32,
        tls: false,
    },
];

pub fn command(args: &[String]) -> Result<ExitCode, Refused> {
    let given = args::parse(args, OPTS, ABOUT)?;
    let quick = given.has("--quick");
    let rounds: usize = given.get_or("--rounds", if quick { 1 } else { 2 })?;
    let window =
        Duration::from_secs_f64(given.get_or("--duration", if quick { 2.0 } else { 5.0 })?);
    let warmup = Duration::from_secs_f64(given.get_or("--warmup", if quick { 1.0 } else { 2.0 })?);
    let idle_n: usize = given.get_or("--idle-n", if quick { 2000 } else { 10_000 })?;
    let only: String = given.get_or("--only", "http,ws,idle".to_owned())?;
    let json_path: PathBuf =
        given.get_or("--json", PathBuf::from("target/web-bench/compare.json"))?;
    let svg: Option<PathBuf> = given.get("--svg")?;
    if !(1..=10).contains(&rounds) || window > Duration::from_secs(120) || idle_n > 100_000 {
        return Err(Refused::Usage(
            "--rounds 1..10, --duration at most 120, --idle-n at most 100000".into(),
        ));
    }
    if peers::cpus() < 2 {
        eprintln!("web-bench compare: needs 2 CPUs (server on one, load on the other)");
        return Ok(ExitCode::FAILURE);
    }
    // The servers started from here inherit the descriptor limit.
    let (soft, hard) = crate::procfs::raise_nofile(1 << 20);
    let mut progress = Progress::new();
    if (soft as usize) < idle_n * 2 + 256 {
        progress.say(&format!(
            "descriptor limit {soft} (hard {hard}): servers using two descriptors per connection \
             cannot hold {idle_n}"
        ));
    }
    if !given.has("--no-build") {
        progress.say("building web's examples and bench/peers (release)...");
        if let Err(e) = peers::build() {
            eprintln!("web-bench compare: {e}");
            return Ok(ExitCode::FAILURE);
        }
    }
    let wrk = which("wrk");
    let generator = if wrk.is_some() {
        "wrk (HTTP), h2load (HTTP/2), web-bench (WebSocket)"
    } else {
        "web-bench (HTTP and WebSocket; wrk is not installed), h2load (HTTP/2)"
    };
    progress.say(&format!("load: {generator}"));
    let mut runs = Vec::new();
    let wanted = |what: &str| only.split(',').any(|o| o.trim() == what);
    for round in 0..rounds {
        for sc in SCENARIOS {
            let which = kind_name(sc.speaks);
            if !wanted(which) {
                continue;
            }
            let mut servers: Vec<&Peer> = peers::ALL
                .iter()
                .filter(|p| p.speaks == sc.speaks && !(sc.tls && p.plain_only))
                .collect();
            if round % 2 == 1 {
                servers.reverse();
            }
            for peer in servers {
                progress.line(&format!(
                    "round {} of {rounds}: {} on {}",
                    round + 1,
                    sc.name,
                    peer.name
                ));
                let record = match measure(peer, sc, warmup, window, wrk.as_deref()) {
                    Ok(r) => r,
                    Err(e) => json!({ "error": e.to_string() }),
                };
                let mut record = record;
                record["round"] = json!(round);
                record["scenario"] = json!(sc.name);
                record["server"] = json!(peer.name);
                runs.push(record);
            }
        }
    }
    let mut idles = Vec::new();
    if wanted("idle") && idle_n > 0 {
        for peer in peers::ALL {
            progress.line(&format!(
                "idle cost of {} ({idle_n} connections)",
                peer.name
            ));
            let kind = match peer.speaks {
                Speaks::Http => Kind::Http,
                Speaks::Ws => Kind::Ws,
                // (HTTP/2's idle cost: `web-bench idle --kind h2`; rooms are `fanout`'s)
                Speaks::H2 | Speaks::Room => continue,
            };
            let record = Running::start(peer, 0, false).and_then(|server| {
                let plan = idle::Plan {
                    pid: server.pid(),
                    target: load::local(server.port),
                    kind,
                    n: idle_n,
                    budget: Duration::from_secs(300),
                    timeout: Duration::from_secs(10),
                };
                let mut quiet = Progress::new();
                idle::measure(&plan, &mut quiet)
            });
            let mut record = record.unwrap_or_else(|e| json!({ "error": e.to_string() }));
            record["server"] = json!(peer.name);
            idles.push(record);
        }
    }
    progress.done();
    let summary = summarize(&runs, rounds);
    let idle_rows = idle_summary(&idles);
    print!("{}", render(&summary, &idle_rows, generator));
    let everything = json!({
        "tool": "web-bench compare",
        "machine": machine(),
        "load": generator,
        "rounds": rounds,
        "warmup_seconds": warmup.as_secs_f64(),
        "window_seconds": window.as_secs_f64(),
        "runs": runs,
        "idle": idles,
        "summary": summary,
        "idle_summary": idle_rows,
    });
    if let Err(e) = report::write_json(&json_path, &everything) {
        eprintln!("web-bench compare: writing {json_path:?}: {e}");
        return Ok(ExitCode::FAILURE);
    }
    println!("records: {}", json_path.display());
    if let Some(svg) = svg {
        if let Err(e) = chart(&svg, &summary, &idle_rows) {
            eprintln!("web-bench compare: {e}");
            return Ok(ExitCode::FAILURE);
        }
        println!("chart: {}", svg.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// One run of `sc` against `peer`: replies per second and per server core-second.
fn measure(
    peer: &Peer,
    sc: &Scenario,
    warmup: Duration,
    window: Duration,
    wrk: Option<&str>,
) -> std::io::Result<Value> {
    let server = Running::start(peer, 0, sc.tls)?;
    let target = load::local(server.port);
    let payload = vec![b'x'; sc.size];
    let ask = match sc.speaks {
        // (A room is measured by `web-bench fanout --compare`, never here.)
        Speaks::Http | Speaks::H2 | Speaks::Room => Ask::Http,
        Speaks::Ws => Ask::Ws {
            payload: &payload,
            binary: sc.size > 125,
        },
    };
    let (done, seconds, client_cpu, server_cpu) = match (sc.speaks, wrk) {
        (Speaks::H2, _) => h2load_run(&server, sc, warmup, window)?,
        (Speaks::Http, Some(wrk)) => wrk_run(wrk, &server, sc, warmup, window)?,
        _ => {
            // The load runs on a thread of its own, pinned to CPU 1.
            let cpu_at = std::sync::Arc::new(std::sync::Mutex::new(None::<f64>));
            let outcome = std::thread::scope(|s| {
                let loader = s.spawn(|| {
                    load::pin_to(1);
                    load::run(&target, ask, sc.conns, sc.depth, warmup, window)
                });
                std::thread::sleep(warmup);
                *cpu_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(server.cpu());
                loader
                    .join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("the load thread panicked")))
            })?;
            let cpu0 = cpu_at
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or(0.0);
            (
                outcome.done,
                outcome.seconds,
                outcome.client_cpu,
                server.cpu() - cpu0,
            )
        }
    };
    Ok(json!({
        "done": done,
        "per_second": done as f64 / seconds,
        "server_cpu_share": server_cpu / seconds,
        "client_cpu_share": client_cpu / seconds,
        "per_server_core_second": if server_cpu > 0.0 { Some(done as f64 / server_cpu) } else { None },
    }))
}

/// A load generator's command, pinned to CPU 1 with `taskset` when it is there.
fn on_cpu_1(program: &str) -> Command {
    match which("taskset") {
        Some(t) => {
            let mut c = Command::new(t);
            c.args(["-c", "1", program]);
            c
        }
        None => Command::new(program),
    }
}

/// Runs `cmd` to its end: what it printed, and the CPU time `server` used meanwhile.
fn output_and_cpu(cmd: &mut Command, server: &Running) -> std::io::Result<(String, f64)> {
    let cpu0 = server.cpu();
    let out = cmd.stdin(Stdio::null()).output()?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        server.cpu() - cpu0,
    ))
}

/// One HTTP/2 run with `h2load` (nghttp2's; Debian `nghttp2-client`): `sc.conns` connections
/// of `sc.depth` concurrent streams each, pinned to CPU 1 with `taskset` when it is there.
fn h2load_run(
    server: &Running,
    sc: &Scenario,
    warmup: Duration,
    window: Duration,
) -> std::io::Result<(u64, f64, f64, f64)> {
    let h2load = which("h2load").ok_or_else(|| {
        std::io::Error::other("h2load is not installed (apt-get install nghttp2-client)")
    })?;
    let scheme = if sc.tls { "https" } else { "http" };
    let url = format!("{scheme}://127.0.0.1:{}/", server.port);
    let run = |secs: f64| -> std::io::Result<(String, f64)> {
        let mut cmd = on_cpu_1(&h2load);
        cmd.args([
            "-t1",
            &format!("-c{}", sc.conns),
            &format!("-m{}", sc.depth),
            &format!("-D{}", secs.ceil() as u64),
        ]);
        output_and_cpu(cmd.arg(&url), server)
    };
    run(warmup.as_secs_f64())?;
    let (text, server_cpu) = run(window.as_secs_f64())?;
    // "requests: N total, N started, N done, N succeeded, ..."
    let succeeded = text
        .lines()
        .find_map(|l| l.strip_prefix("requests: "))
        .and_then(|l| l.split(", ").find_map(|p| p.strip_suffix(" succeeded")))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| std::io::Error::other(format!("h2load said: {text}")))?;
    let seconds = window.as_secs_f64().ceil();
    Ok((succeeded, seconds, 0.0, server_cpu))
}

/// One HTTP run with `wrk` (pinned to CPU 1 with `taskset` when it is there).
fn wrk_run(
    wrk: &str,
    server: &Running,
    sc: &Scenario,
    warmup: Duration,
    window: Duration,
) -> std::io::Result<(u64, f64, f64, f64)> {
    let url = format!("http://127.0.0.1:{}/", server.port);
    let dir = std::env::temp_dir().join(format!("web-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let script = dir.join("pipeline.lua");
    std::fs::write(
        &script,
        format!(
            "init = function(args)\n  local r = {{}}\n  for i = 1, {} do r[i] = wrk.format() end\n  req = table.concat(r)\nend\nrequest = function() return req end\n",
            sc.depth
        ),
    )?;
    let run = |secs: f64| -> std::io::Result<(String, f64)> {
        let mut cmd = on_cpu_1(wrk);
        cmd.args([
            "-t1",
            &format!("-c{}", sc.conns),
            &format!("-d{}s", secs.ceil() as u64),
        ]);
        if sc.depth > 1 {
            cmd.arg("-s").arg(&script);
        }
        output_and_cpu(cmd.arg(&url), server)
    };
    run(warmup.as_secs_f64())?;
    let (text, server_cpu) = run(window.as_secs_f64())?;
    let _ = std::fs::remove_dir_all(&dir);
    let total = text
        .lines()
        .find_map(|l| l.trim().split_once(" requests in "))
        .and_then(|(n, _)| n.trim().parse::<u64>().ok())
        .ok_or_else(|| std::io::Error::other(format!("wrk said: {text}")))?;
    let seconds = window.as_secs_f64().ceil();
    Ok((total, seconds, 0.0, server_cpu))
}

/// Per scenario and server: the mean figures and, per round, the ratio of its per-core-s figure
/// to the round's best real peer and to the ceiling.
fn summarize(runs: &[Value], rounds: usize) -> Vec<Value> {
    let mut rows = Vec::new();
    for sc in SCENARIOS {
        for peer in peers::ALL.iter().filter(|p| p.speaks == sc.speaks) {
            let mine: Vec<&Value> = runs
                .iter()
                .filter(|r| r["scenario"] == sc.name && r["server"] == peer.name)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut vs_best = Vec::new();
            let mut vs_ceiling = Vec::new();
            for round in 0..rounds {
                let of = |name: &str| {
                    runs.iter()
                        .find(|r| {
                            r["round"] == round && r["scenario"] == sc.name && r["server"] == name
                        })
                        .and_then(|r| r["per_server_core_second"].as_f64())
                };
                let best = peers::ALL
                    .iter()
                    .filter(|p| p.speaks == sc.speaks && !p.candidate && !p.ceiling)
                    .filter_map(|p| of(p.name))
                    .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
                let ceiling = peers::ALL
                    .iter()
                    .find(|p| p.speaks == sc.speaks && p.ceiling)
                    .and_then(|p| of(p.name));
                if let Some(v) = of(peer.name) {
                    vs_best.push(best.map(|b| v / b));
                    vs_ceiling.push(ceiling.map(|c| v / c));
                }
            }
            let mean = |k: &str| {
                let v: Vec<f64> = mine.iter().filter_map(|r| r[k].as_f64()).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            let errors: Vec<&str> = mine.iter().filter_map(|r| r["error"].as_str()).collect();
            rows.push(json!({
                "scenario": sc.name,
                "server": peer.name,
                "per_second": mean("per_second"),
                "per_server_core_second": mean("per_server_core_second"),
                "server_cpu_share": mean("server_cpu_share"),
                "vs_best_peer_per_round": vs_best,
                "vs_ceiling_per_round": vs_ceiling,
                "vs_best_peer": geo_mean(&vs_best),
                "vs_ceiling": geo_mean(&vs_ceiling),
                "errors": errors,
            }));
        }
    }
    rows
}

fn geo_mean(v: &[Option<f64>]) -> Option<f64> {
    let v: Vec<f64> = v.iter().flatten().copied().filter(|x| *x > 0.0).collect();
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Per server: bytes per idle connection and its ratio to the best real peer of its kind.
fn idle_summary(idles: &[Value]) -> Vec<Value> {
    let mut rows = Vec::new();
    if idles.is_empty() {
        return rows; // idle was not measured
    }
    for speaks in [Speaks::Http, Speaks::Ws] {
        let of = |p: &Peer| {
            idles
                .iter()
                .find(|r| r["server"] == p.name && r["kind"] == kind_name(speaks))
                // A run that did not hold every connection says nothing about one.
                .filter(|r| r["failed"] == 0 && r["held"] == r["requested"])
                .and_then(|r| r["bytes_per_connection"].as_f64())
        };
        let best = peers::ALL
            .iter()
            .filter(|p| p.speaks == speaks && !p.candidate && !p.ceiling)
            .filter_map(of)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))));
        for p in peers::ALL.iter().filter(|p| p.speaks == speaks) {
            let record = idles.iter().find(|r| {
                r["server"] == p.name
                    && (r["kind"] == kind_name(speaks) || r.get("error").is_some())
            });
            let bytes = of(p);
            rows.push(json!({
                "kind": kind_name(speaks),
                "server": p.name,
                "bytes_per_connection": bytes,
                "vs_best_peer": bytes.zip(best).map(|(b, best)| b / best),
                "held": record.map(|r| r["held"].clone()),
                "error": record.and_then(|r| r["error"].as_str().or(r["first_error"].as_str())),
            }));
        }
    }
    rows
}

fn kind_name(s: Speaks) -> &'static str {
    match s {
        Speaks::Http => "http",
        Speaks::Ws => "ws",
        Speaks::H2 => "h2",
        Speaks::Room => "room",
    }
}

fn render(summary: &[Value], idle: &[Value], generator: &str) -> String {
    let f = |v: &Value, digits: usize| {
        v.as_f64()
            .map_or("—".to_owned(), |x| format!("{x:.digits$}"))
    };
    let spread = |v: &Value| {
        v.as_array()
            .map(|a| a.iter().map(|x| f(x, 2)).collect::<Vec<_>>().join(" / "))
            .unwrap_or_default()
    };
    let rows: Vec<Vec<String>> = summary
        .iter()
        .map(|r| {
            vec![
                r["scenario"].as_str().unwrap_or("").to_owned(),
                r["server"].as_str().unwrap_or("").to_owned(),
                f(&r["per_second"], 0),
                f(&r["server_cpu_share"], 2),
                f(&r["per_server_core_second"], 0),
                f(&r["vs_best_peer"], 2),
                spread(&r["vs_best_peer_per_round"]),
                f(&r["vs_ceiling"], 2),
                r["errors"]
                    .as_array()
                    .and_then(|e| e.first())
                    .and_then(|e| e.as_str())
                    .unwrap_or("")
                    .chars()
                    .take(60)
                    .collect(),
            ]
        })
        .collect();
    let mut out =
        format!("## Throughput (load: {generator}; one server worker on CPU 0, load on CPU 1)\n\n");
    out.push_str(&report::table(
        &[
            "scenario",
            "server",
            "per s",
            "server CPU",
            "per server core-s",
            "vs best peer",
            "per round",
            "vs ceiling",
            "error",
        ],
        &rows,
    ));
    let rows: Vec<Vec<String>> = idle
        .iter()
        .map(|r| {
            vec![
                r["kind"].as_str().unwrap_or("").to_owned(),
                r["server"].as_str().unwrap_or("").to_owned(),
                r["held"].to_string(),
                f(&r["bytes_per_connection"], 1),
                f(&r["vs_best_peer"], 3),
                r["error"].as_str().unwrap_or("").chars().take(60).collect(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out.push_str("\n## Idle connections (user-space bytes each, lower is better)\n\n");
        out.push_str(&report::table(
            &[
                "kind",
                "server",
                "held",
                "bytes per idle connection",
                "vs best peer",
                "error",
            ],
            &rows,
        ));
    }
    out
}

fn chart(path: &std::path::Path, summary: &[Value], idle: &[Value]) -> std::io::Result<()> {
    let mut panels = Vec::new();
    for kind in ["http", "ws"] {
        let bars: Vec<(String, f64)> = idle
            .iter()
            .filter(|r| r["kind"] == kind)
            .filter_map(|r| {
                Some((
                    r["server"].as_str()?.to_owned(),
                    r["bytes_per_connection"].as_f64()?,
                ))
            })
            .collect();
        if !bars.is_empty() {
            panels.push(Panel {
                title: format!(
                    "idle {} connection",
                    if kind == "http" {
                        "keep-alive HTTP"
                    } else {
                        "WebSocket"
                    }
                ),
                unit: "bytes each".into(),
                bars,
            });
        }
    }
    for sc in SCENARIOS {
        let bars: Vec<(String, f64)> = summary
            .iter()
            .filter(|r| r["scenario"] == sc.name)
            .filter_map(|r| {
                Some((
                    r["server"].as_str()?.to_owned(),
                    r["vs_best_peer"].as_f64()?,
                ))
            })
            .collect();
        if !bars.is_empty() {
            panels.push(Panel {
                title: sc.name.to_owned(),
                unit: "per server core-s, × best peer".into(),
                bars,
            });
        }
    }
    report::svg(path, "web-bench compare", &panels)
}

/// The machine the run was on.
fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    json!({ "cpus": peers::cpus(), "cpu": cpu, "kernel": kernel.trim() })
}

fn which(program: &str) -> Option<String> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
            .map(|p| p.display().to_string())
    })
}
