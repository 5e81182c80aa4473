//! Query strings, percent-coding and cookies: never a panic, and the round trips hold.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::http::{
    cookie_decoded, cookie_in, decoded, encoded, param, params, set_cookie, text_response,
    Header, Request,
};

fuzz_target!(|data: &[u8]| {
    assert_eq!(decoded(encoded(data)), data);
    let text = String::from_utf8_lossy(data);
    let _ = decoded(text.as_bytes());
    let all = params(&text);
    for h in &all {
        // `param` is the first occurrence's value.
        let first = all.iter().find(|x| x.name == h.name).map(|x| x.value.as_str());
        assert_eq!(Some(param(&text, &h.name).as_str()), first);
    }
    let pairs: Vec<&str> = text.split(';').collect();
    let _ = cookie_in(&pairs, "a");
    // What set_cookie writes, a reader gets back, and it cannot add an attribute.
    let (name, value) = text.split_once('\u{0}').unwrap_or(("n", &text));
    let name = if name.is_empty() { "n" } else { name };
    let res = set_cookie(text_response(200, ""), name, value, "");
    let line = &res.headers[0].value;
    assert!(!line.contains(';'), "{line:?}");
    let req = Request::new("GET", "/", vec![Header::new("cookie", line.clone())], "");
    assert_eq!(cookie_decoded(&req, name), value);
});
