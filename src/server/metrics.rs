//! A server's figures in Prometheus' text exposition format (version 0.0.4): one family per
//! figure with its `# HELP` and `# TYPE` lines, per-worker samples where workers differ
//! (connections, requests), replies by status class. Pure: rendered from figures already read.

use std::fmt::Write;

use super::ServerStats;
use super::figures::Totals;

/// The `Content-Type` of the text format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One worker's figures, for the per-worker samples.
pub(crate) struct WorkerFigures {
    pub(crate) open: usize,
    pub(crate) accepted: u64,
    pub(crate) answered: Totals,
}

/// The exposition of `stats`, with `workers`' own samples where the text has them.
pub(crate) fn render(stats: &ServerStats, workers: &[WorkerFigures]) -> String {
    let mut out = Exposition(String::with_capacity(4096));
    let per_worker: [Family<&WorkerFigures>; 3] = [
        (
            "web_open_connections",
            "gauge",
            "Open connections (HTTP, WebSocket and event streams), per worker.",
            |w| w.open as u64,
        ),
        (
            "web_connections_total",
            "counter",
            "Connections accepted, per worker.",
            |w| w.accepted,
        ),
        (
            "web_requests_total",
            "counter",
            "Requests answered by the handler or a route, per worker.",
            |w| w.answered.served,
        ),
    ];
    for (name, kind, help, value) in per_worker {
        out.family(name, kind, help);
        for (i, w) in workers.iter().enumerate() {
            out.sample(name, &[("worker", &i)], value(w));
        }
    }
    out.family(
        "web_responses_total",
        "counter",
        "Replies sent, by status class (deferred and streamed ones included; 1xx are WebSocket upgrades).",
    );
    for (class, n) in ["1xx", "2xx", "3xx", "4xx", "5xx"]
        .iter()
        .zip(stats.responses)
    {
        out.sample("web_responses_total", &[("class", class)], n);
    }
    let figures: [(&str, &str, &str, u64); 24] = [
        (
            "web_parked_connections",
            "gauge",
            "Connections parked with nothing to write.",
            stats.parked as u64,
        ),
        (
            "web_held_bytes",
            "gauge",
            "Heap bytes held in connections' buffers.",
            stats.held_bytes as u64,
        ),
        (
            "web_websockets",
            "gauge",
            "Open WebSocket connections.",
            stats.websockets as u64,
        ),
        (
            "web_event_streams",
            "gauge",
            "Open Server-Sent Events streams.",
            stats.event_streams as u64,
        ),
        (
            "web_http2_connections",
            "gauge",
            "Open HTTP/2 connections.",
            stats.http2_connections as u64,
        ),
        (
            "web_http2_streams_total",
            "counter",
            "Requests answered on HTTP/2 streams.",
            stats.http2_streams,
        ),
        (
            "web_queued_output_bytes",
            "gauge",
            "Bytes queued for WebSocket and event-stream peers, not yet taken.",
            stats.queued_output as u64,
        ),
        (
            "web_held_bodies_bytes",
            "gauge",
            "Bytes of HTTP/2 request bodies held while they arrive.",
            stats.held_bodies as u64,
        ),
        (
            "web_bodies_refused_total",
            "counter",
            "HTTP/2 request bodies refused because the server held all it may.",
            stats.bodies_refused,
        ),
        (
            "web_lagging_closed_total",
            "counter",
            "Live connections closed because their peers fell behind.",
            stats.lagging_closed,
        ),
        (
            "web_refused_messages_total",
            "counter",
            "Messages to connections or workers refused for a full queue.",
            stats.refused_messages,
        ),
        (
            "web_out_of_descriptors_total",
            "counter",
            "Accepts paused for want of file descriptors or memory.",
            stats.out_of_descriptors,
        ),
        (
            "web_replies_waiting",
            "gauge",
            "Deferred replies awaited now.",
            stats.replies_waiting,
        ),
        (
            "web_replies_dropped_total",
            "counter",
            "Deferred replies dropped unanswered (answered 500).",
            stats.replies_dropped,
        ),
        (
            "web_replies_timed_out_total",
            "counter",
            "Deferred replies past the reply timeout (answered 503).",
            stats.replies_timed_out,
        ),
        (
            "web_panics_total",
            "counter",
            "Connection steps that panicked (each closed its own connection).",
            stats.panics,
        ),
        (
            "web_stalls_total",
            "counter",
            "Handler calls that held their worker past the stall threshold.",
            stats.stalls,
        ),
        (
            "web_fleet_errors_total",
            "counter",
            "Failures talking to Redis (0 without a fleet).",
            stats.fleet_errors,
        ),
        (
            "web_fleet_dropped_total",
            "counter",
            "Room messages delivered on this instance only (0 without a fleet).",
            stats.fleet_dropped,
        ),
        (
            "web_fleet_local_decisions_total",
            "counter",
            "Rate-limit decisions taken on this instance's count for want of Redis.",
            stats.fleet_local_decisions,
        ),
        (
            "web_fleet_local_reads_total",
            "counter",
            "Histories and member counts answered from this instance for want of Redis.",
            stats.fleet_local_reads,
        ),
        (
            "web_tls_handshakes_total",
            "counter",
            "TLS handshakes completed.",
            stats.tls_handshakes,
        ),
        (
            "web_tls_failures_total",
            "counter",
            "TLS connections closed for bad input.",
            stats.tls_failures,
        ),
        (
            "web_tls_timeouts_total",
            "counter",
            "TLS handshakes that took too long.",
            stats.tls_timeouts,
        ),
    ];
    for (name, kind, help, value) in figures {
        out.family(name, kind, help);
        out.sample(name, &[], value);
    }
    out.family(
        "web_longest_stall_seconds",
        "gauge",
        "The longest handler call past the stall threshold.",
    );
    out.sample(
        "web_longest_stall_seconds",
        &[],
        stats.longest_stall.as_secs_f64(),
    );
    out.0
}

