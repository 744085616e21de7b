//! The network side of remote control: an HTTP server (tiny_http) and a WebSocket server
//! (tungstenite) per remote robot, each on its own threads so they never slow the simulation.
//! They hand what clients send to the simulation through a channel ([`Inbound`]) and carry its
//! answers back: a held HTTP request waits for its reply, WebSocket clients get every broadcast.

use std::collections::HashMap;
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use tungstenite::Message;

/// What the servers hand to the simulation.
#[derive(Debug)]
pub enum Inbound {
    /// A `POST /api/move` body; answer through `reply` (the request is held until then).
    Http {
        id: u64,
        body: String,
        reply: Sender<Value>,
    },
    /// A text frame from WebSocket client `client`.
    Ws {
        client: u64,
        text: String,
    },
    WsOpened(u64),
    WsClosed(u64),
}

/// A WebSocket client's outgoing queue.
type Clients = Arc<Mutex<HashMap<u64, Sender<String>>>>;

/// A robot's two servers. Dropping it stops them.
#[derive(Debug)]
pub struct Endpoint {
    pub http: SocketAddr,
    pub ws: SocketAddr,
    pub inbound: Mutex<Receiver<Inbound>>,
    clients: Clients,
    /// HTTP requests waiting for their reply.
    held: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

const POLL: Duration = Duration::from_millis(10);
/// A move request is a few dozen bytes; longer bodies are refused unread.
const MAX_BODY: u64 = 64 * 1024;

fn cors(response: tiny_http::Response<std::io::Cursor<Vec<u8>>>) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let header = |k: &str, v: &str| tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("ASCII header");
    response
        .with_header(header("Content-Type", "text/json"))
        .with_header(header("Access-Control-Allow-Origin", "*"))
        .with_header(header("Access-Control-Allow-Methods", "POST, GET, OPTIONS"))
        .with_header(header("Access-Control-Allow-Headers", "Content-Type, Accept"))
}

fn json_response(status: u16, body: &Value) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    cors(tiny_http::Response::from_string(body.to_string()).with_status_code(status))
}

impl Endpoint {
    /// Starts the servers on `address`:`http_port` and `address`:`ws_port` (0 picks a free port).
    pub fn open(address: &str, http_port: u16, ws_port: u16, robot: &str) -> Result<Self, String> {
        let http = tiny_http::Server::http((address, http_port))
            .map_err(|e| format!("robot {robot:?}: cannot serve HTTP on {address}:{http_port}: {e}"))?;
        let http_addr =
            http.server_addr().to_ip().ok_or_else(|| format!("robot {robot:?}: HTTP server has no IP address"))?;
        let listener = TcpListener::bind((address, ws_port))
            .map_err(|e| format!("robot {robot:?}: cannot serve WebSocket on {address}:{ws_port}: {e}"))?;
        let ws_addr = listener.local_addr().map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Clients = Arc::default();
        let held = Arc::new(AtomicU64::new(0));
        {
            let (tx, stop, held) = (tx.clone(), Arc::clone(&stop), Arc::clone(&held));
            thread::Builder::new()
                .name(format!("http-{robot}"))
                .spawn(move || serve_http(http, tx, stop, held))
                .map_err(|e| e.to_string())?;
        }
        {
            let (stop, clients) = (Arc::clone(&stop), Arc::clone(&clients));
            thread::Builder::new()
                .name(format!("ws-{robot}"))
                .spawn(move || serve_ws(listener, tx, stop, clients))
                .map_err(|e| e.to_string())?;
        }
        Ok(Self { http: http_addr, ws: ws_addr, inbound: Mutex::new(rx), clients, held, stop })
    }

    /// Sends a message to every WebSocket client.
    pub fn broadcast(&self, message: &Value) {
        let text = message.to_string();
        if let Ok(clients) = self.clients.lock() {
            for tx in clients.values() {
                let _ = tx.send(text.clone());
            }
        }
    }

    /// Sends a message to one WebSocket client.
    pub fn send_to(&self, client: u64, message: &Value) {
        if let Ok(clients) = self.clients.lock()
            && let Some(tx) = clients.get(&client)
        {
            let _ = tx.send(message.to_string());
        }
    }

    /// Everything the servers received since the last call.
    pub fn drain(&self) -> Vec<Inbound> {
        self.inbound.lock().map(|rx| rx.try_iter().collect()).unwrap_or_default()
    }

    /// HTTP requests waiting for their reply now.
    pub fn held_requests(&self) -> usize {
        self.held.load(Ordering::Relaxed) as usize
    }

    /// WebSocket clients connected now.
    pub fn ws_clients(&self) -> usize {
        self.clients.lock().map_or(0, |c| c.len())
    }
}

