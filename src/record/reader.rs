//! Reading recordings: the run's metadata, an index of the file's chunks by step (built by
//! walking the records' headers, so a file cut short by a killed run reads up to its last
//! complete chunk), and the state at any step — decompressing only the chunks that hold it.
//!
//! Reaching a step reads the chunk holding it and the keyframe before it (at most
//! [`KEYFRAME_EVERY`] steps back) for the explorers' maps and the networks' degrees: the time to
//! answer does not grow with the recording's length.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::format::*;
use super::mcap_records::{
    self as records, OP_CHANNEL, OP_CHUNK, OP_DATA_END, OP_FOOTER, OP_HEADER, OP_MESSAGE, OP_METADATA,
};

const MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";
/// Decoded chunks kept for scrubbing back and forth.
const CACHE: usize = 8;
/// No record of a crsim recording comes near this; a bigger length is a corrupt file.
const MAX_RECORD: u64 = 1 << 31;
/// The most bytes a chunk may decompress to (crsim writes chunks of 512 KiB, more only when one
/// message is larger): a bigger claim is a corrupt file.
const MAX_CHUNK: u64 = 1 << 30;

/// A chunk of the file: where it is and which steps it holds.
#[derive(Debug, Clone, Copy)]
struct ChunkEntry {
    offset: u64,
    length: u64,
    first: u64,
    last: u64,
}

/// The messages of one chunk, in log-time order.
type Decoded = Arc<Vec<(Channel, u64, Vec<u8>)>>;

/// An open recording.
pub struct Recording {
    pub path: PathBuf,
    pub meta: RunMeta,
    /// What the run's end says, if the file has it.
    pub end: Option<EndMeta>,
    /// Why and where the file ends early (a killed run), if it does.
    pub truncated: Option<String>,
    file: File,
    chunks: Vec<ChunkEntry>,
    channels: HashMap<u16, Channel>,
    dt_ns: u64,
    cache: VecDeque<(usize, Decoded)>,
}

/// The state of the run at one step, as the replay shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frame {
    pub step: StepRecord,
    pub robots: RobotsRecord,
    pub pens: PensRecord,
    /// Each network robot's degrees (by name).
    pub networks: BTreeMap<String, Vec<i8>>,
    /// Each explorer's state with its whole map (by name).
    pub explorers: BTreeMap<String, ExplorerRecord>,
    /// Deliveries of the last few steps, for the radio lines (step of delivery, delivery).
    pub deliveries: Vec<(u64, RadioDelivery)>,
    /// What happened at this step.
    pub events: Vec<Event>,
    /// Each range sensor's latest scan (by robot index), mm.
    pub ranges: BTreeMap<u32, Vec<i32>>,
    /// Each robot's latest records of the sensors with records of their own (by robot index,
    /// then sensor name), as `/sensors` has them.
    pub sensors: BTreeMap<u32, BTreeMap<String, serde_json::Value>>,
}

impl Frame {
    /// Adds a `/sensors` record: each robot's records replace its earlier ones of that sensor.
    pub fn add_sensors(&mut self, r: &SensorsRecord) {
        for (&robot, records) in r.robot.iter().zip(&r.records) {
            self.sensors.entry(robot).or_default().extend(records.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
}

/// Steps of deliveries a frame carries for the radio lines.
pub const DELIVERY_WINDOW: u64 = 20;

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]))
}

