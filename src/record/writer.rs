//! Writing recordings: an MCAP file, chunked and zstd-compressed, with a JSON schema per
//! channel, the run's metadata first and its end (steps, trajectory hash) last. Compression and
//! writing happen on a thread of their own, and so does encoding the records to JSON: the
//! simulation only hands typed records over, in batches.
//!
//! The same writer makes files of foreign channels only ([`FileSink::foreign`]: a ROS 2 bag, whose
//! MCAP profile allows CDR channels alone), each channel added when its first message comes.
//!
//! The file is written as `FILE.PID.part` (the writing process's id: two runs recording to one
//! path each write their own) and renamed to `FILE` when finished, so `FILE` is always a complete
//! recording. A run killed mid-way leaves `FILE.PID.part`, which reads up to its last complete
//! chunk.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::capture::Sink;
use super::format::{CHANNELS, Channel, EndMeta, ForeignMessage, META_END, META_RUN, PROFILE, Record, RunMeta};

/// Uncompressed bytes per chunk: large enough to compress well, small enough that seeking to a
/// step decompresses little.
const CHUNK_SIZE: u64 = 512 * 1024;
/// zstd level: the default's ratio at a fraction of higher levels' time.
const ZSTD_LEVEL: u32 = 1;

/// Records are handed to the writing thread in batches of about this many bytes: one hand-over
/// per record cost more in thread wake-ups than the compression itself.
const BATCH_BYTES: usize = 64 * 1024;

/// A message for the writing thread.
enum Item {
    Record(Arc<Record>),
    Foreign(Arc<ForeignMessage>),
}

enum Job {
    Records(Vec<Item>),
    Finish(EndMeta),
}

/// A recording being written to a file.
pub struct FileSink {
    path: PathBuf,
    /// A file of foreign channels only (a ROS 2 bag), which passes over crsim's records.
    foreign: bool,
    tx: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<Result<(), String>>>,
    /// Records not yet handed over, and their size.
    batch: Vec<Item>,
    batch_bytes: usize,
}

/// The temporary name a recording has while this process writes it: `FILE.PID.part`.
pub fn part_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{}.part", std::process::id()));
    path.with_file_name(name)
}

/// Whether a recording can go to `path`, checked before a run starts: its folder exists, and
/// `path` is a regular file or nothing yet. A finished recording is renamed onto `path`, which
/// would replace a device (`/dev/null`, run as root) or fail on a folder at the end of the run.
pub fn check_target(path: &Path) -> Result<(), String> {
    let shown = path.display();
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
    {
        let what = if meta.is_dir() { "a folder" } else { "not a regular file" };
        return Err(format!("cannot record to {shown}: it is {what} (a recording is a file of its own)"));
    }
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(format!("cannot record to {shown}: folder {} does not exist", dir.display())),
        _ => Ok(()),
    }
}

type McapWriter = mcap::Writer<BufWriter<File>>;

/// Opens `part` with `profile`; a crsim recording (`meta` given) starts with its run's metadata
/// and crsim's channels.
fn open_writer(
    part: &Path,
    profile: &str,
    meta: Option<&RunMeta>,
) -> Result<(McapWriter, BTreeMap<Channel, u16>), String> {
    let file = File::create(part).map_err(|e| format!("cannot create {}: {e}", part.display()))?;
    let err = |e: mcap::McapError| format!("cannot write {}: {e}", part.display());
    let mut w = mcap::WriteOptions::new()
        .profile(profile)
        .library(format!("crsim {}", env!("CARGO_PKG_VERSION")))
        .compression(Some(mcap::Compression::Zstd))
        .compression_level(ZSTD_LEVEL)
        // Compress on the writing thread itself: zstd's own workers (one per core by default)
        // would take the core the simulation runs on.
        .compression_threads(0)
        .chunk_size(Some(CHUNK_SIZE))
        .create(BufWriter::with_capacity(1 << 20, file))
        .map_err(err)?;
    let mut ids = BTreeMap::new();
    let Some(meta) = meta else { return Ok((w, ids)) };
    w.write_metadata(&mcap::records::Metadata { name: META_RUN.into(), metadata: meta.to_map() }).map_err(err)?;
    for c in CHANNELS {
        let schema = w.add_schema(c.schema_name(), "jsonschema", c.schema().as_bytes()).map_err(err)?;
        let id = w.add_channel(schema, c.topic(), "json", &BTreeMap::new()).map_err(err)?;
        ids.insert(c, id);
    }
    Ok((w, ids))
}

