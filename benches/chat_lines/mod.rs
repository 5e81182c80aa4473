//! Chat lines as the chat example sends them (its JSON for a message), with text of varied
//! length and words: what the compression figures are measured on (`benches/deflate.rs`, and
//! `bench/deflate_choice`, which includes this file).

/// Chat line `i` (90–260 bytes).
pub fn chat_line(i: usize) -> String {
    const WORDS: [&str; 24] = [
        "hello", "everyone", "the", "meeting", "moved", "to", "three", "o'clock", "see", "you",
        "there", "thanks", "for", "the", "update", "could", "someone", "share", "the", "link",
        "again", "please", "running", "late",
    ];
    let len = 4 + (i * 7) % 30;
    let text: Vec<&str> = (0..len)
        .map(|k| WORDS[(i * 13 + k * 5) % WORDS.len()])
        .collect();
    format!(
        r#"{{"id":{},"room":"lobby","name":"user{}","text":"{}","time":{}}}"#,
        1000 + i,
        i % 50,
        text.join(" "),
        1_795_000_000 + i
    )
}