impl Recording {
    /// Opens `path`; the error names the file and what is wrong with it.
    pub fn open(path: &Path) -> Result<Recording, String> {
        let name = path.display();
        let mut file = File::open(path).map_err(|e| format!("cannot open recording {name}: {e}"))?;
        let size = file.metadata().map_err(|e| format!("cannot read {name}: {e}"))?.len();
        let mut magic = [0u8; 8];
        if size < 8 || file.read_exact(&mut magic).is_err() || &magic != MAGIC {
            return Err(format!(
                "{name} is not a crsim recording: it is not an MCAP file (it does not start with the MCAP magic bytes)"
            ));
        }
        let mut offset = 8u64;
        let mut chunks = Vec::new();
        let mut run = None;
        let mut end = None;
        let mut profile = None;
        let mut channels = HashMap::new();
        let mut truncated = None;
        let mut head = [0u8; 9];
        loop {
            if offset == size {
                truncated = Some(format!("the file ends at byte {offset} without the MCAP footer"));
                break;
            }
            if offset + 9 > size {
                truncated = Some(format!("the file ends inside a record header at byte {offset}"));
                break;
            }
            file.seek(SeekFrom::Start(offset)).map_err(|e| format!("cannot read {name}: {e}"))?;
            file.read_exact(&mut head).map_err(|e| format!("cannot read {name}: {e}"))?;
            let (op, len) = (head[0], le_u64(&head[1..]));
            if len > MAX_RECORD {
                return Err(format!("{name} is corrupt: a record at byte {offset} claims {len} bytes"));
            }
            let body_at = offset + 9;
            if body_at + len > size {
                truncated = Some(format!(
                    "the file was cut short at byte {size}, inside a record that starts at byte {offset}"
                ));
                break;
            }
            let read_body = |file: &mut File| -> Result<Vec<u8>, String> {
                let mut body = vec![0u8; len as usize];
                file.read_exact(&mut body).map_err(|e| format!("cannot read {name}: {e}"))?;
                Ok(body)
            };
            match op {
                OP_HEADER => {
                    let body = read_body(&mut file)?;
                    if let Ok(p) = records::header_profile(&body) {
                        profile = Some(p);
                    }
                }
                OP_CHUNK => {
                    if len < 16 {
                        return Err(format!("{name} is corrupt: the chunk at byte {offset} has no header"));
                    }
                    let mut times = [0u8; 16];
                    file.read_exact(&mut times).map_err(|e| format!("cannot read {name}: {e}"))?;
                    chunks.push(ChunkEntry { offset, length: len, first: le_u64(&times), last: le_u64(&times[8..]) });
                }
                OP_CHANNEL => {
                    let body = read_body(&mut file)?;
                    if let Ok((id, topic)) = records::channel(&body)
                        && let Some(ch) = Channel::from_topic(&topic)
                    {
                        channels.insert(id, ch);
                    }
                }
                OP_METADATA => {
                    let body = read_body(&mut file)?;
                    match records::metadata(&body) {
                        Ok((n, m)) if n == META_RUN => run = Some(m),
                        Ok((n, m)) if n == META_END => end = Some(m),
                        Ok(_) => {}
                        Err(e) => return Err(format!("{name} is corrupt: the metadata at byte {offset}: {e}")),
                    }
                }
                OP_DATA_END | OP_FOOTER => break,
                0 => return Err(format!("{name} is corrupt: a record of opcode 0 at byte {offset}")),
                _ => {}
            }
            offset = body_at + len;
        }
        match profile.as_deref() {
            None => return Err(format!("{name} is not a crsim recording: it has no MCAP header")),
            Some(PROFILE) => {}
            Some(other) => {
                return Err(format!(
                    "{name} is an MCAP file but not a crsim recording (its profile is {other:?}, not {PROFILE:?})"
                ));
            }
        }
        let Some(run) = run else {
            return Err(format!("{name} is not a usable crsim recording: it has no run metadata ({META_RUN})"));
        };
        let meta = RunMeta::from_map(&run).map_err(|e| format!("cannot replay {name}: {e}"))?;
        let dt_ns = meta.dt_ns();
        let mut rec = Recording {
            path: path.to_path_buf(),
            end: end.as_ref().and_then(EndMeta::from_map),
            meta,
            truncated,
            file,
            chunks: Vec::new(),
            channels,
            dt_ns,
            cache: VecDeque::new(),
        };
        for mut c in chunks {
            c.first /= dt_ns;
            c.last /= dt_ns;
            // Chunks hold steps in order; a header that says otherwise is damaged (no CRC covers
            // it) and would send a reader past the end.
            let before = rec.chunks.last().map_or(0, |p: &ChunkEntry| p.last);
            if c.first > c.last || c.first < before {
                return Err(format!(
                    "{name} is corrupt: the chunk at byte {} says it holds steps {}..={}, after a chunk ending at step {before}",
                    c.offset, c.first, c.last
                ));
            }
            rec.chunks.push(c);
        }
        if rec.chunks.is_empty() {
            return Err(format!(
                "{name} holds no complete step{}",
                rec.truncated.as_ref().map_or(String::new(), |t| format!(" ({t})"))
            ));
        }
        // Channel records sit in the first chunk.
        rec.decode(0).map_err(|e| format!("{name} is corrupt: {e}"))?;
        if rec.channels.is_empty() {
            return Err(format!("{name} is not a usable crsim recording: it has none of crsim's channels"));
        }
        Ok(rec)
    }

