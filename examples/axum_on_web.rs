//! A team's axum code on `web` (`--features tower`): its REST router — state, JSON in and out,
//! path extractors, tower-http's CORS and trace layers — answers on the same port as `web`'s
//! live routes, an event stream and a WebSocket in one room, which each new order reaches.
//!
//! ```sh
//! cargo run --release --features tower --example axum_on_web -- --port 8080
//! curl -N http://127.0.0.1:8080/live &                      # web's event stream
//! curl -d '{"item":"green tea"}' -H 'content-type: application/json' \
//!      http://127.0.0.1:8080/api/orders                     # the axum router
//! curl http://127.0.0.1:8080/api/orders/1
//! ```
//!
//! The router is the team's as it was under `axum::serve`; what changes is one line — the
//! server it is given to — and the live routes `web` adds beside it (an idle event stream or
//! WebSocket costs `web`'s bytes, not a task and hyper's buffers).

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Json, Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use serde::{Deserialize, Serialize};
use tower_http::cors::CorsLayer;
use tower_http::trace::TraceLayer;
use web::http::{Request, Response};
use web::sse::{Event, Sse, SseHandler};
use web::ws::{Message, Rooms, Ws, WsHandler};

mod cli;

/// Where new orders are announced.
const ROOM: &str = "orders";

fn main() -> std::process::ExitCode {
    cli::run("axum_on_web", serve)
}

fn serve() -> std::io::Result<()> {
    let options = cli::Options::parse(
        &["--port", "--workers", "--max-connections"],
        &[],
        "An axum router (REST, JSON, state, CORS, tracing) and web's live routes on one \
         port: GET/POST /api/orders, GET /api/orders/ID; an event stream at /live and a \
         WebSocket at /ws, both in the room each new order is published to.",
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let server = options.server(8080)?;
    let board = Board {
        orders: Arc::default(),
        rooms: server.rooms(),
    };
    let app = web::tower::handler(runtime.handle(), router(board));
    let server = server.sse("/live", Live).websocket("/ws", Live);
    eprintln!("axum_on_web: listening on http://{}", server.local_addr()?);
    server.run(move |req| app.call(req))
}

/// The team's state: its orders, and the rooms that announce them.
#[derive(Clone)]
struct Board {
    orders: Arc<Mutex<Vec<Order>>>,
    rooms: Rooms,
}

#[derive(Clone, Serialize)]
struct Order {
    id: usize,
    item: String,
}

#[derive(Deserialize)]
struct NewOrder {
    item: String,
}

/// The team's router, as it was.
fn router(board: Board) -> Router {
    Router::new()
        .route("/api/orders", get(list).post(create))
        .route("/api/orders/{id}", get(one))
        .fallback(|| async { (StatusCode::NOT_FOUND, "no such page\n") })
        .layer(CorsLayer::permissive())
        .layer(TraceLayer::new_for_http())
        .with_state(board)
}

async fn list(State(board): State<Board>) -> Json<Vec<Order>> {
    Json(board.orders.lock().map(|o| o.clone()).unwrap_or_default())
}

async fn create(
    State(board): State<Board>,
    Json(new): Json<NewOrder>,
) -> Result<(StatusCode, Json<Order>), StatusCode> {
    let order = {
        let mut orders = board
            .orders
            .lock()
            .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
        let order = Order {
            id: orders.len() + 1,
            item: new.item,
        };
        orders.push(order.clone());
        order
    };
    let announced = format!("order {}: {}", order.id, order.item);
    board.rooms.publish_event(ROOM, &Event::new(announced));
    Ok((StatusCode::CREATED, Json(order)))
}

async fn one(State(board): State<Board>, Path(id): Path<usize>) -> Result<Json<Order>, StatusCode> {
    let orders = board
        .orders
        .lock()
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    let found = orders.iter().find(|o| o.id == id).cloned();
    found.map(Json).ok_or(StatusCode::NOT_FOUND)
}

/// `web`'s live routes: each stream or WebSocket joins the room.
struct Live;

impl SseHandler for Live {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn open(&self, sse: &mut Sse<'_>, _state: &mut ()) {
        sse.join(ROOM);
    }
}

impl WsHandler for Live {
    type State = ();

    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }

    fn open(&self, ws: &mut Ws<'_>, _state: &mut ()) {
        ws.join(ROOM);
    }

    /// What a member says is not the board's business: orders come by the API.
    fn message(&self, _ws: &mut Ws<'_>, _state: &mut (), _msg: Message) {}
}