fn write_loop(
    mut w: McapWriter,
    ids: BTreeMap<Channel, u16>,
    dt_ns: u64,
    rx: Receiver<Job>,
    part: PathBuf,
    path: PathBuf,
) -> Result<(), String> {
    let err = |e: mcap::McapError| format!("cannot write {}: {e}", part.display());
    let mut sequence = 0u32;
    // Foreign channels by topic, added as their first message comes.
    let mut foreign: HashMap<String, u16> = HashMap::new();
    for job in rx {
        match job {
            Job::Records(batch) => {
                for item in batch {
                    sequence = sequence.wrapping_add(1);
                    let (channel_id, t, data): (u16, u64, Cow<[u8]>) = match &item {
                        Item::Record(r) => {
                            // A file of foreign channels has none of crsim's (its sink passes over them).
                            let Some(&id) = ids.get(&r.channel) else { continue };
                            (id, r.step.saturating_mul(dt_ns), Cow::Owned(r.body.encode()))
                        }
                        Item::Foreign(m) => {
                            let id = match foreign.get(&m.channel.topic) {
                                Some(&id) => id,
                                None => {
                                    let c = &m.channel;
                                    let schema = w
                                        .add_schema(&c.schema_name, &c.schema_encoding, c.schema.as_bytes())
                                        .map_err(err)?;
                                    let id = w
                                        .add_channel(schema, &c.topic, &c.message_encoding, &c.metadata)
                                        .map_err(err)?;
                                    foreign.insert(c.topic.clone(), id);
                                    id
                                }
                            };
                            (id, m.log_time, Cow::Borrowed(&m.data))
                        }
                    };
                    let header = mcap::records::MessageHeader { channel_id, sequence, log_time: t, publish_time: t };
                    w.write_to_known_channel(&header, &data).map_err(err)?;
                }
            }
            Job::Finish(end) => {
                if !ids.is_empty() {
                    w.write_metadata(&mcap::records::Metadata { name: META_END.into(), metadata: end.to_map() })
                        .map_err(err)?;
                }
                w.finish().map_err(err)?;
                drop(w);
                std::fs::rename(&part, &path)
                    .map_err(|e| format!("cannot rename {} to {}: {e}", part.display(), path.display()))?;
                return Ok(());
            }
        }
    }
    // The simulation went away without finishing (it panicked): keep what was written.
    let _ = w.flush();
    Err("the recording ended without its end".into())
}

impl FileSink {
    /// Starts a recording of the run `meta` at `path`.
    pub fn create(path: &Path, meta: &RunMeta) -> Result<FileSink, String> {
        Self::start(path, PROFILE, Some(meta))
    }

    /// Starts a file of the foreign channels' messages only, with MCAP profile `profile` (`ros2`:
    /// a ROS 2 bag), at `path`.
    pub fn foreign(path: &Path, profile: &str) -> Result<FileSink, String> {
        Self::start(path, profile, None)
    }

