//! What members that do not read cost a room's publisher, over HTTP/1.1 and over HTTP/2, with
//! figures (asserts nothing; `cargo bench --bench h2_lagging`): 1 000 event-stream members of
//! one room that never read — on 1 000 HTTP/1.1 connections, or as 100 streams on each of 10
//! HTTP/2 connections whose windows stay shut — and a publisher posting 4 KB messages to the
//! room, each as soon as the last was answered. Printed: posts answered per second while every
//! member is still there (each falls ever further behind, under its backlog limit), and the
//! server's CPU per post, three rounds each, and HTTP/2 ÷ HTTP/1.1. The goal: a lagging member
//! costs about the same whichever way it came (each post reaches each stream as its own
//! message either way).
//!
//! The server runs in a child process (this program, re-run with `H2_LAGGING_BENCH_SERVER=1`),
//! one worker. Everything talks to 127.0.0.1 only; every phase is bounded in count.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::http::{Server, text_response};

mod child;

use child::h2::{hello, request};

const MEMBERS: usize = 1_000;
const H2_CONNECTIONS: usize = 10;
const POST_BYTES: usize = 4_000;
/// Posts per round: each member's backlog stays under its limit (16 MiB).
const POSTS: usize = 2_000;
const ROUNDS: usize = 3;

fn serve() {
    child::raise_open_files();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .sse("/events", child::rooms::JoinsRoom("r"));
    let rooms = server.rooms();
    let port = server.local_addr().unwrap().port();
    let _running = server
        .spawn(move |req| match req.path() {
            "/stats" => text_response(
                200,
                format!("{} {}", child::stats_line(), rooms.members("r")),
            ),
            _ => {
                rooms.publish_event(
                    "r",
                    &web::sse::Event::new(String::from_utf8_lossy(req.body())),
                );
                text_response(200, "posted")
            }
        })
        .unwrap();
    child::serve_until_stdin_closes(port);
}

/// The child's figures and the room's members.
fn stats(port: u16) -> (child::ProcessStats, usize) {
    let line = child::http(
        port,
        "GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    let members = line
        .split_whitespace()
        .nth(4)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    (child::ProcessStats::parse(&line), members)
}

/// 1 000 members on HTTP/1.1 connections that never read.
fn http1_members(port: u16) -> Vec<TcpStream> {
    (0..MEMBERS)
        .map(|_| {
            let mut c = child::small_buffer(port, 4096);
            c.write_all(b"GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            c
        })
        .collect()
}

/// 1 000 members as streams of HTTP/2 connections that never read nor open a window.
fn http2_members(port: u16) -> Vec<TcpStream> {
    let per = MEMBERS / H2_CONNECTIONS;
    (0..H2_CONNECTIONS)
        .map(|_| {
            let mut c = child::small_buffer(port, 4096);
            let mut out = hello();
            for i in 0..per as u32 {
                request(&mut out, 1 + 2 * i, "GET", "/events", true);
            }
            c.write_all(&out).unwrap();
            c
        })
        .collect()
}

/// Posts answered per second and the server's CPU per post (µs), `POSTS` posts in a row.
fn publish(port: u16) -> (f64, f64) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_nodelay(true).unwrap();
    let body = "p".repeat(POST_BYTES);
    let post =
        format!("POST /post HTTP/1.1\r\nHost: t\r\nContent-Length: {POST_BYTES}\r\n\r\n{body}");
    let before = stats(port).0.cpu_micros;
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    for _ in 0..POSTS {
        c.write_all(post.as_bytes()).unwrap();
        let mut got = Vec::new();
        while !got.ends_with(b"posted") {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "the publisher's connection ended");
            got.extend_from_slice(&buf[..n]);
        }
    }
    let elapsed = start.elapsed();
    let cpu = stats(port).0.cpu_micros - before;
    (
        POSTS as f64 / elapsed.as_secs_f64(),
        cpu as f64 / POSTS as f64,
    )
}

/// One round with members made by `members`: (posts/s, µs per post), or `None` if members
/// were dropped meanwhile (the figures would not be whole).
fn round(port: u16, members: fn(u16) -> Vec<TcpStream>) -> Option<(f64, f64)> {
    let conns = members(port);
    let start = Instant::now();
    while stats(port).1 != MEMBERS {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "members did not all join"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let figures = publish(port);
    let kept = stats(port).1 == MEMBERS;
    drop(conns);
    let start = Instant::now();
    while stats(port).1 != 0 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    kept.then_some(figures)
}

fn main() {
    child::raise_open_files();
    child::run("H2_LAGGING_BENCH_SERVER", serve, |port, _child| {
        println!(
            "{MEMBERS} lagging event-stream members, {POST_BYTES}-byte posts, {POSTS} a round, one worker"
        );
        println!(
            "{:<32} {:>26} {:>26}",
            "members", "posts/s (rounds)", "server µs per post"
        );
        let mut medians = Vec::new();
        for (name, members) in [
            (
                "HTTP/1.1, a connection each",
                http1_members as fn(u16) -> Vec<TcpStream>,
            ),
            ("HTTP/2, 100 streams a connection", http2_members),
        ] {
            let rounds: Vec<(f64, f64)> =
                (0..ROUNDS).filter_map(|_| round(port, members)).collect();
            let rate: Vec<String> = rounds.iter().map(|r| format!("{:.0}", r.0)).collect();
            let cpu: Vec<String> = rounds.iter().map(|r| format!("{:.0}", r.1)).collect();
            println!("{name:<32} {:>26} {:>26}", rate.join(" "), cpu.join(" "));
            let mut sorted: Vec<f64> = rounds.iter().map(|r| r.0).collect();
            sorted.sort_by(f64::total_cmp);
            medians.push(sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN));
        }
        println!(
            "HTTP/2 ÷ HTTP/1.1 posts/s (medians): {:.2}",
            medians[1] / medians[0]
        );
    });
}
