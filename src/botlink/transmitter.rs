//! The buffered unicast transmitter of seed 004 (`BufferedTransmitterUDP`), as a plain type in
//! simulated time.
//!
//! Packets are queued per bot and leave on [`BufferedTransmitter::flush`], in order. A packet
//! identical (byte for byte, to the same bot) to one sent less than `min_delay` earlier is held
//! back; a held packet leaves at the first flush after the delay has passed, before the packets
//! queued since (it is older). If the same packet comes a third time while one copy is held,
//! the held copy is deleted and the new one waits in its place, so at most one copy waits.

use std::collections::HashMap;

/// The original's minimum delay between two identical commands: 1 ms.
pub const MIN_DELAY_S: f64 = 0.001;

/// What a flush did, for the counters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Flushed {
    /// Packets that left, in order: (bot, bytes).
    pub sent: Vec<(u32, Vec<u8>)>,
    /// Bots one of whose packets was held back (once per packet).
    pub held: Vec<u32>,
    /// Bots one of whose held packets was deleted by a third copy (once per packet).
    pub dropped: Vec<u32>,
}

#[derive(Debug, Clone)]
struct Held {
    bot: u32,
    bytes: Vec<u8>,
}

/// A packet to a bot as a map key: short packets (every command the manager sends but an
/// error's text) are kept inline, exactly, without an allocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Short { bot: u32, len: u8, bytes: [u8; 16] },
    Long { bot: u32, bytes: Vec<u8> },
}

impl Key {
    fn of(bot: u32, bytes: &[u8]) -> Key {
        if bytes.len() <= 16 {
            let mut inline = [0u8; 16];
            inline[..bytes.len()].copy_from_slice(bytes);
            Key::Short { bot, len: bytes.len() as u8, bytes: inline }
        } else {
            Key::Long { bot, bytes: bytes.to_vec() }
        }
    }
}

/// Queues unicast packets and holds back duplicates.
#[derive(Debug, Clone)]
pub struct BufferedTransmitter {
    pub min_delay: f64,
    queue: Vec<(u32, Vec<u8>)>,
    held: Vec<Held>,
    /// When each packet last left, per bot; entries older than the delay are forgotten.
    last_sent: HashMap<Key, f64>,
    /// When the last flush was.
    last_flush: f64,
}

impl Default for BufferedTransmitter {
    fn default() -> Self {
        Self::new(MIN_DELAY_S)
    }
}

impl BufferedTransmitter {
    pub fn new(min_delay: f64) -> Self {
        Self { min_delay, queue: Vec::new(), held: Vec::new(), last_sent: HashMap::new(), last_flush: f64::MIN }
    }

    /// Queues a packet for `bot`.
    pub fn enqueue(&mut self, bot: u32, bytes: Vec<u8>) {
        self.queue.push((bot, bytes));
    }

    /// Packets queued or held, not yet sent.
    pub fn pending(&self) -> usize {
        self.queue.len() + self.held.len()
    }

    /// Sends what may leave at simulated time `now` (seconds) into `out`.
    pub fn flush(&mut self, now: f64, out: &mut Flushed) {
        // A whole delay since the last flush: nothing sent before can be a duplicate.
        if now - self.last_flush >= self.min_delay {
            self.last_sent.clear();
        } else {
            let min_delay = self.min_delay;
            self.last_sent.retain(|_, t| now - *t < min_delay);
        }
        self.last_flush = now;
        let min_delay = self.min_delay;
        let recent = |last: &HashMap<Key, f64>, key: &Key| last.get(key).is_some_and(|&t| now - t < min_delay);
        // Held packets whose delay has passed leave first: they are older than the queue.
        let mut still_held = Vec::new();
        for h in std::mem::take(&mut self.held) {
            let key = Key::of(h.bot, &h.bytes);
            if recent(&self.last_sent, &key) {
                still_held.push(h);
            } else {
                self.last_sent.insert(key, now);
                out.sent.push((h.bot, h.bytes));
            }
        }
        self.held = still_held;
        // The queue keeps its room for the next step's packets.
        let mut queue = std::mem::take(&mut self.queue);
        for (bot, bytes) in queue.drain(..) {
            let key = Key::of(bot, &bytes);
            if recent(&self.last_sent, &key) {
                if let Some(i) = self.held.iter().position(|h| h.bot == bot && h.bytes == bytes) {
                    self.held.remove(i);
                    out.dropped.push(bot);
                }
                self.held.push(Held { bot, bytes });
                out.held.push(bot);
            } else {
                self.last_sent.insert(key, now);
                out.sent.push((bot, bytes));
            }
        }
        self.queue = queue;
    }