/// A family: its name, type, help, and how a sample's value is read from `T`.
type Family<T> = (&'static str, &'static str, &'static str, fn(T) -> u64);

/// The text being written.
struct Exposition(String);

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        // Writing to a String cannot fail.
        let _ = write!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
    }

    fn sample(
        &mut self,
        name: &str,
        labels: &[(&str, &dyn std::fmt::Display)],
        value: impl std::fmt::Display,
    ) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (key, value)) in labels.iter().enumerate() {
                let sep = if i > 0 { "," } else { "" };
                // Label values here are numbers and fixed words: nothing to escape.
                let _ = write!(self.0, "{sep}{key}=\"{value}\"");
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_help_and_type_and_workers_get_their_label() {
        let stats = ServerStats {
            responses: [1, 20, 0, 3, 4],
            websockets: 2,
            longest_stall: std::time::Duration::from_millis(75),
            ..ServerStats::default()
        };
        let workers = [
            WorkerFigures {
                open: 5,
                accepted: 9,
                answered: Totals {
                    served: 11,
                    ..Totals::default()
                },
            },
            WorkerFigures {
                open: 1,
                accepted: 2,
                answered: Totals::default(),
            },
        ];
        let text = render(&stats, &workers);
        for line in [
            "# TYPE web_open_connections gauge",
            "web_open_connections{worker=\"0\"} 5",
            "web_open_connections{worker=\"1\"} 1",
            "web_requests_total{worker=\"0\"} 11",
            "web_responses_total{class=\"2xx\"} 20",
            "web_responses_total{class=\"5xx\"} 4",
            "web_websockets 2",
            "web_longest_stall_seconds 0.075",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        // Every sample's family was announced before it, with both lines.
        let mut announced = std::collections::HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                announced.insert(rest.split(' ').next().unwrap().to_owned());
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                assert!(announced.contains(name), "{name} announced");
            }
        }
        assert!(text.ends_with('\n'));
    }
}
