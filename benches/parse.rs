//! Micro benchmarks of the message layer. Prints ns per operation and MB/s; asserts nothing.
//!
//! `cargo bench --bench parse` — runs each case for about a second after a warm-up, three
//! times, and prints the best run (the least disturbed by other work on the machine).

use std::hint::black_box;
use std::time::{Duration, Instant};

use web::http::{HeadParser, decoded, encoded, response_bytes, text_response};

/// A typical browser request head: 12 header lines, about 500 bytes.
const BROWSER_HEAD: &[u8] = b"GET /static/app/main.css?v=20261121 HTTP/1.1\r\n\
Host: www.example.com\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0\r\n\
Accept: text/css,*/*;q=0.1\r\n\
Accept-Language: en-US,en;q=0.5\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Referer: https://www.example.com/\r\n\
Connection: keep-alive\r\n\
Cookie: session=4f2a9c1e7b3d; theme=dark; consent=yes\r\n\
Sec-Fetch-Dest: style\r\n\
Sec-Fetch-Mode: no-cors\r\n\
Sec-Fetch-Site: same-origin\r\n\
If-None-Match: \"6a1f-5e3c2b1a\"\r\n\r\n";

/// Runs `f` repeatedly and returns the best nanoseconds per call over three ~1 s runs.
fn measure(mut f: impl FnMut()) -> f64 {
    let mut batch = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..batch {
            f();
        }
        if start.elapsed() > Duration::from_millis(50) {
            break;
        }
        batch *= 2;
    }
    let per_second = batch * 20;
    (0..3)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_second {
                f();
            }
            start.elapsed().as_nanos() as f64 / per_second as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn report(name: &str, ns: f64, bytes: usize) -> f64 {
    let mbps = bytes as f64 / ns * 1e9 / 1e6;
    println!("{name:<48} {ns:>9.1} ns/op {mbps:>9.1} MB/s");
    ns
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // `cargo test --benches` compiles and lists; the figures come from `cargo bench`.
    }
    // `--profile N`: parse the browser head N times and stop, untimed — for
    // `valgrind --tool=callgrind target/release/deps/parse-* --profile 100000`.
    if let Some(n) = std::env::args()
        .skip_while(|a| a != "--profile")
        .nth(1)
        .and_then(|n| n.parse::<u64>().ok())
    {
        for _ in 0..n {
            let head = HeadParser::default().parse(black_box(BROWSER_HEAD));
            black_box(head.ok().flatten().map(|h| h.len));
        }
        return;
    }
    println!(
        "request head: {} bytes, {} header lines",
        BROWSER_HEAD.len(),
        12
    );

    let ours = report(
        "web HeadParser::parse -> Request (pooled buffer)",
        measure(|| {
            let head = HeadParser::default().parse(black_box(BROWSER_HEAD));
            black_box(head.ok().flatten().map(|h| h.len));
        }),
        BROWSER_HEAD.len(),
    );
    let theirs = report(
        "httparse Request::parse (borrowed)",
        measure(|| {
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut req = httparse::Request::new(&mut headers);
            black_box(req.parse(black_box(BROWSER_HEAD)).ok());
        }),
        BROWSER_HEAD.len(),
    );
    println!(
        "{:<48} {:>9.2} x (goal: <= 1.50)",
        "ratio web / httparse",
        ours / theirs
    );

    let small = text_response(200, "Hello, World!");
    let rendered = response_bytes(&small, true).len();
    report(
        "response_bytes (13-byte text body, with Date)",
        measure(|| {
            black_box(response_bytes(black_box(&small), true));
        }),
        rendered,
    );

    let kib: Vec<u8> = (0..1024u32).map(|i| (i * 7 % 256) as u8).collect();
    let enc = encoded(&kib);
    report(
        "encoded (1 KiB of mixed bytes)",
        measure(|| {
            black_box(encoded(black_box(&kib)));
        }),
        kib.len(),
    );
    report(
        "decoded (1 KiB of mixed bytes, as encoded)",
        measure(|| {
            black_box(decoded(black_box(&enc)));
        }),
        enc.len(),
    );
    let text: String = "name=some+value&other=plain-text_1234&"
        .repeat(27)
        .chars()
        .take(1024)
        .collect();
    report(
        "decoded (1 KiB of query text)",
        measure(|| {
            black_box(decoded(black_box(&text)));
        }),
        text.len(),
    );
}