    /// The first and last step recorded.
    pub fn steps(&self) -> (u64, u64) {
        let first = self.chunks.first().map_or(0, |c| c.first);
        let mut last = self.chunks.last().map_or(0, |c| c.last);
        // The last step of a file cut short may have left some of its records in the lost chunk.
        if self.truncated.is_some() && last > first {
            last -= 1;
        }
        (first, last)
    }

    /// Where the recording ends early, or `None` when it is complete.
    pub fn describe_end(&self) -> Option<String> {
        let (_, last) = self.steps();
        self.truncated.as_ref().map(|t| {
            format!(
                "{} is incomplete ({t}); it replays up to step {last}, its last complete chunk",
                self.path.display()
            )
        })
    }

    fn decode(&mut self, i: usize) -> Result<Decoded, String> {
        if let Some((_, d)) = self.cache.iter().find(|(k, _)| *k == i) {
            return Ok(Arc::clone(d));
        }
        let c = self.chunks[i];
        let mut body = vec![0u8; c.length as usize];
        self.file
            .seek(SeekFrom::Start(c.offset + 9))
            .and_then(|_| self.file.read_exact(&mut body))
            .map_err(|e| format!("cannot read the chunk at byte {}: {e}", c.offset))?;
        let at = |e: String| format!("the chunk at byte {}: {e}", c.offset);
        let inside = records::chunk_records(&body, MAX_CHUNK).map_err(at)?;
        let mut out = Vec::new();
        for r in records::records(&inside) {
            match r.map_err(at)? {
                (OP_CHANNEL, body) => {
                    let (id, topic) = records::channel(body).map_err(at)?;
                    if let Some(k) = Channel::from_topic(&topic) {
                        self.channels.insert(id, k);
                    }
                }
                (OP_MESSAGE, body) => {
                    let (channel, log_time, data) = records::message(body).map_err(at)?;
                    if let Some(&k) = self.channels.get(&channel) {
                        out.push((k, log_time / self.dt_ns, data.to_vec()));
                    }
                }
                _ => {}
            }
        }
        out.sort_by_key(|(_, step, _)| *step);
        // The index's steps come from the chunk's header, which no CRC covers: they must be the
        // steps its messages hold, or a damaged header sends a reader (verify) far past the end.
        if let (Some(lo), Some(hi)) = (out.first().map(|m| m.1), out.last().map(|m| m.1))
            && (lo, hi) != (c.first, c.last)
        {
            return Err(format!(
                "the chunk at byte {} says it holds steps {}..={} but holds steps {lo}..={hi}",
                c.offset, c.first, c.last
            ));
        }
        let d: Decoded = Arc::new(out);
        if self.cache.len() == CACHE {
            self.cache.pop_front();
        }
        self.cache.push_back((i, Arc::clone(&d)));
        Ok(d)
    }

    /// Chunks that may hold steps `from..=to`.
    fn chunks_for(&self, from: u64, to: u64) -> Vec<usize> {
        // Chunks are in step order; a binary search finds the first that can hold `from`.
        let start = self.chunks.partition_point(|c| c.last < from);
        (start..self.chunks.len()).take_while(|&i| self.chunks[i].first <= to).collect()
    }

