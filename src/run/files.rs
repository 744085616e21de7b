//! Writing result files so that a reader never sees half of one: the text goes to a temporary
//! file in the same folder, is flushed to disk, and is renamed over the target in one step. A run
//! killed while writing leaves the old file (or none) and a stray temporary, never a torn file.

use std::io::Write;
use std::path::Path;

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
