//! Reading scene files: RON syntax errors with file, line and column, then the semantic checks
//! of [`super::validate`]. Never panics on any input.

use std::io::Read;
use std::path::Path;

use ron::extensions::Extensions;

use super::error::SceneError;
pub use super::error::SceneLoadError;
use super::overrides::SceneOverrides;
use super::schema::SceneFile;
use super::validate::validate;

/// The scene embedded in the binary, opened when the app starts with no file.
pub const DEFAULT_SCENE: &str = include_str!("../../scenes/pens.ron");
/// The name shown for the embedded scene.
pub const DEFAULT_SCENE_NAME: &str = "<built-in pens.ron>";

/// The largest scene or network structure file crsim reads, bytes.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a scene or network structure file as text: only a regular file (a FIFO or a device
/// would block or never end), at most [`MAX_FILE_BYTES`], and UTF-8 (a bad byte is an error at
/// its line and column).
pub fn read_text(path: &Path) -> Result<String, SceneLoadError> {
    let shown = path.display().to_string();
    let io = |message: String| SceneLoadError::Io { path: shown.clone(), message };
    let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    if !meta.is_file() {
        return Err(io("not a regular file".into()));
    }
    let too_big = |n: u64| io(format!("{n} bytes is more than the {MAX_FILE_BYTES} bytes crsim reads"));
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| io(e.to_string()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..at];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let col = at - before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1) + 1;
        SceneLoadError::Syntax {
            path: shown.clone(),
            line,
            col,
            message: format!("not UTF-8 text: byte 0x{:02x} at offset {at}", e.as_bytes()[at]),
        }
    })
}

/// RON options for scenes: `Some(x)` may be written as plain `x`.
fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(Extensions::IMPLICIT_SOME)
}

/// Parses and validates scene text; `path` is only used in messages.
pub fn parse_scene(text: &str, path: &str) -> Result<SceneFile, SceneLoadError> {
    parse_scene_with(text, path, &SceneOverrides::default())
}

/// Parses scene text, applies `overrides` and validates the result.
pub fn parse_scene_with(text: &str, path: &str, overrides: &SceneOverrides) -> Result<SceneFile, SceneLoadError> {
    let options = ron_options();
    let mut scene = parse_text(text, path, &options)?;
    let mut errors = overrides.apply(&mut scene);
    // After the overrides: a kind they changed reaches its robots, a robot field they set is the
    // robot's own.
    if errors.is_empty()
        && let Err(e) = super::kinds::apply_kinds(&mut scene, text, &options, |i, name, field| {
            overrides.sets_robot_field(i, name, field)
        })
    {
        errors.push(e);
    }
    errors.extend(validate(&scene));
    if errors.is_empty() { Ok(scene) } else { Err(SceneLoadError::Invalid { path: path.to_string(), errors }) }
}

/// Parses scene text without the semantic checks (the editor shows those on the items).
/// Robots of a kind have its fields (see [`super::kinds`]).
pub fn parse_unchecked(text: &str, path: &str) -> Result<SceneFile, SceneLoadError> {
    let options = ron_options();
    let mut scene = parse_text(text, path, &options)?;
    super::kinds::apply_kinds(&mut scene, text, &options, |_, _, _| false)
        .map_err(|e| SceneLoadError::Invalid { path: path.to_string(), errors: vec![e] })?;
    Ok(scene)
}

/// The scene as the text writes it: RON syntax errors with their line and column.
fn parse_text(text: &str, path: &str, options: &ron::Options) -> Result<SceneFile, SceneLoadError> {
    options.from_str(text).map_err(|e| SceneLoadError::Syntax {
        path: path.to_string(),
        line: e.span.start.line,
        col: e.span.start.col,
        message: e.code.to_string(),
    })
}

/// Reads, parses and validates a scene file, and the network structure it names. Returns the
/// scene and the text it came from.
pub fn load_scene_file(path: &Path) -> Result<(SceneFile, String), SceneLoadError> {
    load_scene_file_with(path, &SceneOverrides::default())
}

/// Reads a scene file as [`load_scene_file`] does, with `overrides` applied before validation.
pub fn load_scene_file_with(path: &Path, overrides: &SceneOverrides) -> Result<(SceneFile, String), SceneLoadError> {
    let shown = path.display().to_string();
    let text = read_text(path)?;
    let mut scene = parse_scene_with(&text, &shown, overrides)?;
    resolve_network(&mut scene, path.parent().unwrap_or(Path::new(".")), &shown)?;
    Ok((scene, text))
}

/// The file a scene's `network` field names, if any (relative to the scene's folder).
pub fn network_path(scene: &SceneFile, scene_dir: &Path) -> Option<std::path::PathBuf> {
    scene.network.as_ref().map(|n| scene_dir.join(n))
}

