//! The router: any patterns (refused or taken, never a panic) and any request target against
//! them — a match's parameters lie in the path, and answering never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::http::{Request, Router, text_response};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Lines before an empty line are patterns; the rest are paths.
    let (patterns, paths) = text.split_once("\n\n").unwrap_or((&text, "/"));
    let mut router = Router::new();
    for (i, pattern) in patterns.lines().take(64).enumerate() {
        let method = ["GET", "POST", "PUT"][i % 3];
        let handler = Box::new(|req: Request| text_response(200, req.route().to_owned()));
        let _ = router.try_route(Some(method), pattern, handler);
    }
    for path in paths.lines().take(64) {
        if let Some(found) = router.at(path) {
            for (_, value) in found.params() {
                let start = value.as_ptr() as usize - path.as_ptr() as usize;
                assert!(start + value.len() <= path.len());
            }
        }
        for method in ["GET", "HEAD", "DELETE"] {
            let res = router.answer(Request::new(method, path, vec![], ""));
            assert!(matches!(res.status, 200 | 404 | 405), "{}", res.status);
        }
    }
});
