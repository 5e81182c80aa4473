//! How the rooms' messages are encoded for members: the step the rooms are given (they know no
//! protocol), written here where the protocols meet.

use std::sync::Arc;

use crate::http::event_stream::{Event, data_event};
use crate::rooms::Encoding;
use crate::ws::frame::{Opcode, encode_whole};

/// WebSocket members get a frame, event-stream members an event.
pub(crate) const ENCODING: Encoding = Encoding {
    text: |text| encode_whole(Opcode::Text, text.as_bytes()),
    binary: |bytes| encode_whole(Opcode::Binary, bytes),
    event: Event::shared,
    text_event,
};

/// A text as an event, with its id when it has one.
fn text_event(id: Option<u64>, text: &str) -> Arc<[u8]> {
    match id {
        Some(id) => Event::new(text).id(id.to_string()).shared(),
        None => data_event(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rooms::{Forms, Message};

    #[test]
    fn a_text_is_a_frame_for_websockets_and_an_event_for_streams() {
        let Forms { message, event } = ENCODING.forms(&Message::Text("a\nb".into()));
        assert_eq!(&message[..], b"\x81\x03a\nb");
        assert_eq!(event.as_deref(), Some(&b"data: a\ndata: b\n\n"[..]));
    }

    #[test]
    fn binary_reaches_websockets_alone() {
        let Forms { message, event } = ENCODING.forms(&Message::Binary(vec![1, 2]));
        assert_eq!(&message[..], b"\x82\x02\x01\x02");
        assert!(event.is_none());
    }

    #[test]
    fn an_event_is_itself_for_streams_and_its_data_for_websockets() {
        let Forms { message, event } = ENCODING.event_forms(&Event::new("hi").id("7").event("n"));
        assert_eq!(&message[..], b"\x81\x02hi");
        assert_eq!(
            event.as_deref(),
            Some(&b"id: 7\nevent: n\ndata: hi\n\n"[..])
        );
    }

    #[test]
    fn a_posted_line_keeps_its_frame_and_its_event_with_its_id() {
        assert_eq!(
            &text_event(Some(42), "a\nb")[..],
            b"id: 42\ndata: a\ndata: b\n\n"
        );
    }
}
