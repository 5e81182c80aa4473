//! Memory and speed of the DEFLATE crates permessage-deflate could use, on what a chat sends:
//! each message compressed and inflated on its own (no context takeover, the library's default
//! mode) — chat lines of ~176 bytes and a 16 KiB JSON document. Memory is the C heap in use
//! (glibc's `mallinfo2`, which sees Rust's allocations and libdeflate's alike) after making a
//! compressor or decompressor and using it once. Speed is the median of five rounds.

use std::time::Instant;

/// Heap bytes in use (glibc): the arena's and the blocks it mapped on their own.
fn heap() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let m = unsafe { libc::mallinfo2() };
    m.uordblks + m.hblkhd
}

#[path = "../../../benches/chat_lines/mod.rs"]
mod chat_lines;

fn chat_line(i: usize) -> Vec<u8> {
    chat_lines::chat_line(i).into_bytes()
}

fn document() -> Vec<u8> {
    let mut out = b"[".to_vec();
    let mut i = 0;
    while out.len() < 16 * 1024 - 300 {
        out.extend_from_slice(&chat_line(i));
        out.push(b',');
        i += 1;
    }
    out.pop();
    out.push(b']');
    out
}

/// One crate's way to compress a whole message (`out` cleared first) and inflate it back.
trait Codec {
    fn name(&self) -> &'static str;
    fn compress(&mut self, msg: &[u8], out: &mut Vec<u8>);
    fn inflate(&mut self, data: &[u8], out: &mut Vec<u8>);
}

struct ZlibRs(zlib_rs::Deflate, zlib_rs::Inflate);
impl Codec for ZlibRs {
    fn name(&self) -> &'static str {
        "zlib-rs 0.6 (level 6)"
    }
    fn compress(&mut self, msg: &[u8], out: &mut Vec<u8>) {
        self.0.reset();
        out.resize(msg.len() + 64, 0);
        self.0.compress(msg, out, zlib_rs::DeflateFlush::SyncFlush).unwrap();
        out.truncate(self.0.total_out() as usize - 4);
    }
    fn inflate(&mut self, data: &[u8], out: &mut Vec<u8>) {
        self.1.reset(false);
        let input = [data, &[0, 0, 0xff, 0xff]].concat();
        out.resize(64 * 1024, 0);
        self.1.decompress(&input, out, zlib_rs::InflateFlush::SyncFlush).unwrap();
        out.truncate(self.1.total_out() as usize);
    }
}

struct Miniz(Box<miniz_oxide::deflate::core::CompressorOxide>, Box<miniz_oxide::inflate::core::DecompressorOxide>);
impl Codec for Miniz {
    fn name(&self) -> &'static str {
        "miniz_oxide 0.8 (level 6)"
    }
    fn compress(&mut self, msg: &[u8], out: &mut Vec<u8>) {
        use miniz_oxide::deflate::core::{compress, TDEFLFlush};
        self.0.reset();
        out.resize(msg.len() + 64, 0);
        let (_, _, n) = compress(&mut self.0, msg, out, TDEFLFlush::Sync);
        out.truncate(n - 4);
    }
    fn inflate(&mut self, data: &[u8], out: &mut Vec<u8>) {
        use miniz_oxide::inflate::core::{decompress, inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF};
        self.1.init();
        let input = [data, &[0, 0, 0xff, 0xff]].concat();
        out.resize(64 * 1024, 0);
        let (_, _, n) = decompress(&mut self.1, &input, out, 0, TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF);
        out.truncate(n);
    }
}

