//! A room's message: what is published, whoever the members are.

/// A whole message.
///
/// ```
/// use web::ws::Message;
/// let m = Message::Text("hi".into());
/// assert!(matches!(m, Message::Text(ref t) if t == "hi"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// A text message.
    Text(String),
    /// A binary message.
    Binary(Vec<u8>),
}
