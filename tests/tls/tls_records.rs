//! What a TLS client may send once the handshake is done, sealed by this test itself (a rustls
//! handshake, then records made here with `ring` from RFC 8446 — never by the code under test):
//! key updates answered once and bounded, empty records, warnings and renegotiations bounded,
//! each malformed record answered with the alert RFC 8446 §5 names, and a connection that owes
//! the peer answers holding no more memory for it.

#![cfg(feature = "tls")]

use crate::wire;

use web::http::{Server, ServerHandle, text_response};
use web::tls::ServerTls;
use wire::certs::TestCa;
use wire::tls_raw::{
    ALERT, APPLICATION_DATA, CHANGE_CIPHER_SPEC, CLIENT_HELLO, HANDSHAKE, KEY_UPDATE, Raw, Version,
};

const UNEXPECTED_MESSAGE: u8 = 10;
const RECORD_OVERFLOW: u8 = 22;
const ILLEGAL_PARAMETER: u8 = 47;
const DECODE_ERROR: u8 = 50;
const NO_RENEGOTIATION: u8 = 100;

/// A TLS 1.3 connection to `server`, its records ours after the handshake.
fn connect(ca: &TestCa, server: &ServerHandle) -> Raw {
    connect_in(ca, server, Version::Tls13)
}

fn connect_in(ca: &TestCa, server: &ServerHandle, version: Version) -> Raw {
    Raw::connect(server.local_addr(), config_roots(ca), version).unwrap()
}

fn config_roots(ca: &TestCa) -> rustls::RootCertStore {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca.pem.as_bytes()).unwrap())
        .unwrap();
    roots
}

fn start(ca: &TestCa) -> ServerHandle {
    start_with(ca, |s| s)
}

fn start_with(ca: &TestCa, tweak: impl FnOnce(Server) -> Server) -> ServerHandle {
    let leaf = ca.leaf(&["localhost"]);
    let tls = ServerTls::from_pem(leaf.cert.as_bytes(), leaf.key.as_bytes()).unwrap();
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).tls(tls);
    tweak(server).spawn(answer).unwrap()
}

/// A request's path, or with a body, how many bytes it had.
fn answer(req: web::http::Request) -> web::http::Response {
    match req.body().len() {
        0 => text_response(200, req.path().to_owned()),
        n => text_response(200, format!("{n} bytes")),
    }
}

const GET: &[u8] = b"GET /hi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/// The reply's bytes among the records, and how many key updates came with them.
fn reply_and_key_updates(records: &[(u8, Vec<u8>)]) -> (String, usize) {
    let mut reply = Vec::new();
    let mut updates = 0;
    for (kind, content) in records {
        match *kind {
            APPLICATION_DATA => reply.extend_from_slice(content),
            HANDSHAKE if content[0] == KEY_UPDATE => updates += 1,
            _ => {}
        }
    }
    (String::from_utf8_lossy(&reply).into_owned(), updates)
}

#[test]
fn many_key_update_requests_while_silent_get_one_answer_before_the_reply() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect(&ca, &server);
    let mut records: Vec<Vec<u8>> = (0..30).map(|_| raw.key_update(true)).collect();
    records.push(raw.record(APPLICATION_DATA, GET));
    raw.send(&records).unwrap();
    let rest = raw.rest().unwrap();
    let (reply, updates) = reply_and_key_updates(&rest);
    assert_eq!(updates, 1, "{rest:?}");
    assert!(
        rest.iter().position(|(k, _)| *k == HANDSHAKE)
            < rest.iter().position(|(k, _)| *k == APPLICATION_DATA)
    );
    assert!(
        reply.starts_with("HTTP/1.1 200 OK") && reply.ends_with("/hi"),
        "{reply}"
    );
}

#[test]
fn key_updates_are_allowed_again_after_application_data_and_never_pile_up() {
    // 1 000 requests in groups of 31, each group followed by a byte of the request: one
    // answer, and the connection holds nothing for the requests meanwhile.
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect(&ca, &server);
    let (head, tail) = GET.split_at(8);
    let mut records = Vec::new();
    for byte in head {
        for _ in 0..31 {
            records.push(raw.key_update(true));
        }
        records.push(raw.record(APPLICATION_DATA, &[*byte]));
    }
    records.push(raw.record(APPLICATION_DATA, tail));
    raw.send(&records).unwrap();
    let (reply, updates) = reply_and_key_updates(&raw.rest().unwrap());
    // One answer: none more until data went under the new key.
    assert_eq!(updates, 1, "{updates} answers to 248 requests");
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(server.stats().held_bytes < 64 * 1024);
}