    /// The raw messages of `channel` for steps `from..=to`, in step order.
    pub fn raw(&mut self, channel: Channel, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>, String> {
        let mut out = Vec::new();
        for i in self.chunks_for(from, to) {
            let d = self.decode(i)?;
            out.extend(
                d.iter().filter(|(c, s, _)| *c == channel && (from..=to).contains(s)).map(|(_, s, b)| (*s, b.clone())),
            );
        }
        Ok(out)
    }

    /// The messages of `channel` for steps `from..=to`, decoded.
    pub fn read<T: DeserializeOwned>(&mut self, channel: Channel, from: u64, to: u64) -> Result<Vec<T>, String> {
        self.raw(channel, from, to)?
            .into_iter()
            .map(|(s, b)| {
                serde_json::from_slice(&b).map_err(|e| {
                    format!("{}: the {} message of step {s} is not valid: {e}", self.path.display(), channel.topic())
                })
            })
            .collect()
    }

    fn one<T: DeserializeOwned + Default>(&mut self, channel: Channel, step: u64) -> Result<T, String> {
        Ok(self.read::<T>(channel, step, step)?.into_iter().next_back().unwrap_or_default())
    }

    /// The state at `step` (clamped to the recorded steps).
    pub fn frame(&mut self, step: u64) -> Result<Frame, String> {
        let (first, last) = self.steps();
        let step = step.clamp(first, last);
        let mut f = Frame {
            step: self.one(Channel::Step, step)?,
            robots: self.one(Channel::Robots, step)?,
            pens: self.one(Channel::Pens, step)?,
            ..Frame::default()
        };
        let key_step = (step / KEYFRAME_EVERY * KEYFRAME_EVERY).max(first);
        let key: KeyframeRecord = self.one(Channel::Keyframe, key_step)?;
        for n in key.networks {
            f.networks.insert(n.robot.clone(), n.degrees);
        }
        for e in key.explorers {
            f.explorers.insert(e.robot.clone(), e);
        }
        f.ranges = key.ranges.robot.into_iter().zip(key.ranges.distances).collect();
        f.add_sensors(&key.sensors);
        // A keyframe's sensor records are those before its own step (`capture_sensors`).
        for r in self.read::<SensorsRecord>(Channel::Sensors, key_step, step)? {
            f.add_sensors(&r);
        }
        if step > key_step {
            for r in self.read::<RangeRecord>(Channel::Range, key_step + 1, step)? {
                f.ranges.extend(r.robot.into_iter().zip(r.distances));
            }
            for n in self.read::<NetworkRecord>(Channel::Network, key_step + 1, step)? {
                f.networks.insert(n.robot.clone(), n.degrees);
            }
            for e in self.read::<ExplorerRecord>(Channel::Explorer, key_step + 1, step)? {
                if let Some(known) = f.explorers.get_mut(&e.robot) {
                    apply_explorer(known, e);
                }
            }
        }
        for r in self.read::<RadioRecord>(Channel::Radio, step.saturating_sub(DELIVERY_WINDOW), step)? {
            f.deliveries.extend(r.delivered.into_iter().map(|d| (r.step, d)));
        }
        f.events = self.read::<EventsRecord>(Channel::Events, step, step)?.into_iter().flat_map(|e| e.events).collect();
        Ok(f)
    }
}

/// Applies an explorer's recorded change to its known state (with its whole map).
pub fn apply_explorer(known: &mut ExplorerRecord, change: ExplorerRecord) {
    if let Some(rows) = known.map.as_mut() {
        let top = rows.len() as i32 - 2; // row index of y = rows - 1 ... the map has a ring
        for &(x, y, c) in &change.changed {
            // Rows are stored top first, from y = map rows down to y = -1.
            let row = (top - y) as usize;
            let col = (x + 1) as usize;
            if let Some(r) = rows.get_mut(row) {
                let mut chars: Vec<char> = r.chars().collect();
                if let Some(slot) = chars.get_mut(col) {
                    *slot = c;
                    *r = chars.into_iter().collect();
                }
            }
        }
    }
    known.step = change.step;
    known.cell = change.cell;
    known.dir = change.dir;
    known.phase = change.phase;
    known.outbound = change.outbound;
    known.plan = change.plan;
}
