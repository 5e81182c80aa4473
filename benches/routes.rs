//! Matching a path among 100 routes: this library's router against `matchit` (the router axum
//! uses). Prints ns per lookup for each and their ratio, for several rounds (the spread is the
//! machine's noise); asserts nothing.
//!
//! `cargo bench --bench routes` — a REST-like table of 20 resources × 5 routes (a list, one
//! item by id, a literal beside the id, an item's sub-items by id, a tail), looked up by a mix
//! of paths that hit every kind, at depths 1 to 4, and paths that miss.

use std::hint::black_box;
use std::time::{Duration, Instant};

use web::http::{Router, text_response};

const RESOURCES: [&str; 20] = [
    "users",
    "repos",
    "orgs",
    "teams",
    "issues",
    "pulls",
    "gists",
    "events",
    "feeds",
    "notes",
    "projects",
    "labels",
    "milestones",
    "releases",
    "hooks",
    "keys",
    "emails",
    "stars",
    "commits",
    "search",
];

/// The 100 patterns, in this library's syntax; `matchit`'s is the same with `{x}`/`{*x}`.
fn patterns() -> Vec<String> {
    RESOURCES
        .iter()
        .flat_map(|r| {
            [
                format!("/api/{r}"),
                format!("/api/{r}/:id"),
                format!("/api/{r}/new"),
                format!("/api/{r}/:id/items/:item"),
                format!("/static/{r}/*path"),
            ]
        })
        .collect()
}

fn matchit_syntax(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|s| match s.as_bytes().first() {
            Some(b':') => format!("{{{}}}", &s[1..]),
            Some(b'*') => format!("{{*{}}}", &s[1..]),
            _ => s.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn paths() -> Vec<String> {
    let mut paths = Vec::new();
    for (i, r) in RESOURCES.iter().enumerate() {
        match i % 5 {
            0 => paths.push(format!("/api/{r}")),
            1 => paths.push(format!("/api/{r}/{}", 1000 + i)),
            2 => paths.push(format!("/api/{r}/new")),
            3 => paths.push(format!("/api/{r}/{i}/items/{}", i * 7)),
            _ => paths.push(format!("/static/{r}/css/site-{i}.css")),
        }
    }
    paths.push("/api/nothing/here".into());
    paths.push("/favicon.ico".into());
    paths
}

/// Nanoseconds per call of `f` over about 200 ms.
fn measure(mut f: impl FnMut()) -> f64 {
    let mut batch = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..batch {
            f();
        }
        let took = start.elapsed();
        if took > Duration::from_millis(200) {
            return took.as_nanos() as f64 / batch as f64;
        }
        batch *= 2;
    }
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // `cargo test --benches` compiles and lists; the figures come from `cargo bench`.
    }
    let patterns = patterns();
    let mut ours = Router::new();
    let mut theirs = matchit::Router::new();
    for (i, p) in patterns.iter().enumerate() {
        ours = ours.get(p, |_req| text_response(200, ""));
        theirs
            .insert(matchit_syntax(p), i)
            .expect("matchit takes the table");
    }
    let paths = paths();
    // Both agree on every path before anything is timed.
    for path in &paths {
        let a = ours.at(path).map(|m| {
            (
                m.pattern().to_owned(),
                m.params().map(|(_, v)| v.to_owned()).collect::<Vec<_>>(),
            )
        });
        let b = theirs.at(path).ok().map(|m| {
            (
                patterns[*m.value].clone(),
                m.params
                    .iter()
                    .map(|(_, v)| v.to_owned())
                    .collect::<Vec<_>>(),
            )
        });
        assert_eq!(a, b, "{path}");
    }
    println!(
        "{} routes, {} paths per round (ns per lookup, the params read)",
        patterns.len(),
        paths.len()
    );
    println!(
        "{:>6} {:>10} {:>10} {:>8}",
        "round", "web", "matchit", "ratio"
    );
    let mut ratios = Vec::new();
    for round in 1..=5 {
        let web_ns = measure(|| {
            for path in &paths {
                if let Some(m) = ours.at(black_box(path)) {
                    black_box(m.params().count());
                }
            }
        }) / paths.len() as f64;
        let matchit_ns = measure(|| {
            for path in &paths {
                if let Ok(m) = theirs.at(black_box(path)) {
                    black_box(m.params.iter().count());
                }
            }
        }) / paths.len() as f64;
        let ratio = web_ns / matchit_ns;
        ratios.push(ratio);
        println!("{round:>6} {web_ns:>10.1} {matchit_ns:>10.1} {ratio:>8.2}");
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "web/matchit: median {:.2}, spread {:.2}–{:.2}",
        ratios[2], ratios[0], ratios[4]
    );
}
