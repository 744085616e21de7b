//! Writing recordings: an MCAP file, chunked and zstd-compressed, with a JSON schema per
//! channel, the run's metadata first and its end (steps, trajectory hash) last. Compression and
//! writing happen on a thread of their own, and so does encoding the records to JSON: the
//! simulation only hands typed records over, in batches.
//!
//! The file is written as `FILE.part` and renamed to `FILE` when finished, so `FILE` is always
//! a complete recording. A run killed mid-way leaves `FILE.part`, which reads up to its last
//! complete chunk.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::capture::Sink;
use super::format::{CHANNELS, Channel, EndMeta, META_END, META_RUN, PROFILE, Record, RunMeta};

/// Uncompressed bytes per chunk: large enough to compress well, small enough that seeking to a
/// step decompresses little.
const CHUNK_SIZE: u64 = 512 * 1024;
/// zstd level: the default's ratio at a fraction of higher levels' time.
const ZSTD_LEVEL: u32 = 1;

/// Records are handed to the writing thread in batches of about this many bytes: one hand-over
/// per record cost more in thread wake-ups than the compression itself.
const BATCH_BYTES: usize = 64 * 1024;

enum Job {
    Records(Vec<Arc<Record>>),
    Finish(EndMeta),
}

/// A recording being written to a file.
pub struct FileSink {
    path: PathBuf,
    tx: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<Result<(), String>>>,
    /// Records not yet handed over, and their size.
    batch: Vec<Arc<Record>>,
    batch_bytes: usize,
}

/// The temporary name a recording has while it is written.
pub fn part_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".part");
    path.with_file_name(name)
}

/// Whether a recording can go to `path` (its folder exists), checked before a run starts.
pub fn check_target(path: &Path) -> Result<(), String> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => {
            Err(format!("cannot record to {}: folder {} does not exist", path.display(), dir.display()))
        }
        _ => Ok(()),
    }
}

type McapWriter = mcap::Writer<BufWriter<File>>;

fn open_writer(part: &Path, meta: &RunMeta) -> Result<(McapWriter, BTreeMap<Channel, u16>), String> {
    let file = File::create(part).map_err(|e| format!("cannot create {}: {e}", part.display()))?;
    let err = |e: mcap::McapError| format!("cannot write {}: {e}", part.display());
    let mut w = mcap::WriteOptions::new()
        .profile(PROFILE)
        .library(format!("crsim {}", env!("CARGO_PKG_VERSION")))
        .compression(Some(mcap::Compression::Zstd))
        .compression_level(ZSTD_LEVEL)
        // Compress on the writing thread itself: zstd's own workers (one per core by default)
        // would take the core the simulation runs on.
        .compression_threads(0)
        .chunk_size(Some(CHUNK_SIZE))
        .create(BufWriter::with_capacity(1 << 20, file))
        .map_err(err)?;
    w.write_metadata(&mcap::records::Metadata { name: META_RUN.into(), metadata: meta.to_map() }).map_err(err)?;
    let mut ids = BTreeMap::new();
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
    for job in rx {
        match job {
            Job::Records(batch) => {
                for r in batch {
                    sequence = sequence.wrapping_add(1);
                    let t = r.step.saturating_mul(dt_ns);
                    let header = mcap::records::MessageHeader {
                        channel_id: ids[&r.channel],
                        sequence,
                        log_time: t,
                        publish_time: t,
                    };
                    w.write_to_known_channel(&header, &r.body.encode()).map_err(err)?;
                }
            }
            Job::Finish(end) => {
                w.write_metadata(&mcap::records::Metadata { name: META_END.into(), metadata: end.to_map() })
                    .map_err(err)?;
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
        check_target(path)?;
        let part = part_path(path);
        let (w, ids) = open_writer(&part, meta)?;
        // A few megabytes of slack: the simulation waits only when the disk cannot keep up.
        let (tx, rx) = sync_channel(64);
        let dt_ns = meta.dt_ns();
        let (p, q) = (part.clone(), path.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("crsim-recorder".into())
            .spawn(move || write_loop(w, ids, dt_ns, rx, p, q))
            .map_err(|e| format!("cannot start the recording thread: {e}"))?;
        Ok(FileSink { path: path.to_path_buf(), tx: Some(tx), thread: Some(thread), batch: Vec::new(), batch_bytes: 0 })
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
        if self.tx.is_none() {
            return Err("the recording is finished".into());
        }
        self.batch_bytes += record.body.size_hint();
        self.batch.push(Arc::clone(record));
        if self.batch_bytes >= BATCH_BYTES {
            self.hand_over()?;
        }
        Ok(())
    }

    fn finish(&mut self, end: &EndMeta) -> Result<(), String> {
        self.hand_over()?;
        if let Some(tx) = &self.tx {
            let _ = tx.send(Job::Finish(end.clone()));
        }
        self.join()
    }

    fn name(&self) -> String {
        format!("recording {}", self.path.display())
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        // Unfinished (the app closed while recording): the writer flushes what it has.
        let _ = self.hand_over();
        let _ = self.join();
    }
}
