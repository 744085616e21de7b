//! A small HTTP/1.1 reader and writer for the VirtualRobot's one route, `POST /api/move`, with
//! the bounds a server facing any client needs: a request must arrive whole within a time limit
//! (a lying `Content-Length`, a TLS hello or a silent client cannot hold a thread), its head and
//! body are limited in size, and every connection is closed after its answer. The accept loop
//! and the connection limit live in [`super::server`].

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A request head is a few hundred bytes; more is refused.
pub const MAX_HEAD: usize = 16 * 1024;
/// A move request is a few dozen bytes; longer bodies are refused unread.
pub const MAX_BODY: usize = 64 * 1024;
/// A whole request (head and body) must arrive within this time.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A request as read from a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    pub body: String,
}

/// Why a request could not be read, with the status to answer (if the client can still be
/// answered at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    pub status: u16,
    pub message: String,
}

impl ReadError {
    fn new(status: u16, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }
}

/// Reads one request from `stream`, whole, within [`REQUEST_TIMEOUT`].
pub fn read_request(stream: &mut TcpStream) -> Result<HttpRequest, ReadError> {
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    // The head: up to the blank line.
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::new(431, format!("the request head is longer than {MAX_HEAD} bytes")));
        }
        let n = read_some(stream, &mut chunk, deadline, "the request head")?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head =
        std::str::from_utf8(&buf[..head_end]).map_err(|_| ReadError::new(400, "the request head is not text"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(ReadError::new(400, format!("not an HTTP request line: {:?}", truncate(request_line, 60))));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::new(505, format!("HTTP version {version:?} is not served; use HTTP/1.1")));
    }
    let mut length: Option<usize> = None;
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::new(400, format!("a header line without a colon: {:?}", truncate(line, 60))));
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            let n: usize =
                value.parse().map_err(|_| ReadError::new(400, format!("Content-Length {value:?} is not a number")))?;
            if n > MAX_BODY {
                return Err(ReadError::new(413, format!("the body is longer than {MAX_BODY} bytes")));
            }
            length = Some(n);
        } else if name == "transfer-encoding" && !value.eq_ignore_ascii_case("identity") {
            return Err(ReadError::new(411, "chunked bodies are not served: send a Content-Length"));
        }
    }
    let length = length.unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = read_some(stream, &mut chunk, deadline, "the body")?;
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    let body = String::from_utf8(body).map_err(|_| ReadError::new(400, "the body is not UTF-8 text"))?;
    Ok(HttpRequest { method: method.to_string(), path: path.to_string(), body })
}

/// Reads what is there, waiting at most until `deadline`.
fn read_some(stream: &mut TcpStream, chunk: &mut [u8], deadline: Instant, what: &str) -> Result<usize, ReadError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ReadError::new(408, format!("{what} did not arrive within {} s", REQUEST_TIMEOUT.as_secs())));
    }
    let _ = stream.set_read_timeout(Some(left));
    match stream.read(chunk) {
        Ok(0) => Err(ReadError::new(400, format!("the connection closed before {what} was complete"))),
        Ok(n) => Ok(n),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            Err(ReadError::new(408, format!("{what} did not arrive within {} s", REQUEST_TIMEOUT.as_secs())))
        }
        Err(e) => Err(ReadError::new(400, format!("cannot read {what}: {e}"))),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// Writes a JSON response with the VirtualRobot server's headers and closes the exchange.
pub fn write_response(stream: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: text/json\r\nAccess-Control-Allow-Origin: *\r\n\
         Access-Control-Allow-Methods: POST, GET, OPTIONS\r\nAccess-Control-Allow-Headers: Content-Type, Accept\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// What the server side reads when a client sends `bytes` and then keeps the connection
    /// open without sending more.
    fn read_from(bytes: &'static [u8]) -> Result<HttpRequest, ReadError> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let client = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(bytes).unwrap();
            let _ = done_rx.recv();
        });
        let (mut s, _) = listener.accept().unwrap();
        let r = read_request(&mut s);
        let _ = done_tx.send(());
        let _ = client.join();
        r
    }

    #[test]
    fn a_whole_request_is_read_and_bad_ones_are_refused_with_a_status() {
        let cases: [(&'static [u8], Option<u16>); 6] = [
            (b"POST /api/move HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", None),
            // A lying Content-Length and a TLS hello hold the thread no longer than the limit.
            (b"POST /api/move HTTP/1.1\r\nContent-Length: 50\r\n\r\nshort", Some(408)),
            (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", Some(408)),
            (b"POST /api/move HTTP/1.1\r\nContent-Length: 999999\r\n\r\n", Some(413)),
            (b"POST /api/move HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Some(411)),
            (b"hello there\r\n\r\n", Some(400)),
        ];
        let runs: Vec<_> = cases.iter().map(|&(bytes, _)| std::thread::spawn(move || read_from(bytes))).collect();
        for ((_, want), run) in cases.iter().zip(runs) {
            let got = run.join().unwrap();
            match want {
                None => assert_eq!(
                    got,
                    Ok(HttpRequest { method: "POST".into(), path: "/api/move".into(), body: "hello".into() })
                ),
                Some(status) => assert_eq!(got.map_err(|e| e.status), Err(*status)),
            }
        }
    }
}
