//! `crsim check FILE...`: each scene or network structure file read and checked as a run would
//! read it; `FILE: ok` or its errors, and a failing exit code when any has errors.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::robot::registry::SensorRegistry;
use crate::say;
use crate::scene::network::{is_structure_text, parse_network};

/// Checks `files`, printing `ok` or the errors of each; the exit code (1 when any has errors).
pub fn check_files(files: &[PathBuf], sensors: &SensorRegistry) -> ExitCode {
    let mut bad = 0;
    for f in files {
        match check_file(f, sensors) {
            Ok(()) => say!("{}: ok", f.display()),
            Err(e) => {
                bad += 1;
                say!("{e}");
            }
        }
    }
    if bad == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("{bad} of {} files have errors", files.len());
        ExitCode::FAILURE
    }
}

/// One file: a network structure (its first item is `NetworkStructure(`) or a scene, whose
/// robots' sensors are looked up in `sensors`.
pub fn check_file(f: &std::path::Path, sensors: &SensorRegistry) -> Result<(), String> {
    let text = crate::scene::load::read_text(f).map_err(|e| e.to_string())?;
    if is_structure_text(&text) {
        parse_network(&text, &f.display().to_string()).map(|_| ())
    } else {
        let (scene, _) = crate::scene::load_scene_file(f).map_err(|e| e.to_string())?;
        let problems = sensors.check(&scene);
        if problems.is_empty() {
            return Ok(());
        }
        Err(problems.iter().map(|e| format!("{}: {e}", f.display())).collect::<Vec<_>>().join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_file_std(f: &std::path::Path) -> Result<(), String> {
        check_file(f, crate::run::standard_sensors())
    }

    #[test]
    fn scenes_and_structures_are_told_apart_and_checked() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(check_file_std(&root.join("scenes/pens.ron")), Ok(()));
        assert_eq!(check_file_std(&root.join("assets/network.ron")), Ok(()));
        let e = check_file_std(&root.join("scenes")).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        assert_eq!(check_files(&[root.join("scenes/pens.ron")], crate::run::standard_sensors()), ExitCode::SUCCESS);
        assert_eq!(
            check_files(&[root.join("scenes/pens.ron"), root.join("nothing.ron")], crate::run::standard_sensors()),
            ExitCode::FAILURE
        );
    }
}
