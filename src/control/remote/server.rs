//! The network side of remote control: an HTTP server (see [`super::http`]) and a WebSocket
//! server (tungstenite) per remote robot, each on its own threads so they never slow the
//! simulation. They hand what clients send to the simulation through a channel ([`Inbound`])
//! and carry its answers back: a held HTTP request waits for its reply, WebSocket clients get
//! every broadcast.
//!
//! Both listeners stay up whatever clients do: connections beyond a limit are answered "busy"
//! and closed, a request must arrive whole within a time limit, a failed accept (no file
//! descriptors left, say) is logged and retried, and every refusal is counted.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bevy::log::warn;

use serde_json::{Value, json};
use tungstenite::Message;

use crate::scene::schema::file_token;

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

/// HTTP connections served at once; more are answered 503 and closed.
pub const MAX_HTTP_CONNECTIONS: usize = 128;
/// WebSocket clients connected at once; more are refused.
pub const MAX_WS_CLIENTS: usize = 256;
/// A WebSocket handshake must be done within this time.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// After a failed accept, wait this long before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What the servers refused, for the run metrics and the panel.
#[derive(Debug, Default)]
pub struct ServerCounters {
    /// Connections answered "busy" because the limit was reached.
    pub refused_busy: AtomicU64,
    /// Requests that did not arrive whole in time, or were malformed or too large.
    pub bad_requests: AtomicU64,
    /// Failed accepts (the listener went on).
    pub accept_errors: AtomicU64,
}

/// A robot's two servers. Dropping it stops them.
#[derive(Debug)]
pub struct Endpoint {
    pub http: SocketAddr,
    pub ws: SocketAddr,
    pub inbound: Mutex<Receiver<Inbound>>,
    clients: Clients,
    /// HTTP requests waiting for their reply.
    held: Arc<AtomicU64>,
    pub counters: Arc<ServerCounters>,
    stop: Arc<AtomicBool>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

const POLL: Duration = Duration::from_millis(10);

impl Endpoint {
    /// Starts the servers on `address`:`http_port` and `address`:`ws_port` (0 picks a free port).
    pub fn open(address: &str, http_port: u16, ws_port: u16, robot: &str) -> Result<Self, String> {
        let bind = |port: u16, what: &str| {
            let listener = TcpListener::bind((address, port))
                .map_err(|e| format!("robot {robot:?}: cannot serve {what} on {address}:{port}: {e}"))?;
            listener.set_nonblocking(true).map_err(|e| e.to_string())?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            Ok::<_, String>((listener, addr))
        };
        let (http_listener, http_addr) = bind(http_port, "HTTP")?;
        let (ws_listener, ws_addr) = bind(ws_port, "WebSocket")?;
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Clients = Arc::default();
        let held = Arc::new(AtomicU64::new(0));
        let counters = Arc::new(ServerCounters::default());
        {
            let (tx, stop, held, counters) = (tx.clone(), Arc::clone(&stop), Arc::clone(&held), Arc::clone(&counters));
            let name = robot.to_string();
            thread::Builder::new()
                .name(format!("http-{}", file_token(robot)))
                .spawn(move || serve_http(http_listener, &name, tx, stop, held, counters))
                .map_err(|e| e.to_string())?;
        }
        {
            let (stop, clients, counters) = (Arc::clone(&stop), Arc::clone(&clients), Arc::clone(&counters));
            let name = robot.to_string();
            thread::Builder::new()
                .name(format!("ws-{}", file_token(robot)))
                .spawn(move || serve_ws(ws_listener, &name, tx, stop, clients, counters))
                .map_err(|e| e.to_string())?;
        }
        Ok(Self { http: http_addr, ws: ws_addr, inbound: Mutex::new(rx), clients, held, counters, stop })
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

/// Accepts connections until stopped. A failed accept never ends the listener.
fn accept_loop(
    listener: &TcpListener,
    robot: &str,
    what: &str,
    stop: &AtomicBool,
    counters: &ServerCounters,
    mut serve: impl FnMut(TcpStream),
) {
    let mut last_warning: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                serve(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => thread::sleep(POLL),
            Err(e) => {
                counters.accept_errors.fetch_add(1, Ordering::Relaxed);
                // Out of file descriptors or the like: say so (at most once a second), wait, go on.
                if last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                    warn!("remote robot {robot}: {what} cannot accept a connection ({e}); still listening");
                    last_warning = Some(Instant::now());
                }
                thread::sleep(ACCEPT_BACKOFF);
            }
        }
    }
}

fn serve_http(
    listener: TcpListener,
    robot: &str,
    tx: Sender<Inbound>,
    stop: Arc<AtomicBool>,
    held: Arc<AtomicU64>,
    counters: Arc<ServerCounters>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    let mut next = 1u64;
    accept_loop(&listener, robot, "HTTP", &stop, &counters, |mut stream| {
        if active.load(Ordering::Relaxed) >= MAX_HTTP_CONNECTIONS {
            counters.refused_busy.fetch_add(1, Ordering::Relaxed);
            let _ = stream.set_write_timeout(Some(POLL));
            let busy = json!({"error": format!("busy: {MAX_HTTP_CONNECTIONS} connections are open; try again")});
            let _ = super::http::write_response(&mut stream, 503, &busy);
            return;
        }
        let id = next;
        next += 1;
        active.fetch_add(1, Ordering::Relaxed);
        let (tx, held, stop, counters, active) =
            (tx.clone(), Arc::clone(&held), Arc::clone(&stop), Arc::clone(&counters), Arc::clone(&active));
        let spawned = thread::Builder::new().name("http-request".into()).spawn(move || {
            handle_http(stream, id, &tx, &held, &stop, &counters);
            active.fetch_sub(1, Ordering::Relaxed);
        });
        if spawned.is_err() {
            warn!("remote robot: no thread for an HTTP connection");
        }
    });
}

fn handle_http(
    mut stream: TcpStream,
    id: u64,
    tx: &Sender<Inbound>,
    held: &AtomicU64,
    stop: &AtomicBool,
    counters: &ServerCounters,
) {
    let _ = stream.set_write_timeout(Some(super::http::REQUEST_TIMEOUT));
    let request = match super::http::read_request(&mut stream) {
        Ok(r) => r,
        Err(e) => {
            counters.bad_requests.fetch_add(1, Ordering::Relaxed);
            let reply = json!({"endmove": "false", "move": "unknown", "error": e.message});
            let _ = super::http::write_response(&mut stream, e.status, &reply);
            return;
        }
    };
    let (status, reply) = match (request.method.as_str(), request.path.as_str()) {
        ("OPTIONS", _) => (200, json!({})),
        ("POST", "/api/move") => {
            let (reply_tx, reply_rx) = channel();
            if tx.send(Inbound::Http { id, body: request.body, reply: reply_tx }).is_err() {
                (503, json!({"error": "no robot is served here any more"}))
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
                    Some(v) => (if v.get("error").is_some() { 400 } else { 200 }, v),
                    None => (503, json!({"error": "the robot went away before the move ended"})),
                }
            }
        }
        (method, url) => (
            404,
            json!({"error": format!("no route {method} {url}: send moves as POST /api/move with {{\"robotmove\":M,\"time\":T}}")}),
        ),
    };
    let _ = super::http::write_response(&mut stream, status, &reply);
}