#[test]
fn the_33rd_key_update_without_application_data_is_fatal() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect(&ca, &server);
    let records: Vec<Vec<u8>> = (0..33).map(|_| raw.key_update(false)).collect();
    raw.send(&records).unwrap();
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
    let stats = server.stats();
    assert!(stats.tls_failures >= 1, "{stats:?}");
}

#[test]
fn thirty_two_empty_records_in_a_row_are_allowed_and_the_33rd_is_fatal() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect(&ca, &server);
    let mut records: Vec<Vec<u8>> = (0..32).map(|_| raw.record(APPLICATION_DATA, b"")).collect();
    records.push(raw.record(APPLICATION_DATA, GET));
    raw.send(&records).unwrap();
    let (reply, _) = reply_and_key_updates(&raw.rest().unwrap());
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");

    let mut raw = connect(&ca, &server);
    let records: Vec<Vec<u8>> = (0..33).map(|_| raw.record(APPLICATION_DATA, b"")).collect();
    raw.send(&records).unwrap();
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
}

#[test]
fn four_user_canceled_warnings_are_allowed_and_the_fifth_is_fatal() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect(&ca, &server);
    let mut records: Vec<Vec<u8>> = (0..4).map(|_| raw.record(ALERT, &[1, 90])).collect();
    records.push(raw.record(APPLICATION_DATA, GET));
    raw.send(&records).unwrap();
    let (reply, _) = reply_and_key_updates(&raw.rest().unwrap());
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");

    let mut raw = connect(&ca, &server);
    let records: Vec<Vec<u8>> = (0..5).map(|_| raw.record(ALERT, &[1, 90])).collect();
    raw.send(&records).unwrap();
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
}

/// RFC 8446 §5, §5.1, §5.2, §5.4, §4.6.3, §6: each record and the alert it ends with.
#[test]
fn each_malformed_record_gets_the_alert_rfc_8446_names() {
    let ca = TestCa::new();
    let server = start(&ca);
    type Make = fn(&mut Raw) -> Vec<u8>;
    let cases: [(&str, Make, u8); 10] = [
        (
            "a plaintext ChangeCipherSpec",
            |_| vec![CHANGE_CIPHER_SPEC, 3, 3, 0, 1, 1],
            UNEXPECTED_MESSAGE,
        ),
        (
            "a ciphertext of 2^14 + 256 + 1 bytes",
            |_| {
                let mut r = vec![APPLICATION_DATA, 3, 3, 0x41, 0x01];
                r.resize(5 + 0x4101, 7);
                r
            },
            RECORD_OVERFLOW,
        ),
        (
            "an inner plaintext of zeros alone",
            |raw| raw.tx.seal_inner(&[0; 40]),
            UNEXPECTED_MESSAGE,
        ),
        (
            "an inner plaintext of 16 425 bytes, mostly padding",
            |raw| {
                let mut inner = b"GET".to_vec();
                inner.push(APPLICATION_DATA);
                inner.resize(16_425, 0);
                raw.tx.seal_inner(&inner)
            },
            RECORD_OVERFLOW,
        ),
        (
            "an empty alert",
            |raw| raw.record(ALERT, b""),
            UNEXPECTED_MESSAGE,
        ),
        (
            "a three-byte alert",
            |raw| raw.record(ALERT, &[1, 0, 0]),
            DECODE_ERROR,
        ),
        (
            "a TLS 1.3 warning other than user_canceled",
            |raw| raw.record(ALERT, &[1, 42]),
            DECODE_ERROR,
        ),
        (
            "a key update asking for neither answer",
            |raw| raw.record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 2]),
            ILLEGAL_PARAMETER,
        ),
        (
            "two key updates in one record",
            |raw| raw.record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0, KEY_UPDATE, 0, 0, 1, 0]),
            UNEXPECTED_MESSAGE,
        ),
        (
            "an empty handshake record",
            |raw| raw.record(HANDSHAKE, b""),
            UNEXPECTED_MESSAGE,
        ),
    ];
    for (what, make, alert) in cases {
        let mut raw = connect(&ca, &server);
        let record = make(&mut raw);
        raw.send(&[record]).unwrap();
        assert_eq!(raw.fatal_alert(), alert, "{what}");
    }
    // Application data between a key update's pieces.
    let mut raw = connect(&ca, &server);
    let records = vec![
        raw.record(HANDSHAKE, &[KEY_UPDATE, 0]),
        raw.record(APPLICATION_DATA, b"G"),
    ];
    raw.send(&records).unwrap();
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
}

