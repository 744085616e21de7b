//! Writing result files so that a reader never sees half of one: the text goes to a temporary
//! file in the same folder, is flushed to disk, and is renamed over the target in one step. A run
//! killed while writing leaves the old file (or none) and a stray temporary, never a torn file.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically. The error names the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let shown = path.display();
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
        let _ = std::fs::remove_dir_all(&dir);
    }
}