fn serve_ws(
    listener: TcpListener,
    robot: &str,
    tx: Sender<Inbound>,
    stop: Arc<AtomicBool>,
    clients: Clients,
    counters: Arc<ServerCounters>,
) {
    let connecting = Arc::new(AtomicUsize::new(0));
    let mut next = 1u64;
    accept_loop(&listener, robot, "WebSocket", &stop, &counters, |stream| {
        let open = clients.lock().map_or(0, |c| c.len()) + connecting.load(Ordering::Relaxed);
        if open >= MAX_WS_CLIENTS {
            counters.refused_busy.fetch_add(1, Ordering::Relaxed);
            let mut stream = stream;
            let _ = stream.set_write_timeout(Some(POLL));
            let busy = json!({"error": format!("busy: {MAX_WS_CLIENTS} WebSocket clients are connected")});
            let _ = super::http::write_response(&mut stream, 503, &busy);
            return;
        }
        let id = next;
        next += 1;
        connecting.fetch_add(1, Ordering::Relaxed);
        let (tx, stop, clients, counters, connecting) =
            (tx.clone(), Arc::clone(&stop), Arc::clone(&clients), Arc::clone(&counters), Arc::clone(&connecting));
        let spawned = thread::Builder::new().name("ws-client".into()).spawn(move || {
            ws_client(stream, id, &tx, &stop, &clients, &counters, &connecting);
        });
        if spawned.is_err() {
            warn!("remote robot: no thread for a WebSocket client");
        }
    });
}

fn ws_client(
    stream: TcpStream,
    id: u64,
    tx: &Sender<Inbound>,
    stop: &AtomicBool,
    clients: &Clients,
    counters: &ServerCounters,
    connecting: &AtomicUsize,
) {
    // A handshake that does not come in time (a silent client, a TLS hello) is given up.
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
    let accepted = tungstenite::accept(stream);
    connecting.fetch_sub(1, Ordering::Relaxed);
    let Ok(mut ws) = accepted else {
        counters.bad_requests.fetch_add(1, Ordering::Relaxed);
        return;
    };
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