#[test]
fn a_key_update_in_pieces_is_joined_and_followed() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect(&ca, &server);
    let records = vec![
        raw.record(HANDSHAKE, &[KEY_UPDATE]),
        raw.record(HANDSHAKE, &[0, 0]),
        raw.record(HANDSHAKE, &[1, 1]),
    ];
    raw.tx.update();
    let get = raw.record(APPLICATION_DATA, GET);
    raw.send(&records).unwrap();
    raw.send(&[get]).unwrap();
    let (reply, updates) = reply_and_key_updates(&raw.rest().unwrap());
    assert_eq!(updates, 1);
    assert!(reply.ends_with("/hi"), "{reply}");
}

#[test]
fn a_lowered_record_limit_makes_the_server_update_its_key_before_passing_it() {
    let ca = TestCa::new();
    let server = start_with(&ca, |s| s.tls_records_per_key(5));
    let mut raw = connect(&ca, &server);
    // The server's tickets were sealed under its key too: count from where it stands.
    let first = raw.rx.seq;
    let get = b"GET /n HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut replies = 0;
    let mut updates = 0;
    let mut under_one_key = first;
    let mut most = 0;
    for _ in 0..12 {
        let record = raw.record(APPLICATION_DATA, get);
        raw.send(&[record]).unwrap();
        loop {
            let (kind, content) = raw.next().unwrap().expect("a record");
            under_one_key += 1;
            most = most.max(under_one_key);
            if kind == HANDSHAKE && content[0] == KEY_UPDATE {
                updates += 1;
                under_one_key = 0;
                continue;
            }
            if kind == APPLICATION_DATA && content.ends_with(b"/n") {
                replies += 1;
                break;
            }
        }
    }
    assert_eq!(replies, 12);
    assert!(updates >= 2, "{updates} updates");
    assert!(most <= 5, "{most} records under one key");
}

/// A TLS 1.2 ClientHello asking to renegotiate (its body is never read: the server refuses).
const RENEGOTIATE: [u8; 8] = [CLIENT_HELLO, 0, 0, 4, 3, 3, 0, 0];

#[test]
fn tls12_renegotiation_is_refused_with_a_warning_once_and_the_second_attempt_is_fatal() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect_in(&ca, &server, Version::Tls12);
    // Refused, the connection goes on: the warning, then the reply.
    let records = vec![
        raw.record(HANDSHAKE, &RENEGOTIATE),
        raw.record(APPLICATION_DATA, GET),
    ];
    raw.send(&records).unwrap();
    let rest = raw.rest().unwrap();
    assert_eq!(rest[0], (ALERT, vec![1, NO_RENEGOTIATION]), "{rest:?}");
    let (reply, _) = reply_and_key_updates(&rest);
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");

    // A ClientHello in pieces is one attempt; the next one ends the connection.
    let mut raw = connect_in(&ca, &server, Version::Tls12);
    let records = vec![
        raw.record(HANDSHAKE, &RENEGOTIATE[..3]),
        raw.record(HANDSHAKE, &RENEGOTIATE[3..]),
        raw.record(HANDSHAKE, &RENEGOTIATE),
    ];
    raw.send(&records).unwrap();
    let rest = raw.rest().unwrap();
    assert_eq!(rest.first(), Some(&(ALERT, vec![1, NO_RENEGOTIATION])));
    assert_eq!(rest.last(), Some(&(ALERT, vec![2, UNEXPECTED_MESSAGE])));
    assert_eq!(rest.len(), 2, "{rest:?}");
}

#[test]
fn tls12_allows_four_warnings_and_the_fifth_is_fatal() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect_in(&ca, &server, Version::Tls12);
    let mut records: Vec<Vec<u8>> = (0..4).map(|_| raw.record(ALERT, &[1, 42])).collect();
    records.push(raw.record(APPLICATION_DATA, GET));
    raw.send(&records).unwrap();
    let (reply, _) = reply_and_key_updates(&raw.rest().unwrap());
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");

    let mut raw = connect_in(&ca, &server, Version::Tls12);
    let records: Vec<Vec<u8>> = (0..5).map(|_| raw.record(ALERT, &[1, 42])).collect();
    raw.send(&records).unwrap();
    assert_eq!(raw.fatal_alert(), UNEXPECTED_MESSAGE);
}

