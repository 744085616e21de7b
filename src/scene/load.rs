//! Reading scene files: RON syntax errors with file, line and column, then the semantic checks
//! of [`super::validate`]. Never panics on any input.

use std::path::Path;

use ron::extensions::Extensions;

use super::error::SceneError;
pub use super::error::SceneLoadError;
use super::schema::SceneFile;
use super::validate::validate;

/// The scene embedded in the binary, opened when the app starts with no file.
pub const DEFAULT_SCENE: &str = include_str!("../../scenes/pens.ron");
/// The name shown for the embedded scene.
pub const DEFAULT_SCENE_NAME: &str = "<built-in pens.ron>";

/// RON options for scenes: `Some(x)` may be written as plain `x`.
fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(Extensions::IMPLICIT_SOME)
}

/// Parses and validates scene text; `path` is only used in messages.
pub fn parse_scene(text: &str, path: &str) -> Result<SceneFile, SceneLoadError> {
    let scene: SceneFile = ron_options().from_str(text).map_err(|e| SceneLoadError::Syntax {
        path: path.to_string(),
        line: e.span.start.line,
        col: e.span.start.col,
        message: e.code.to_string(),
    })?;
    let errors = validate(&scene);
    if errors.is_empty() { Ok(scene) } else { Err(SceneLoadError::Invalid { path: path.to_string(), errors }) }
}

/// Reads, parses and validates a scene file, and the network structure it names. Returns the
/// scene and the text it came from.
pub fn load_scene_file(path: &Path) -> Result<(SceneFile, String), SceneLoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| SceneLoadError::Io { path: shown.clone(), message: e.to_string() })?;
    let mut scene = parse_scene(&text, &shown)?;
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
    let text = std::fs::read_to_string(&path).map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))?;
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
    fn round_trip_through_ron() {
        let s = default_scene();
        let text = to_ron(&s);
        assert_eq!(parse_scene(&text, "rt").unwrap(), s);
    }
}
