// An EventSource client from npm (the `eventsource` package) reading one stream: prints one
// JSON line per event ({"type": "open"}, {"type": "message", "id", "data"}, {"type": "error"})
// until its standard input closes or 60 s pass. Driven by tests/interop/sse_browsers.py.
//
//   NODE_PATH=... node tests/interop/sse_node.mjs URL
import { createRequire } from "node:module";

const require = createRequire(process.env.EVENTSOURCE_DIR + "/");
const { EventSource } = require("eventsource");

const say = (what) => process.stdout.write(JSON.stringify(what) + "\n");
const source = new EventSource(process.argv[2]);
source.onopen = () => say({ type: "open" });
source.onmessage = (e) => say({ type: "message", id: e.lastEventId, data: e.data });
source.onerror = () => say({ type: "error" });

const end = () => {
    source.close();
    process.exit(0);
};
process.stdin.on("end", end);
process.stdin.resume();
setTimeout(end, 60_000);
