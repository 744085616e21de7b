//! The network side of the program server: a TCP listener and its connections, read and written
//! on the simulation's thread (no threads, no channels: in lock-step the simulation waits for
//! the answers anyway, and a step costs no thread hand-over). Sockets never block; lines are
//! read as they come between steps, and waited for with `poll(2)` and a deadline during a step's
//! exchange; a line longer than the scene's limit closes the connection with an error.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::protocol::{Encoding, ServerFrame};

/// Why a connection cannot go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closed {
    /// The program closed it.
    ByPeer,
    /// A line longer than the limit.
    Oversized { limit: usize },
    /// Reading or writing failed.
    Failed(String),
}

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Closed::ByPeer => f.write_str("the program closed the connection"),
            Closed::Oversized { limit } => write!(f, "a frame longer than {limit} bytes"),
            Closed::Failed(e) => write!(f, "the connection failed: {e}"),
        }
    }
}

/// One program's connection. Its socket never blocks: waits go through `poll(2)`, so the
/// exchange can wait on every program at once and no step pays for switching modes.
#[derive(Debug)]
pub struct Connection {
    pub id: u64,
    stream: TcpStream,
    /// Bytes read that do not yet end a line.
    buf: Vec<u8>,
    /// Where in `buf` the search for the next newline goes on.
    scanned: usize,
    /// Room to read into.
    scratch: Vec<u8>,
    pub peer: SocketAddr,
    /// The robots it drives, in the order it registered them.
    pub robots: Vec<String>,
    /// How its step frames are encoded.
    pub encoding: Encoding,
    pub frames_in: u64,
    pub errors_sent: u64,
    pub late: u64,
}

impl Connection {
    pub fn new(id: u64, stream: TcpStream, peer: SocketAddr) -> Self {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_nonblocking(true);
        Self {
            id,
            stream,
            buf: Vec::new(),
            scanned: 0,
            scratch: vec![0; 64 * 1024],
            peer,
            robots: Vec::new(),
            encoding: Encoding::Json,
            frames_in: 0,
            errors_sent: 0,
            late: 0,
        }
    }