struct Libdeflate(libdeflater::Compressor, libdeflater::Decompressor);
impl Codec for Libdeflate {
    fn name(&self) -> &'static str {
        "libdeflate 1.26 (C, level 6)"
    }
    fn compress(&mut self, msg: &[u8], out: &mut Vec<u8>) {
        // Whole buffers only: it cannot keep a window between messages (no context takeover
        // would be the only mode), and ends with a final block rather than a sync flush.
        out.resize(self.0.deflate_compress_bound(msg.len()), 0);
        let n = self.0.deflate_compress(msg, out).unwrap();
        out.truncate(n);
    }
    fn inflate(&mut self, data: &[u8], out: &mut Vec<u8>) {
        out.resize(64 * 1024, 0);
        let n = self.1.deflate_decompress(data, out).unwrap();
        out.truncate(n);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn measure(codec: &mut dyn Codec, messages: &[Vec<u8>], rounds: usize) -> (f64, f64, f64) {
    let mut out = Vec::new();
    let mut back = Vec::new();
    let mut compressed = Vec::new();
    for m in messages {
        codec.compress(m, &mut out);
        codec.inflate(&out, &mut back);
        assert_eq!(&back, m, "{} round trip", codec.name());
        compressed.push(out.clone());
    }
    let ratio = compressed.iter().map(Vec::len).sum::<usize>() as f64
        / messages.iter().map(Vec::len).sum::<usize>() as f64;
    let (mut c, mut d) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        for i in 0..rounds {
            codec.compress(&messages[i % messages.len()], &mut out);
        }
        c.push(t.elapsed().as_nanos() as f64 / rounds as f64);
        let t = Instant::now();
        for i in 0..rounds {
            codec.inflate(&compressed[i % compressed.len()], &mut back);
        }
        d.push(t.elapsed().as_nanos() as f64 / rounds as f64);
    }
    (ratio, median(c), median(d))
}

fn main() {
    let lines: Vec<Vec<u8>> = (0..64).map(chat_line).collect();
    let doc = vec![document()];
    let average = lines.iter().map(Vec::len).sum::<usize>() / lines.len();
    println!("chat lines: {average} B on average; document: {} B", doc[0].len());
    println!(
        "{:<30} {:>10} | {:>9} {:>12} {:>12} | {:>9} {:>12} {:>12}",
        "crate", "memory", "line size", "compress", "inflate", "doc size", "compress", "inflate"
    );
    let makers: [fn() -> Box<dyn Codec>; 3] = [
        || Box::new(ZlibRs(zlib_rs::Deflate::new(6, false, 15), zlib_rs::Inflate::new(false, 15))),
        || {
            use miniz_oxide::deflate::core::{create_comp_flags_from_zip_params, CompressorOxide};
            Box::new(Miniz(
                Box::new(CompressorOxide::new(create_comp_flags_from_zip_params(6, -15, 0))),
                Box::new(miniz_oxide::inflate::core::DecompressorOxide::new()),
            ))
        },
        || {
            Box::new(Libdeflate(
                libdeflater::Compressor::new(libdeflater::CompressionLvl::new(6).unwrap()),
                libdeflater::Decompressor::new(),
            ))
        },
    ];
    for make in makers {
        // Memory: the pair made and used once, less what the measurement itself holds.
        let before = heap();
        let mut codec = make();
        let made = heap() - before;
        let mut out = Vec::with_capacity(64 * 1024);
        let mut back = Vec::with_capacity(64 * 1024);
        let held = heap();
        codec.compress(&doc[0], &mut out);
        codec.inflate(&out, &mut back);
        let memory = made + (heap() - held);
        let (lr, lc, ld) = measure(codec.as_mut(), &lines, 200_000);
        let (dr, dc, dd) = measure(codec.as_mut(), &doc, 2_000);
        println!(
            "{:<30} {:>10} | {:>8.1}% {:>9.0} ns {:>9.0} ns | {:>8.1}% {:>9.1} µs {:>9.1} µs",
            codec.name(),
            format!("{} KiB", memory / 1024),
            lr * 100.0,
            lc,
            ld,
            dr * 100.0,
            dc / 1000.0,
            dd / 1000.0
        );
    }
    println!("(size: compressed / original; memory: one compressor and one decompressor, made and used once)");
}
