//! Figures: how connections spread over 2 workers with a shared (`dup`ed) listener and with one
//! `SO_REUSEPORT` listener per worker. Ignored by default; run with
//! `cargo test -p web-reactor --release --test listener_spread -- --ignored --nocapture`.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{Client, EchoService};
use reactor::{Config, Reactor};

const IDLE: Duration = Duration::from_secs(30);

fn churn(addr: SocketAddr, threads: usize, per_thread: usize) {
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    let mut c = Client::connect(addr);
                    assert_eq!(c.roundtrip(&format!("{i}")), Some(format!("{i}")));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("client thread");
    }
}

fn held(addr: SocketAddr, n: usize) -> Vec<Client> {
    let mut clients: Vec<Client> = (0..n).map(|_| Client::connect(addr)).collect();
    for c in clients.iter_mut() {
        assert_eq!(c.roundtrip("x").as_deref(), Some("x"));
    }
    clients
}

/// Prints the connections each worker accepted since `base`; returns the totals now.
fn report(name: &str, handle: &reactor::Handle<Vec<u8>>, since: Instant, base: &[u64]) -> Vec<u64> {
    let now: Vec<u64> = handle.stats().workers.iter().map(|w| w.accepted).collect();
    let per: Vec<u64> = now
        .iter()
        .zip(base.iter().chain(std::iter::repeat(&0)))
        .map(|(n, b)| n - b)
        .collect();
    let total: u64 = per.iter().sum();
    let max = per.iter().copied().max().unwrap_or(0);
    eprintln!(
        "{name}: accepted per worker {per:?}, busiest worker {:.1}% of {total}, {:?}",
        100.0 * max as f64 / total.max(1) as f64,
        since.elapsed()
    );
    now
}

#[test]
#[ignore = "a measurement, not a check"]
fn listener_spread_figures() {
    for round in 0..3 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let dup = Reactor::new(listener, Config::default().workers(2), |_| EchoService {
            idle: IDLE,
        })
        .expect("reactor")
        .spawn()
        .expect("spawn");
        let since = Instant::now();
        churn(dup.local_addr(), 4, 1000);
        let base = report(
            &format!("round {round} dup, churn 4x1000"),
            &dup,
            since,
            &[],
        );
        let since = Instant::now();
        let clients = held(dup.local_addr(), 2000);
        report(&format!("round {round} dup, 2000 held"), &dup, since, &base);
        drop(clients);
        dup.shutdown().expect("shutdown");

        let addr: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let rp = Reactor::bind(addr, Config::default().workers(2), |_| EchoService {
            idle: IDLE,
        })
        .expect("reactor")
        .spawn()
        .expect("spawn");
        let since = Instant::now();
        churn(rp.local_addr(), 4, 1000);
        let base = report(
            &format!("round {round} reuseport, churn 4x1000"),
            &rp,
            since,
            &[],
        );
        let since = Instant::now();
        let clients = held(rp.local_addr(), 2000);
        report(
            &format!("round {round} reuseport, 2000 held"),
            &rp,
            since,
            &base,
        );
        drop(clients);
        rp.shutdown().expect("shutdown");
    }
}