/// Reads and checks the network structure a scene names into `scene.network_structure`; its
/// errors are the scene's, under the item `network`.
pub fn resolve_network(scene: &mut SceneFile, scene_dir: &Path, shown: &str) -> Result<(), SceneLoadError> {
    let Some(path) = network_path(scene, scene_dir) else { return Ok(()) };
    let invalid = |message: String| SceneLoadError::Invalid {
        path: shown.to_string(),
        errors: vec![SceneError { item: "network".into(), message }],
    };
    let text = read_text(&path).map_err(|e| invalid(e.to_string()))?;
    let structure = super::network::parse_network(&text, &path.display().to_string())
        .map_err(|e| invalid(e.replace('\n', "; ")))?;
    scene.network_structure = Some(structure);
    Ok(())
}

/// The embedded default scene.
pub fn default_scene() -> SceneFile {
    parse_scene(DEFAULT_SCENE, DEFAULT_SCENE_NAME).expect("the embedded scene is checked by tests")
}

/// Serialises a scene back to pretty RON (used to save generated scenes).
pub fn to_ron(scene: &SceneFile) -> String {
    ron::ser::to_string_pretty(scene, ron::ser::PrettyConfig::default().struct_names(true))
        .unwrap_or_else(|e| format!("// could not serialise scene: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_scenes_parse_and_validate() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
        let mut count = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "ron") {
                if let Err(e) = load_scene_file(&path) {
                    panic!("{e}");
                }
                count += 1;
            }
        }
        assert!(count >= 3);
        assert!(!default_scene().robots.is_empty());
    }

    #[test]
    fn syntax_error_gives_line_and_column() {
        let text = "SceneFile(\n  name: \"x\",\n  arena: (width: 2.0 height: 1.0),\n)";
        match parse_scene(text, "bad.ron") {
            Err(SceneLoadError::Syntax { path, line, col, .. }) => {
                assert_eq!(path, "bad.ron");
                assert_eq!(line, 3);
                assert!(col > 10, "col {col}");
            }
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn unknown_field_is_rejected_with_its_name() {
        let text = "(\n name: \"x\",\n arena: (width: 2.0, height: 1.0, colour: 3),\n)";
        let e = parse_scene(text, "f.ron").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("f.ron:3:"), "{msg}");
        assert!(msg.contains("colour"), "{msg}");
    }

    #[test]
    fn unknown_controller_is_rejected() {
        let text = "(name: \"x\", arena: (width: 2.0, height: 1.0), robots: [(name: \"r\", pose: (1.0, 0.5, 0.0), controller: Dance)])";
        let msg = parse_scene(text, "f.ron").unwrap_err().to_string();
        assert!(msg.contains("Dance"), "{msg}");
    }

    #[test]
    fn the_physics_model_is_chosen_by_name() {
        let text = |model: &str| format!("(name: \"x\", arena: (width: 2.0, height: 1.0),\n physics: {model})");
        assert_eq!(
            parse_scene(&text("Kinematic"), "f.ron").unwrap().physics,
            super::super::schema::PhysicsMode::Kinematic
        );
        assert_eq!(parse_scene(&text("Rigid"), "f.ron").unwrap().physics, super::super::schema::PhysicsMode::Rigid);
        let default = parse_scene("(name: \"x\", arena: (width: 2.0, height: 1.0))", "f.ron").unwrap();
        assert_eq!(default.physics, super::super::schema::PhysicsMode::Rigid);
        let msg = parse_scene(&text("Floppy"), "f.ron").unwrap_err().to_string();
        assert!(msg.starts_with("f.ron:2:") && msg.contains("Floppy"), "{msg}");
    }

    #[test]
    fn missing_field_is_named() {
        let msg = parse_scene("(name: \"x\")", "f.ron").unwrap_err().to_string();
        assert!(msg.contains("arena"), "{msg}");
    }

    #[test]
    fn semantic_errors_are_listed_per_item() {
        let text = "(name: \"x\", arena: (width: 2.0, height: 1.0), comms: (probability: 2.0),
            robots: [(name: \"r\", pose: (5.0, 0.5, 0.0), den: \"nest\")])";
        let msg = parse_scene(text, "f.ron").unwrap_err().to_string();
        assert!(msg.contains("f.ron: comms: probability 2 is outside 0..1"), "{msg}");
        assert!(msg.contains("f.ron: robot \"r\": body at (5.00, 0.50) is outside the arena"), "{msg}");
        assert!(msg.contains("f.ron: robot \"r\": den \"nest\" does not exist"), "{msg}");
    }

    #[test]
    fn implicit_some_and_explicit_some_both_work() {
        let a = "(name: \"x\", arena: (width: 2.0, height: 1.0), comms: (range: 3.0))";
        let b = "(name: \"x\", arena: (width: 2.0, height: 1.0), comms: (range: Some(3.0)))";
        assert_eq!(parse_scene(a, "a").unwrap().comms.range, Some(3.0));
        assert_eq!(parse_scene(b, "b").unwrap().comms.range, Some(3.0));
    }

    #[test]
    fn missing_file_is_an_io_error() {
        let e = load_scene_file(Path::new("/no/such/scene.ron")).unwrap_err();
        assert!(e.to_string().starts_with("/no/such/scene.ron: cannot read:"), "{e}");
    }

    #[test]
    fn only_regular_files_of_bounded_size_are_read() {
        let dir = std::env::temp_dir().join(format!("crsim-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.ron");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        if made {
            // Opening a FIFO with no writer would block forever.
            assert_eq!(
                read_text(&fifo).unwrap_err().to_string(),
                format!("{}: cannot read: not a regular file", fifo.display())
            );
        }
        let e = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "/dev/zero: cannot read: not a regular file");
        let big = dir.join("big.ron");
        std::fs::File::create(&big).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap();
        assert!(read_text(&big).unwrap_err().to_string().contains("more than the 16777216 bytes"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_that_is_not_utf8_gives_the_position_of_the_bad_byte() {
        let dir = std::env::temp_dir().join(format!("crsim-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("latin1.ron");
        std::fs::write(&path, b"SceneFile(\n  name: \"caf\xe9\",\n)").unwrap();
        match load_scene_file(&path) {
            Err(SceneLoadError::Syntax { line, col, message, .. }) => {
                assert_eq!((line, col), (2, 13));
                assert_eq!(message, "not UTF-8 text: byte 0xe9 at offset 23");
            }
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn round_trip_through_ron() {
        let s = default_scene();
        let text = to_ron(&s);
        assert_eq!(parse_scene(&text, "rt").unwrap(), s);
    }
}

#[cfg(test)]
mod reference {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::super::schema::*;

    /// Every field name in `v`, at any depth (enum variants' fields included).
    fn fields(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                for (k, inner) in map {
                    out.insert(k.clone());
                    fields(inner, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| fields(i, out)),
            _ => {}
        }
    }

    /// A scene with one of everything: every list item, every controller with fields, every
    /// optional value set.
    fn everything() -> SceneFile {
        let mut s = SceneFile::empty("all", 4.0, 3.0);
        s.walls.push(WallSpec { name: "w".into(), from: (1.0, 1.0), to: (2.0, 1.0), thickness: 0.1 });
        s.boxes.push(BoxSpec { name: "b".into(), center: (3.0, 2.0), size: (0.4, 0.4), angle: 0.0 });
        s.pens.push(PenSpec { name: "p".into(), pos: (1.0, 2.0), radius: 0.03 });
        s.dens.push(DenSpec { name: "d".into(), pos: (0.2, 0.2), radius: 0.2 });
        s.stations.push(StationSpec { name: "s".into(), pos: (3.5, 0.5), radius: 0.2, rate: 1.0 });
        s.sonars.push(SonarSpec {
            name: "so".into(),
            pos: (1.0, 0.0),
            axis: 90.0,
            width: 0.1,
            range: Some(2.0),
            through_walls: false,
        });
        let controllers = [
            ControllerSpec::Drive { linear: 0.1, angular: 0.0, lateral: 0.0 },
            ControllerSpec::Wander { speed: 0.5 },
            ControllerSpec::External { port: 0 },
            ControllerSpec::Explorer { strategy: StrategySpec::Rings, sonar: false },
            ControllerSpec::Remote { http: 0, ws: 0, protocol: Dialect::Vr2023 },
            ControllerSpec::Network { forget_after: 10, low_power: 0.2, full_power: 0.9 },
        ];
        for (i, c) in controllers.into_iter().enumerate() {
            let mut r = RobotSpec::new(format!("r{i}"), 0.5 + i as f32 * 0.4, 1.5, 0.0);
            r.controller = c;
            r.den = Some("d".into());
            r.outside = Some("127.0.0.1:7001".into());
            r.battery.initial = Some(1.0);
            r.comms.range = Some(1.0);
            s.robots.push(r);
        }
        s.comms.range = Some(3.0);
        s.comms.pairs.push(PairSpec {
            from: "r0".into(),
            to: "r1".into(),
            link: Some(true),
            range: Some(1.0),
            delay: Some(1),
            probability: Some(0.5),
        });
        s.botlink.update_all_port = Some(0);
        s.botlink.multicast = Some("239.255.42.42:10050".into());
        s
    }

    #[test]
    fn every_field_a_scene_can_have_is_named_in_the_manuals_scenes_chapter() {
        let mut names = BTreeSet::new();
        fields(&serde_json::to_value(everything()).unwrap(), &mut names);
        let chapter = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scenes.md")).unwrap();
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| !["`{n}`", "{n}:", "{n}(", "**{n}**"].iter().any(|f| chapter.contains(&f.replace("{n}", n))))
            .collect();
        assert!(names.len() > 60, "{names:?}");
        assert!(missing.is_empty(), "fields of a scene that docs/scenes.md does not name: {missing:?}");
    }
}
