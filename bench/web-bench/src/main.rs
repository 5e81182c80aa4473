//! `web-bench`: what a connection costs a server, and how servers compare. Everything it
//! loads is on 127.0.0.0/8; every run is bounded in time and count.
//!
//! ```sh
//! cargo run --release -p web-bench -- idle --help
//! cargo run --release -p web-bench -- idle --pid 1234 --url http://127.0.0.1:8080/ -n 10000
//! cargo run --release -p web-bench -- compare --help
//! ```

mod args;
mod compare;
mod conns;
mod fanout;
mod idle;
mod load;
mod peers;
mod procfs;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use args::{Opt, Refused};

const ABOUT: &str = "web-bench: what a connection costs a server, and how servers compare.\n\
\n\
Commands:\n  \
  idle      the memory an idle connection costs a running server\n  \
  fanout    one publish to N idle members of a room: delivery times, server CPU per member\n  \
  compare   web against other Rust servers, side by side, in one run\n\
\n\
`web-bench COMMAND --help` says more. Everything runs against 127.0.0.0/8 only.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ran = match args.first().map(String::as_str) {
        Some("idle") => idle_command(&args[1..]),
        Some("fanout") => fanout_command(&args[1..]),
        Some("compare") => compare::command(&args[1..]),
        Some("--help" | "-h" | "help") => Err(Refused::Help(ABOUT.to_owned())),
        Some(other) => Err(Refused::Usage(format!(
            "unknown command {other:?}\n\n{ABOUT}"
        ))),
        None => Err(Refused::Usage(ABOUT.to_owned())),
    };
    match ran {
        Ok(code) => code,
        Err(Refused::Help(text)) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(Refused::Usage(text)) => {
            eprintln!("web-bench: {text}");
            ExitCode::from(2)
        }
    }
}

const IDLE_ABOUT: &str = "web-bench idle: the memory an idle connection costs a running server.\n\
\n\
Reads the server's resident memory (its process and descendants) once steady, opens N\n\
connections (sources spread over 127.0.0.2-250), completes one request or handshake on each,\n\
holds them idle, reads the memory again once steady: (held - before) / N is the user-space\n\
cost of one idle connection. As root it also reads /proc/slabinfo: the kernel's growth per\n\
connection (both ends of each loopback connection). Then it closes them and reads what the\n\
server gave back. It raises its descriptor limit as far as the hard limit allows and says\n\
when N is capped by it.\n\
\n\
Example: web-bench idle --pid $(pidof hello) --url http://127.0.0.1:8080/ -n 10000";

const IDLE_OPTS: &[Opt] = &[
    Opt {
        name: "--pid",
        value: Some("PID"),
        help: "the server's process (needed)",
    },
    Opt {
        name: "--url",
        value: Some("URL"),
        help: "where to connect: http|ws|https|wss://127.x.x.x:PORT/PATH (https and wss run TLS under any kind); {n} in PATH or --send is the connection's number, {n/K} its group of K (a room per connection or per group) (needed)",
    },
    Opt {
        name: "-n",
        value: Some("N"),
        help: "connections to hold (default 10000, at most 1000000)",
    },
    Opt {
        name: "--kind",
        value: Some("KIND"),
        help: "http (one GET), ws (an upgrade), sse (an event stream), tls (a handshake and a GET), h2 (HTTP/2: the preface and one GET), h2-sse (event streams on HTTP/2, 100 to a connection: N streams, the cost of each beyond its connection's); default from the URL",
    },
    Opt {
        name: "--send",
        value: Some("TEXT"),
        help: "with --kind ws: a text message each connection sends once upgraded (a subscription)",
    },
    Opt {
        name: "--json",
        value: Some("FILE"),
        help: "where the record goes (default target/web-bench/idle-KIND.json)",
    },
    Opt {
        name: "--svg",
        value: Some("FILE"),
        help: "also draw the result as a chart",
    },
    Opt {
        name: "--budget",
        value: Some("SECONDS"),
        help: "longest the run may take (default 600)",
    },
];

