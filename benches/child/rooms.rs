//! What the load benchmarks' child servers serve as live routes.

use web::http::{Request, Response};
use web::sse::{Sse, SseHandler};

/// Event streams that join room `.0` and keep nothing else.
pub struct JoinsRoom(pub &'static str);

impl SseHandler for JoinsRoom {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut Sse<'_>, _: &mut ()) {
        sse.join(self.0);
    }
}
