//! What this side sends (RFC 7541 §6): every field by static index or as a literal never added
//! to a table, so that the peer keeps no state for us and a reply is encoded without any.

use super::primitive::{write_int, write_string};
use super::table::{static_field, static_name};

/// Appends `:status` — by static index for the seven the table has.
pub(crate) fn write_status(out: &mut Vec<u8>, status: u16) {
    let mut digits = [0u8; 3];
    let mut n = status.min(999);
    for d in digits.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    let text = std::str::from_utf8(&digits).unwrap_or("500");
    write_field(out, ":status", text.as_bytes());
}

/// Appends one field (its name lower-case, as HTTP/2 requires): by static index when the
/// table has it whole, else a literal without indexing, its name by index when the table
/// has that.
pub(crate) fn write_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    if let Some(index) = std::str::from_utf8(value)
        .ok()
        .and_then(|v| static_field(name, v))
    {
        write_int(out, 0x80, 7, index as u64);
        return;
    }
    match static_name(name) {
        Some(index) => write_int(out, 0x00, 4, index as u64),
        None => {
            out.push(0x00);
            write_string(out, name.as_bytes());
        }
    }
    write_string(out, value);
}

#[cfg(test)]
mod tests {
    use super::super::{Decoder, Scratch};
    use super::*;

    #[test]
    fn statuses_and_fields_decode_back_and_leave_no_table() {
        let mut out = Vec::new();
        write_status(&mut out, 200);
        assert_eq!(out, [0x88], "index 8");
        write_status(&mut out, 429);
        write_field(&mut out, "content-type", b"text/plain");
        write_field(&mut out, "x-custom", b"value with spaces");
        write_field(&mut out, "accept-encoding", b"gzip, deflate");
        let mut d = Decoder::new(4096);
        let mut got = Vec::new();
        d.decode(&out, &mut Scratch::default(), |n, v| {
            got.push((n.to_vec(), v.to_vec()))
        })
        .unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> = [
            (":status", "200"),
            (":status", "429"),
            ("content-type", "text/plain"),
            ("x-custom", "value with spaces"),
            ("accept-encoding", "gzip, deflate"),
        ]
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
        assert_eq!(got, want);
        assert_eq!(d.held_bytes(), 0, "nothing was added to the peer's table");
    }
}
