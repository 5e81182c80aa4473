// A WebSocket echo server on Node's `ws` package (from npm), for the client interop test:
// echoes every message (text as text, binary as binary), answers `header` with the value of
// the request's X-Test header, chooses the subprotocol `chat` when offered, and closes with
// 1000 on `bye`. Prints its port on the first line; runs until its standard input closes.
//
//   NODE_PREFIX=... node tests/interop/ws_node_server.mjs
import { createRequire } from "node:module";

const require = createRequire(process.env.NODE_PREFIX + "/");
const { WebSocketServer } = require("ws");

const server = new WebSocketServer({
    host: "127.0.0.1",
    port: 0,
    handleProtocols: (offered) => (offered.has("chat") ? "chat" : false),
});
server.on("connection", (ws, req) => {
    ws.on("message", (data, isBinary) => {
        const text = isBinary ? null : data.toString();
        if (text === "header") ws.send(String(req.headers["x-test"] ?? "none"));
        else if (text === "protocol") ws.send(ws.protocol || "none");
        else if (text === "bye") ws.close(1000, "bye");
        else ws.send(data, { binary: isBinary });
    });
});
server.on("listening", () => process.stdout.write(server.address().port + "\n"));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