fn idle_command(args: &[String]) -> Result<ExitCode, Refused> {
    let given = args::parse(args, IDLE_OPTS, IDLE_ABOUT)?;
    let url: String = given.need("--url")?;
    let mut target = conns::Target::parse(&url).map_err(Refused::Usage)?;
    target.send = given.get("--send")?;
    let kind = match given.get::<conns::Kind>("--kind")? {
        Some(k) => k,
        None if url.starts_with("ws") => conns::Kind::Ws,
        None if url.starts_with("https") => conns::Kind::Tls,
        None => conns::Kind::Http,
    };
    let n: usize = given.get_or("-n", 10_000)?;
    if !(1..=1_000_000).contains(&n) {
        return Err(Refused::Usage("-n is 1 to 1000000".into()));
    }
    let plan = idle::Plan {
        pid: given.need("--pid")?,
        target,
        kind,
        n,
        budget: Duration::from_secs(given.get_or("--budget", 600)?),
        timeout: Duration::from_secs(10),
    };
    let json: PathBuf = given.get_or(
        "--json",
        PathBuf::from(format!("target/web-bench/idle-{}.json", kind.name())),
    )?;
    let svg: Option<PathBuf> = given.get("--svg")?;
    let mut progress = report::Progress::new();
    let record = match idle::measure(&plan, &mut progress) {
        Ok(r) => r,
        Err(e) => {
            progress.done();
            eprintln!("web-bench idle: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    print!("{}", idle::describe(&record));
    if let Err(e) = report::write_json(&json, &record) {
        eprintln!("web-bench idle: writing {json:?}: {e}");
        return Ok(ExitCode::FAILURE);
    }
    println!("record: {}", json.display());
    if let Some(svg) = svg {
        let mut bars = vec![(
            "user space".to_owned(),
            record["bytes_per_connection"].as_f64().unwrap_or(0.0),
        )];
        if let Some(k) = record["kernel"]["bytes_per_connection_both_ends"].as_f64() {
            bars.push(("kernel, both ends".to_owned(), k));
        }
        let panel = report::Panel {
            title: format!("an idle {} connection", kind.name()),
            unit: "bytes".into(),
            bars,
        };
        if let Err(e) = report::svg(&svg, "web-bench idle", &[panel]) {
            eprintln!("web-bench idle: {e}");
            return Ok(ExitCode::FAILURE);
        }
        println!("chart: {}", svg.display());
    }
    let held = record["held"].as_u64().unwrap_or(0);
    Ok(if held == 0 || record["failed"].as_u64().unwrap_or(0) > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

const FANOUT_ABOUT: &str = "web-bench fanout: one publish to N idle members of a room.\n\
\n\
Opens N members (sources spread over 127.0.0.2-250; WebSockets, event streams over HTTP/1.1,\n\
or event streams 100 to an HTTP/2 connection), spread round-robin over one or several server\n\
processes (comma-separated --url and --pid, in the same order: what one process's descriptor\n\
limit cannot hold, several can). Each round POSTs a 32-byte body to every server's publish\n\
path and reads all members on one thread until each has it: prints the time to the first,\n\
median and last member (the client's, reading on the same machine) and each server's CPU\n\
for the round per member (/proc/PID/task/*/schedstat).\n\
\n\
Example (hello serves /events to WebSockets and event streams, POST /events publishes):\n  \
hello --port 8080 --events news &\n  \
web-bench fanout --pid $(pidof hello) --url ws://127.0.0.1:8080/events -n 10000\n\
\n\
With --compare, it starts the servers itself, one worker each pinned to CPU 0, and measures\n\
WebSocket members of each in turn: web (hello --events news), the floor (bench/peers ws_floor:\n\
one write(2) of the frame per member and nothing else), the floor with its sends batched\n\
through io_uring, and a tokio-tungstenite room (tokio::sync::broadcast), repeated --repeat\n\
times in alternating order; prints each server's CPU per member and its ratio to web's:\n  \
web-bench fanout --compare -n 5000 --rounds 5 --repeat 2";

const FANOUT_OPTS: &[Opt] = &[
    Opt {
        name: "--compare",
        value: None,
        help: "start web, the floors and the tokio room here and compare them (no --pid/--url)",
    },
    Opt {
        name: "--repeat",
        value: Some("K"),
        help: "with --compare: how many times each server is measured (default 2)",
    },
    Opt {
        name: "--no-build",
        value: None,
        help: "with --compare: use the binaries as built (default: cargo build --release first)",
    },
    Opt {
        name: "--pid",
        value: Some("PID[,PID...]"),
        help: "the server processes, in the order of --url (needed)",
    },
    Opt {
        name: "--url",
        value: Some("URL[,URL...]"),
        help: "each server's members: ws|http|https|wss://127.x.x.x:PORT/PATH (needed)",
    },
    Opt {
        name: "--publish",
        value: Some("PATH"),
        help: "the path a POST publishes to on each server (default: the URL's path)",
    },
    Opt {
        name: "-n",
        value: Some("N"),
        help: "members in all (default 10000, at most 1000000)",
    },
    Opt {
        name: "--kind",
        value: Some("KIND"),
        help: "ws, sse or h2-sse (100 streams to a connection); default from the URL",
    },
    Opt {
        name: "--rounds",
        value: Some("R"),
        help: "publishes, 0.5 s apart (default 3)",
    },
    Opt {
        name: "--json",
        value: Some("FILE"),
        help: "where the record goes (default target/web-bench/fanout-KIND.json)",
    },
    Opt {
        name: "--budget",
        value: Some("SECONDS"),
        help: "longest the opening may take (default 600)",
    },
];

fn fanout_compare(given: &args::Given) -> Result<ExitCode, Refused> {
    let n: usize = given.get_or("-n", 5_000)?;
    if !(1..=19_000).contains(&n) {
        return Err(Refused::Usage(
            "with --compare, -n is 1 to 19000 (one process each)".into(),
        ));
    }
    let rounds: usize = given.get_or("--rounds", 5)?;
    let repeats: usize = given.get_or("--repeat", 2)?;
    if !(1..=100).contains(&rounds) || !(1..=20).contains(&repeats) {
        return Err(Refused::Usage(
            "--rounds is 1 to 100, --repeat 1 to 20".into(),
        ));
    }
    if !given.has("--no-build")
        && let Err(e) = peers::build()
    {
        eprintln!("web-bench fanout: {e}");
        return Ok(ExitCode::FAILURE);
    }
    let json: PathBuf = given.get_or(
        "--json",
        PathBuf::from("target/web-bench/fanout-compare.json"),
    )?;
    let mut progress = report::Progress::new();
    let record = fanout::compare(n, rounds, repeats, &mut progress);
    fanout_report(record, progress, fanout::describe_compare, &json)
}

fn fanout_command(args: &[String]) -> Result<ExitCode, Refused> {
    let given = args::parse(args, FANOUT_OPTS, FANOUT_ABOUT)?;
    if given.has("--compare") {
        return fanout_compare(&given);
    }
    let urls: String = given.need("--url")?;
    let pids: String = given.need("--pid")?;
    let urls: Vec<&str> = urls.split(',').collect();
    let pids: Vec<&str> = pids.split(',').collect();
    if urls.len() != pids.len() {
        return Err(Refused::Usage(
            "--url and --pid name as many servers".into(),
        ));
    }
    let kind = match given.get::<conns::Kind>("--kind")? {
        Some(k @ (conns::Kind::Ws | conns::Kind::Sse | conns::Kind::H2Sse)) => k,
        Some(_) => return Err(Refused::Usage("--kind is ws, sse or h2-sse".into())),
        None if urls[0].starts_with("ws") => conns::Kind::Ws,
        None => conns::Kind::Sse,
    };
    let publish: Option<String> = given.get("--publish")?;
    let mut servers = Vec::new();
    for (url, pid) in urls.iter().zip(&pids) {
        let target = conns::Target::parse(url).map_err(Refused::Usage)?;
        let pid = pid
            .parse()
            .map_err(|_| Refused::Usage(format!("--pid: cannot read {pid:?}")))?;
        let publish = publish.clone().unwrap_or_else(|| target.path.clone());
        servers.push(fanout::Server {
            pid,
            target,
            publish,
        });
    }
    let n: usize = given.get_or("-n", 10_000)?;
    if !(1..=1_000_000).contains(&n) {
        return Err(Refused::Usage("-n is 1 to 1000000".into()));
    }
    let rounds: usize = given.get_or("--rounds", 3)?;
    if !(1..=100).contains(&rounds) {
        return Err(Refused::Usage("--rounds is 1 to 100".into()));
    }
    let plan = fanout::Plan {
        servers,
        kind,
        n,
        rounds,
        budget: Duration::from_secs(given.get_or("--budget", 600)?),
        timeout: Duration::from_secs(10),
    };
    let json: PathBuf = given.get_or(
        "--json",
        PathBuf::from(format!("target/web-bench/fanout-{}.json", kind.name())),
    )?;
    let mut progress = report::Progress::new();
    let record = fanout::measure(&plan, &mut progress);
    fanout_report(record, progress, fanout::describe, &json)
}

/// A fan-out measurement's end: its table printed and its record written to `json`, or why
/// it failed.
fn fanout_report(
    record: std::io::Result<serde_json::Value>,
    mut progress: report::Progress,
    describe: fn(&serde_json::Value) -> String,
    json: &std::path::Path,
) -> Result<ExitCode, Refused> {
    let record = match record {
        Ok(r) => r,
        Err(e) => {
            progress.done();
            eprintln!("web-bench fanout: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    print!("{}", describe(&record));
    if let Err(e) = report::write_json(json, &record) {
        eprintln!("web-bench fanout: writing {json:?}: {e}");
        return Ok(ExitCode::FAILURE);
    }
    println!("record: {}", json.display());
    Ok(ExitCode::SUCCESS)
}