#[test]
fn tls12_says_close_notify_and_closes_before_its_key_seals_more_than_the_limit() {
    let ca = TestCa::new();
    let server = start_with(&ca, |s| s.tls_records_per_key(6));
    let mut raw = connect_in(&ca, &server, Version::Tls12);
    // The server's Finished was sealed under this key too.
    let first = raw.rx.seq;
    let mut sealed = first;
    let get = b"GET /n HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut replies = 0;
    let end = loop {
        let record = raw.record(APPLICATION_DATA, get);
        if raw.send(&[record]).is_err() {
            break raw.rest().unwrap();
        }
        match raw.next().unwrap() {
            Some((APPLICATION_DATA, reply)) if reply.ends_with(b"/n") => {
                replies += 1;
                sealed += 1;
            }
            Some(other) => break vec![other],
            None => break Vec::new(),
        }
    };
    assert_eq!(
        end.last(),
        Some(&(ALERT, vec![1, 0])),
        "close_notify last: {end:?}"
    );
    // Every record the key may seal was a reply; the write past them was refused.
    assert_eq!(sealed, 6, "{sealed} records under one key");
    assert_eq!(replies, 6 - first);
}

/// Regression: a read that used up its turn's budget returned the plaintext it had with whole
/// records still kept, and the strand, told the socket was drained, waited for bytes that had
/// already come — the connection hung.
#[test]
fn a_turn_that_spends_its_read_budget_leaves_the_rest_for_the_next_and_loses_nothing() {
    let ca = TestCa::new();
    let server = start(&ca);
    // A body of 40 bytes, each after 31 key updates: some 36 KB on the wire, but over 11 MiB
    // of turns' budgets, so that reads that empty the socket end turns with records kept.
    let body = 40;
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {body}\r\nConnection: close\r\n\r\n"
    );
    let mut raw = connect(&ca, &server);
    let mut records = vec![raw.record(APPLICATION_DATA, head.as_bytes())];
    for _ in 0..body {
        records.extend((0..31).map(|_| raw.key_update(false)));
        records.push(raw.record(APPLICATION_DATA, b"b"));
    }
    raw.send(&records).unwrap();
    let (reply, _) = reply_and_key_updates(&raw.rest().unwrap());
    assert!(reply.ends_with(&format!("{body} bytes")), "{reply}");
}

/// A client may wait for our answer before it sends more (tlsfuzzer's do): a request is
/// answered once the read that held it is opened, not with the next reply; a second request
/// before we have sent data under the new key is answered by the same KeyUpdate.
#[test]
fn a_key_update_request_is_answered_at_once_and_again_only_after_data() {
    let ca = TestCa::new();
    let server = start(&ca);
    let mut raw = connect(&ca, &server);
    let first = vec![raw.record(APPLICATION_DATA, b"GET"), raw.key_update(true)];
    raw.send(&first).unwrap();
    let answer = loop {
        match raw.next().unwrap() {
            Some((HANDSHAKE, m)) if m[0] == KEY_UPDATE => break m,
            Some(_) => continue, // tickets
            None => panic!("closed without answering"),
        }
    };
    assert_eq!(answer, [KEY_UPDATE, 0, 0, 1, 0]);
    // Asked again before any data: the answer stands.
    let again = vec![
        raw.key_update(true),
        raw.record(APPLICATION_DATA, &GET[3..]),
    ];
    raw.send(&again).unwrap();
    let (reply, updates) = reply_and_key_updates(&raw.rest().unwrap());
    assert_eq!(updates, 0);
    assert!(reply.ends_with("/hi"), "{reply}");

    // After data under the new key, a request gets a new answer.
    let mut raw = connect(&ca, &server);
    let get = b"GET /n HTTP/1.1\r\nHost: x\r\n\r\n";
    for round in 0..3 {
        let records = vec![raw.key_update(true), raw.record(APPLICATION_DATA, get)];
        raw.send(&records).unwrap();
        let mut updates = 0;
        loop {
            match raw.next().unwrap().expect("a record") {
                (HANDSHAKE, m) if m[0] == KEY_UPDATE => updates += 1,
                (APPLICATION_DATA, reply) if reply.ends_with(b"/n") => break,
                _ => {}
            }
        }
        assert_eq!(updates, 1, "round {round}");
    }
}