    /// Forgets everything queued and held for `bot` (its transceiver stopped).
    pub fn forget(&mut self, bot: u32) {
        self.queue.retain(|(b, _)| *b != bot);
        self.held.retain(|h| h.bot != bot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flush(t: &mut BufferedTransmitter, now: f64) -> Flushed {
        let mut out = Flushed::default();
        t.flush(now, &mut out);
        out
    }

    #[test]
    fn distinct_packets_leave_at_once_in_order() {
        let mut t = BufferedTransmitter::default();
        t.enqueue(0, vec![1]);
        t.enqueue(1, vec![1]);
        t.enqueue(0, vec![2]);
        let out = flush(&mut t, 0.0);
        assert_eq!(out.sent, vec![(0, vec![1]), (1, vec![1]), (0, vec![2])]);
        assert!(out.held.is_empty() && out.dropped.is_empty());
        assert_eq!(t.pending(), 0);
    }

    #[test]
    fn a_duplicate_within_the_delay_is_held_then_sent_before_newer_packets() {
        let mut t = BufferedTransmitter::default();
        t.enqueue(3, vec![7]);
        t.enqueue(3, vec![7]);
        let out = flush(&mut t, 1.0);
        assert_eq!(out.sent, vec![(3, vec![7])]);
        assert_eq!(out.held, vec![3]);
        assert_eq!(t.pending(), 1);
        // Half the delay later it still waits.
        let out = flush(&mut t, 1.0005);
        assert!(out.sent.is_empty());
        assert_eq!(t.pending(), 1);
        // Once the delay has passed it leaves, before what was queued since.
        t.enqueue(3, vec![8]);
        let out = flush(&mut t, 1.002);
        assert_eq!(out.sent, vec![(3, vec![7]), (3, vec![8])]);
        assert_eq!(t.pending(), 0);
    }

    #[test]
    fn a_third_copy_deletes_the_waiting_one() {
        let mut t = BufferedTransmitter::default();
        for _ in 0..3 {
            t.enqueue(0, vec![5, 5]);
        }
        let out = flush(&mut t, 0.0);
        assert_eq!(out.sent.len(), 1);
        assert_eq!(out.held, vec![0, 0]);
        assert_eq!(out.dropped, vec![0]);
        assert_eq!(t.pending(), 1, "one copy waits");
        let out = flush(&mut t, 0.02);
        assert_eq!(out.sent, vec![(0, vec![5, 5])]);
    }

    #[test]
    fn the_same_packet_to_another_bot_or_a_step_later_is_no_duplicate() {
        let mut t = BufferedTransmitter::default();
        t.enqueue(0, vec![1]);
        t.enqueue(1, vec![1]);
        assert_eq!(flush(&mut t, 0.0).sent.len(), 2);
        t.enqueue(0, vec![1]);
        let out = flush(&mut t, 0.02);
        assert_eq!(out.sent.len(), 1);
        assert!(out.held.is_empty());
    }

    #[test]
    fn forgetting_a_bot_drops_its_queue_and_held_packets() {
        let mut t = BufferedTransmitter::default();
        t.enqueue(0, vec![1]);
        t.enqueue(0, vec![1]);
        flush(&mut t, 0.0);
        t.enqueue(0, vec![2]);
        t.enqueue(1, vec![2]);
        t.forget(0);
        assert_eq!(flush(&mut t, 0.02).sent, vec![(1, vec![2])]);
    }
}