fn serve_http(server: tiny_http::Server, tx: Sender<Inbound>, stop: Arc<AtomicBool>, held: Arc<AtomicU64>) {
    let mut next = 1u64;
    while !stop.load(Ordering::Relaxed) {
        let request = match server.recv_timeout(Duration::from_millis(50)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break,
        };
        let id = next;
        next += 1;
        let (tx, held, stop) = (tx.clone(), Arc::clone(&held), Arc::clone(&stop));
        // One thread per request: a move's reply is held until the move ends.
        let _ = thread::Builder::new().name("http-request".into()).spawn(move || {
            handle_http(request, id, &tx, &held, &stop);
        });
    }
}

fn handle_http(mut request: tiny_http::Request, id: u64, tx: &Sender<Inbound>, held: &AtomicU64, stop: &AtomicBool) {
    let method = request.method().clone();
    let url = request.url().to_string();
    let response = match (&method, url.as_str()) {
        (tiny_http::Method::Options, _) => json_response(200, &json!({})),
        (tiny_http::Method::Post, "/api/move") => {
            let mut body = String::new();
            let read = request.as_reader().take(MAX_BODY + 1).read_to_string(&mut body);
            let problem = match read {
                Err(e) => Some((400, format!("cannot read the body: {e}"))),
                Ok(n) if n as u64 > MAX_BODY => Some((413, format!("the body is longer than {MAX_BODY} bytes"))),
                Ok(_) => None,
            };
            if let Some((status, why)) = problem {
                let _ = request
                    .respond(json_response(status, &json!({"endmove": "false", "move": "unknown", "error": why})));
                return;
            }
            let (reply_tx, reply_rx) = channel();
            if tx.send(Inbound::Http { id, body, reply: reply_tx }).is_err() {
                json_response(503, &json!({"error": "no robot is served here any more"}))
            } else {
                held.fetch_add(1, Ordering::Relaxed);
                let reply = loop {
                    match reply_rx.recv_timeout(Duration::from_millis(100)) {
                        Ok(v) => break Some(v),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) if !stop.load(Ordering::Relaxed) => {}
                        Err(_) => break None,
                    }
                };
                held.fetch_sub(1, Ordering::Relaxed);
                match reply {
                    Some(v) => {
                        let status = if v.get("error").is_some() { 400 } else { 200 };
                        json_response(status, &v)
                    }
                    None => json_response(503, &json!({"error": "the robot went away before the move ended"})),
                }
            }
        }
        _ => json_response(
            404,
            &json!({"error": format!("no route {method} {url}: send moves as POST /api/move with {{\"robotmove\":M,\"time\":T}}")}),
        ),
    };
    let _ = request.respond(response);
}

fn serve_ws(listener: TcpListener, tx: Sender<Inbound>, stop: Arc<AtomicBool>, clients: Clients) {
    let mut next = 1u64;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let id = next;
                next += 1;
                let (tx, stop, clients) = (tx.clone(), Arc::clone(&stop), Arc::clone(&clients));
                let _ = thread::Builder::new().name("ws-client".into()).spawn(move || {
                    ws_client(stream, id, &tx, &stop, &clients);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => thread::sleep(POLL),
            Err(_) => thread::sleep(POLL),
        }
    }
}

fn ws_client(stream: TcpStream, id: u64, tx: &Sender<Inbound>, stop: &AtomicBool, clients: &Clients) {
    let _ = stream.set_nonblocking(false);
    let Ok(mut ws) = tungstenite::accept(stream) else { return };
    let _ = ws.get_mut().set_read_timeout(Some(POLL));
    let (out_tx, out_rx) = channel::<String>();
    if let Ok(mut c) = clients.lock() {
        c.insert(id, out_tx);
    }
    let _ = tx.send(Inbound::WsOpened(id));
    while !stop.load(Ordering::Relaxed) {
        match ws.read() {
            Ok(Message::Text(text)) => {
                if tx.send(Inbound::Ws { client: id, text: text.to_string() }).is_err() {
                    break;
                }
            }
            Ok(Message::Binary(bytes)) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                if tx.send(Inbound::Ws { client: id, text }).is_err() {
                    break;
                }
            }
            Ok(Message::Close(_)) => break,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
        let mut failed = false;
        while let Ok(text) = out_rx.try_recv() {
            if ws.write(Message::text(text)).is_err() {
                failed = true;
                break;
            }
        }
        match ws.flush() {
            Ok(()) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => failed = true,
        }
        if failed {
            break;
        }
    }
    if let Ok(mut c) = clients.lock() {
        c.remove(&id);
    }
    let _ = ws.close(None);
    let _ = ws.flush();
    let _ = tx.send(Inbound::WsClosed(id));
}
