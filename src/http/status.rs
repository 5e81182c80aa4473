//! Reason phrases of the IANA HTTP Status Code Registry (RFC 9110 §15 and the RFCs it cites).

/// The reason phrase for a status code, for every code in the IANA registry: 404 gives
/// `Not Found`, 503 `Service Unavailable`. Codes registered as "(Unused)" (306, 418) give
/// `Unused`; codes not in the registry give `""` (a status line may carry an empty reason,
/// RFC 9112 §4).
///
/// ```
/// assert_eq!(web::http::status_text(404), "Not Found");
/// assert_eq!(web::http::status_text(503), "Service Unavailable");
/// assert_eq!(web::http::status_text(299), "");
/// ```
pub fn status_text(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        104 => "Upload Resumption Supported",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        306 => "Unused",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        418 => "Unused",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::status_text;

    #[test]
    fn every_registered_code_has_a_phrase() {
        let registered = [
            100, 101, 102, 103, 104, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301,
            302, 303, 304, 305, 306, 307, 308, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409,
            410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 422, 423, 424, 425, 426, 428, 429,
            431, 451, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
        ];
        for code in registered {
            assert!(!status_text(code).is_empty(), "{code}");
        }
        let unregistered = (0..1000).filter(|c| !registered.contains(c));
        for code in unregistered {
            assert_eq!(status_text(code), "", "{code}");
        }
    }

    #[test]
    fn specification_examples() {
        let cases = [
            (404, "Not Found"),
            (503, "Service Unavailable"),
            (200, "OK"),
            (429, "Too Many Requests"),
            (413, "Content Too Large"),
        ];
        for (code, text) in cases {
            assert_eq!(status_text(code), text);
        }
    }
}
