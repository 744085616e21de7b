//! Writing result files so that a reader never sees half of one: the text goes to a temporary
//! file in the same folder, is flushed to disk, and is renamed over the target in one step. A run
//! killed while writing leaves the old file (or none) and a stray temporary, never a torn file.
//! And reading them back with the checks scene files have: a regular file only (a FIFO would
//! block the reader, `/dev/zero` never end), of a bounded size.

use std::io::{Read, Write};
use std::path::Path;

/// Why [`read_file`] read nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// There is no file there.
    Missing,
    /// Something is there but it cannot be read as a file of at most the size asked; the
    /// message names the file.
    Unreadable(String),
}

/// Reads `path` whole if it is a regular file of at most `max_bytes`.
pub fn read_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Unreadable(format!("{shown}: cannot read: {e}"))),
    };
    if !meta.is_file() {
        return Err(ReadError::Unreadable(format!("{shown}: cannot read: not a regular file")));
    }
    let too_big = |n: u64| ReadError::Unreadable(format!("{shown}: {n} bytes is more than the {max_bytes} read"));
    if meta.len() > max_bytes {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max_bytes + 1).read_to_end(&mut bytes))
        .map_err(|e| ReadError::Unreadable(format!("{shown}: cannot read: {e}")))?;
    // It may have grown since it was measured.
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Writes `bytes` to `path` atomically. The error names the file. A path that is not a regular
/// file (`/dev/null`, `/dev/full`, a FIFO) is written in place: renaming over it would replace
/// the device, and its own errors (a full device) must be seen.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let shown = path.display();
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
    {
        if meta.is_dir() {
            return Err(format!("{shown}: cannot write: it is a folder"));
        }
        let written = std::fs::OpenOptions::new().write(true).open(path).and_then(|mut f| {
            f.write_all(bytes)?;
            f.flush()
        });
        return written.map_err(|e| format!("{shown}: cannot write: {e}"));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| format!("{shown}: not a file name"))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{shown}: cannot write: {e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_is_left() {
        let dir = std::env::temp_dir().join(format!("crsim-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new and longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new and longer");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let e = write_atomic(&dir.join("no/such/dir/m.json"), b"x").unwrap_err();
        assert!(e.contains("no/such/dir/m.json: cannot write"), "{e}");
        let e = write_atomic(&dir, b"x").unwrap_err();
        assert!(e.contains("it is a folder"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_a_regular_file_of_a_bounded_size_is_read() {
        let dir = std::env::temp_dir().join(format!("crsim-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        std::fs::write(&path, b"{}").unwrap();
        assert_eq!(read_file(&path, 2), Ok(b"{}".to_vec()));
        assert_eq!(
            read_file(&path, 1),
            Err(ReadError::Unreadable(format!("{}: 2 bytes is more than the 1 read", path.display())))
        );
        assert_eq!(read_file(&dir.join("none.json"), 10), Err(ReadError::Missing));
        // A FIFO would block a reader until a writer came; /dev/zero would never end.
        let fifo = dir.join("fifo.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        for p in [fifo.as_path(), Path::new("/dev/zero"), &dir] {
            let e = read_file(p, 1 << 20).unwrap_err();
            assert_eq!(e, ReadError::Unreadable(format!("{}: cannot read: not a regular file", p.display())));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_device_is_written_in_place_and_its_errors_are_seen() {
        let e = write_atomic(Path::new("/dev/full"), b"metrics").unwrap_err();
        assert!(e.starts_with("/dev/full: cannot write:"), "{e}");
        write_atomic(Path::new("/dev/null"), b"metrics").unwrap();
        // Neither was replaced by a regular file (as a rename over them would have done).
        for dev in ["/dev/full", "/dev/null"] {
            let t = std::fs::metadata(dev).unwrap().file_type();
            assert!(std::os::unix::fs::FileTypeExt::is_char_device(&t), "{dev}");
        }
        let stray = std::fs::read_dir("/dev").unwrap().filter_map(Result::ok);
        assert!(!stray.into_iter().any(|e| e.file_name().to_string_lossy().ends_with(".tmp")));
    }
}