    /// Reads once into the buffer; the bytes read (0: nothing there).
    fn fill(&mut self) -> Result<usize, Closed> {
        loop {
            match self.stream.read(&mut self.scratch) {
                Ok(0) => return Err(Closed::ByPeer),
                Ok(n) => {
                    self.buf.extend_from_slice(&self.scratch[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(0),
                Err(e) => return Err(Closed::Failed(e.to_string())),
            }
        }
    }

    /// The next complete line in the buffer, if any.
    fn take_line(&mut self, max: usize) -> Result<Option<String>, Closed> {
        if let Some(i) = self.buf[self.scanned..].iter().position(|b| *b == b'\n') {
            let end = self.scanned + i;
            if end > max {
                return Err(Closed::Oversized { limit: max });
            }
            let line = String::from_utf8_lossy(&self.buf[..end]).into_owned();
            self.buf.drain(..=end);
            self.scanned = 0;
            self.frames_in += 1;
            return Ok(Some(line));
        }
        self.scanned = self.buf.len();
        if self.buf.len() > max {
            return Err(Closed::Oversized { limit: max });
        }
        Ok(None)
    }

    /// The next line if one has arrived, without waiting.
    pub fn try_line(&mut self, max: usize) -> Result<Option<String>, Closed> {
        if let Some(line) = self.take_line(max)? {
            return Ok(Some(line));
        }
        match self.fill() {
            Ok(0) => Ok(None),
            Ok(_) => self.take_line(max),
            // Lines already read are still served; the close is seen at the next read.
            Err(e) => Err(e),
        }
    }

    /// Reads what is there without waiting; returns the complete lines.
    pub fn poll_lines(&mut self, max: usize) -> Result<Vec<String>, Closed> {
        let mut lines = Vec::new();
        loop {
            while let Some(line) = self.take_line(max)? {
                lines.push(line);
            }
            match self.fill() {
                Ok(0) => return Ok(lines),
                Ok(_) => {}
                Err(Closed::ByPeer) if !lines.is_empty() => return Ok(lines),
                Err(e) => return Err(e),
            }
        }
    }

    /// The next line, waiting until `deadline` at most (`None` when it passed).
    pub fn next_line(&mut self, deadline: Instant, max: usize) -> Result<Option<String>, Closed> {
        loop {
            if let Some(line) = self.try_line(max)? {
                return Ok(Some(line));
            }
            if !wait_readable(&[self], deadline) {
                return Ok(None);
            }
        }
    }

    /// Exactly `n` bytes (a binary block after a frame's line), waiting until `deadline`.
    pub fn read_bytes(&mut self, n: usize, deadline: Instant) -> Result<Option<Vec<u8>>, Closed> {
        while self.buf.len() < n {
            if self.fill()? == 0 && !wait_readable(&[self], deadline) {
                return Ok(None);
            }
        }
        let bytes: Vec<u8> = self.buf.drain(..n).collect();
        self.scanned = 0;
        Ok(Some(bytes))
    }

    /// Writes a frame, waiting at most `timeout` for the program to take it.
    pub fn send(&mut self, frame: &ServerFrame, timeout: Duration) -> Result<(), Closed> {
        if matches!(frame, ServerFrame::Error { .. }) {
            self.errors_sent += 1;
        }
        self.send_bytes(&frame.line(), timeout)
    }

    pub fn send_bytes(&mut self, bytes: &[u8], timeout: Duration) -> Result<(), Closed> {
        let deadline = Instant::now() + timeout;
        let mut sent = 0;
        while sent < bytes.len() {
            match self.stream.write(&bytes[sent..]) {
                Ok(0) => return Err(Closed::Failed("the connection takes no more bytes".into())),
                Ok(n) => sent += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    // The program is not reading: wait for room, as long as the timeout allows.
                    if !wait_for(&[self.stream.as_fd()], PollFlags::POLLOUT, deadline) {
                        return Err(Closed::Failed(format!(
                            "the program took no bytes for {:.1} s",
                            timeout.as_secs_f64()
                        )));
                    }
                }
                Err(e) => return Err(Closed::Failed(e.to_string())),
            }
        }
        Ok(())
    }
}

/// Waits until one of `conns` has bytes to read (or was closed) or `deadline` passed; false
/// when it passed.
pub fn wait_readable(conns: &[&Connection], deadline: Instant) -> bool {
    let fds: Vec<BorrowedFd> = conns.iter().map(|c| c.stream.as_fd()).collect();
    wait_for(&fds, PollFlags::POLLIN, deadline)
}

/// `poll(2)` on `fds` for `events` until `deadline`; true when one is ready.
fn wait_for(fds: &[BorrowedFd], events: PollFlags, deadline: Instant) -> bool {
    let mut polled: Vec<PollFd> = fds.iter().map(|fd| PollFd::new(*fd, events)).collect();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        // Milliseconds, rounded up: a deadline 0.3 ms away is not a busy loop.
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        match poll(&mut polled, PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)) {
            Ok(0) => {}
            Ok(_) => return true,
            Err(nix::errno::Errno::EINTR) => {}
            // Not a wait that can fail for a valid socket; say ready, the read will tell.
            Err(_) => return true,
        }
    }
}

/// The listening socket.
#[derive(Debug)]
pub struct Listener {
    listener: TcpListener,
    pub local: SocketAddr,
}

impl Listener {
    /// Binds `address`:`port` (0 picks a free port).
    pub fn bind(address: &str, port: u16) -> Result<Self, String> {
        let listener = TcpListener::bind((address, port))
            .map_err(|e| format!("programs: cannot listen on {address}:{port}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        Ok(Self { listener, local })
    }

    /// The connections waiting to be accepted, and the errors of failed accepts.
    pub fn accept_all(&self) -> (Vec<(TcpStream, SocketAddr)>, Vec<String>) {
        let (mut accepted, mut errors) = (Vec::new(), Vec::new());
        loop {
            match self.listener.accept() {
                Ok(c) => accepted.push(c),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => {
                    // Out of file descriptors, say: try again next frame.
                    errors.push(e.to_string());
                    break;
                }
            }
        }
        (accepted, errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Connection, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, peer) = listener.accept().unwrap();
        (Connection::new(1, server, peer), client)
    }

    #[test]
    fn lines_are_split_whole_and_waited_for_up_to_a_deadline() {
        let (mut conn, mut client) = pair();
        client.write_all(b"{\"a\":1}\n{\"b\"").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(conn.poll_lines(1024).unwrap(), vec!["{\"a\":1}".to_string()]);
        client.write_all(b":2}\n").unwrap();
        let line = conn.next_line(Instant::now() + Duration::from_secs(2), 1024).unwrap();
        assert_eq!(line.as_deref(), Some("{\"b\":2}"));
        let start = Instant::now();
        assert_eq!(conn.next_line(Instant::now() + Duration::from_millis(100), 1024).unwrap(), None);
        assert!(start.elapsed() >= Duration::from_millis(90));
        client.write_all(&vec![b'x'; 2000]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(conn.poll_lines(1024), Err(Closed::Oversized { limit: 1024 }));
        drop(client);
        let (mut conn, client) = pair();
        drop(client);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(conn.poll_lines(1024), Err(Closed::ByPeer));
    }
}