    fn start(path: &Path, profile: &str, meta: Option<&RunMeta>) -> Result<FileSink, String> {
        check_target(path)?;
        let part = part_path(path);
        let (w, ids) = open_writer(&part, profile, meta)?;
        // A few megabytes of slack: the simulation waits only when the disk cannot keep up.
        let (tx, rx) = sync_channel(64);
        let dt_ns = meta.map_or(1, |m| m.dt_ns());
        let (p, q) = (part.clone(), path.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("crsim-recorder".into())
            .spawn(move || write_loop(w, ids, dt_ns, rx, p, q))
            .map_err(|e| format!("cannot start the recording thread: {e}"))?;
        Ok(FileSink {
            path: path.to_path_buf(),
            foreign: meta.is_none(),
            tx: Some(tx),
            thread: Some(thread),
            batch: Vec::new(),
            batch_bytes: 0,
        })
    }

    /// Adds a message of about `bytes` to the batch, handing the batch over when it is full.
    fn push(&mut self, item: Item, bytes: usize) -> Result<(), String> {
        if self.tx.is_none() {
            return Err("the recording is finished".into());
        }
        self.batch_bytes += bytes;
        self.batch.push(item);
        if self.batch_bytes >= BATCH_BYTES { self.hand_over() } else { Ok(()) }
    }

    /// Hands the batch to the writing thread.
    fn hand_over(&mut self) -> Result<(), String> {
        let Some(tx) = &self.tx else { return Ok(()) };
        if self.batch.is_empty() {
            return Ok(());
        }
        self.batch_bytes = 0;
        if tx.send(Job::Records(std::mem::take(&mut self.batch))).is_err() {
            // The writer stopped: its error says why.
            return Err(self.join().err().unwrap_or_else(|| "the recording thread stopped".into()));
        }
        Ok(())
    }

    fn join(&mut self) -> Result<(), String> {
        self.tx = None;
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the recording thread stopped unexpectedly".into()),
            None => Ok(()),
        }
    }
}

impl Sink for FileSink {
    fn write(&mut self, record: &Arc<Record>) -> Result<(), String> {
        if self.foreign {
            return Ok(());
        }
        self.push(Item::Record(Arc::clone(record)), record.body.size_hint())
    }

    fn wants_foreign(&self) -> bool {
        self.foreign
    }

    fn write_foreign(&mut self, message: &Arc<ForeignMessage>) -> Result<(), String> {
        self.push(Item::Foreign(Arc::clone(message)), message.data.len())
    }

    fn finish(&mut self, end: &EndMeta) -> Result<(), String> {
        self.hand_over()?;
        if let Some(tx) = &self.tx {
            let _ = tx.send(Job::Finish(end.clone()));
        }
        self.join()
    }

    fn name(&self) -> String {
        let what = if self.foreign { "ROS 2 bag" } else { "recording" };
        format!("{what} {}", self.path.display())
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        // Unfinished (the app closed while recording): the writer flushes what it has.
        let _ = self.hand_over();
        let _ = self.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_goes_to_a_regular_file_or_a_new_name_only() {
        let dir = std::env::temp_dir().join(format!("crsim-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(check_target(&dir.join("new.mcap")), Ok(()));
        std::fs::write(dir.join("old.mcap"), b"x").unwrap();
        assert_eq!(check_target(&dir.join("old.mcap")), Ok(()), "a finished recording is replaced");
        // Renamed onto, a device node would be replaced (as root) and a folder refuses at the end.
        for (path, what) in [("/dev/null", "not a regular file"), ("/dev/full", "not a regular file")] {
            let e = check_target(Path::new(path)).unwrap_err();
            assert_eq!(e, format!("cannot record to {path}: it is {what} (a recording is a file of its own)"));
        }
        assert!(check_target(&dir).unwrap_err().ends_with("it is a folder (a recording is a file of its own)"));
        let e = check_target(&dir.join("no/such/run.mcap")).unwrap_err();
        assert!(e.ends_with("does not exist"), "{e}");
        // The temporary name is this process's own.
        let part = part_path(&dir.join("run.mcap"));
        assert_eq!(part.file_name().unwrap().to_string_lossy(), format!("run.mcap.{}.part", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
    }
}
