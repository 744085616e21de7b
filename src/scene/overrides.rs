//! Changes to a scene from outside its file — the command line's — applied every time the file
//! is read, so a reload in the app keeps them. Applied after parsing and before validation: an
//! override that makes the scene inconsistent is reported like an error in the file.

use bevy::prelude::*;
use serde_json::Value;

use super::error::SceneError;
use super::path::{ValuePath, parse_value};
use super::schema::{ControllerSpec, SceneFile};

/// The overrides of this process.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct SceneOverrides {
    /// Robots driven by programs outside crsim, whatever their controller in the file: names, or
    /// `all` (`--programs`).
    pub programs: Vec<String>,
    /// Values set by path, in order (`--set PATH=VALUE`).
    pub sets: Vec<SetValue>,
}

/// One `--set PATH=VALUE`: a path into the scene (see [`ValuePath`]) and the value it gets.
#[derive(Debug, Clone, PartialEq)]
pub struct SetValue {
    pub path: ValuePath,
    pub value: Value,
}

impl std::str::FromStr for SetValue {
    type Err = String;

    /// Reads `PATH=VALUE`; the value is RON (`0.5`, `true`, `(1.0, 2.0)`) or plain text.
    fn from_str(text: &str) -> Result<SetValue, String> {
        let Some((path, value)) = text.split_once('=') else {
            return Err(format!("`{text}`: expected PATH=VALUE, for example comms.probability=0.5"));
        };
        let path = ValuePath::parse(path.trim()).map_err(|e| format!("`{text}`: {e}"))?;
        Ok(SetValue { path, value: parse_value(value) })
    }
}

impl std::fmt::Display for SetValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.path, self.value)
    }
}

impl SceneOverrides {
    /// Applies the overrides to `scene`; the errors name the override and what it asked for.
    pub fn apply(&self, scene: &mut SceneFile) -> Vec<SceneError> {
        let mut errors = self.apply_sets(scene);
        let all = self.programs.iter().any(|n| n == "all");
        for name in self.programs.iter().filter(|n| *n != "all") {
            if !scene.robots.iter().any(|r| &r.name == name) {
                let known: Vec<&str> = scene.robots.iter().map(|r| r.name.as_str()).collect();
                errors.push(SceneError {
                    item: "--programs".into(),
                    message: format!(
                        "the scene has no robot \"{name}\" (its robots: {})",
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    ),
                });
            }
        }
        for robot in &mut scene.robots {
            if all || self.programs.contains(&robot.name) {
                robot.controller = ControllerSpec::Program {};
            }
        }
        errors
    }

    /// Whether the overrides set robot number `index`'s (called `name`) `field` themselves: a
    /// `--set robots[...].FIELD...` that picks it, or `--programs` naming it (its controller).
    pub fn sets_robot_field(&self, index: usize, name: &str, field: &str) -> bool {
        use super::path::Segment;
        let programs = field == "controller" && self.programs.iter().any(|p| p == "all" || p == name);
        programs
            || self.sets.iter().any(|s| match &s.path.segments[..] {
                [Segment::Field(list), pick, Segment::Field(f), ..] if list == "robots" && f == field => match pick {
                    Segment::Index(i) => *i == index,
                    Segment::Name(n) => n == name,
                    Segment::All => true,
                    Segment::Field(_) => false,
                },
                _ => false,
            })
    }

    /// The `--set` values, through the scene's serde form, so a path names fields as the file
    /// does and a value is checked against the type of what it replaces.
    fn apply_sets(&self, scene: &mut SceneFile) -> Vec<SceneError> {
        if self.sets.is_empty() {
            return Vec::new();
        }
        let item = |s: &SetValue| format!("--set {}", s.path);
        let mut json = match serde_json::to_value(&*scene) {
            Ok(j) => j,
            Err(e) => return vec![SceneError { item: "--set".into(), message: format!("cannot read the scene: {e}") }],
        };
        let mut errors = Vec::new();
        for s in &self.sets {
            if let Err(e) = s.path.set(&mut json, &s.value) {
                let message = e.strip_prefix(&format!("{}: ", s.path)).unwrap_or(&e).to_string();
                errors.push(SceneError { item: item(s), message });
            }
        }
        if !errors.is_empty() {
            return errors;
        }
        match serde_json::from_value::<SceneFile>(json) {
            Ok(mut changed) => {
                changed.network_structure = scene.network_structure.take();
                *scene = changed;
                Vec::new()
            }
            Err(e) => {
                let shown: Vec<String> = self.sets.iter().map(ToString::to_string).collect();
                vec![SceneError { item: "--set".into(), message: format!("{} (setting {})", e, shown.join(", ")) }]
            }
        }
    }

    /// The overrides as the run's metrics record them: each set path with its value, and the
    /// program robots.
    pub fn to_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        for s in &self.sets {
            map.insert(s.path.text.clone(), s.value.clone());
        }
        if !self.programs.is_empty() {
            map.insert("programs".into(), Value::from(self.programs.clone()));
        }
        Value::Object(map)
    }

    pub fn is_empty(&self) -> bool {
        self.programs.is_empty() && self.sets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::load::default_scene;

    #[test]
    fn programs_turn_named_robots_or_all_into_program_robots() {
        let mut scene = default_scene();
        let o = SceneOverrides { programs: vec!["beta".into()], ..default() };
        assert!(o.apply(&mut scene).is_empty());
        let kinds: Vec<bool> =
            scene.robots.iter().map(|r| matches!(r.controller, ControllerSpec::Program {})).collect();
        assert_eq!(kinds, vec![false, true, false]);
        let o = SceneOverrides { programs: vec!["all".into()], ..default() };
        assert!(o.apply(&mut scene).is_empty());
        assert!(scene.robots.iter().all(|r| matches!(r.controller, ControllerSpec::Program {})));
    }

    #[test]
    fn an_unknown_robot_is_named_with_the_robots_there_are() {
        let mut scene = default_scene();
        let o = SceneOverrides { programs: vec!["delta".into()], ..default() };
        let e = o.apply(&mut scene);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].to_string(), "--programs: the scene has no robot \"delta\" (its robots: alpha, beta, gamma)");
    }

    fn sets(list: &[&str]) -> SceneOverrides {
        SceneOverrides { sets: list.iter().map(|s| s.parse().unwrap()).collect(), ..default() }
    }

    #[test]
    fn set_values_change_the_scene_by_path() {
        let mut scene = default_scene();
        let o = sets(&["comms.probability=0.5", "robots[beta].pose=(1.5, 1.0, 45.0)", "arena.width=12", "seed=9"]);
        assert_eq!(o.apply(&mut scene), vec![]);
        assert_eq!(scene.comms.probability, 0.5);
        assert_eq!(scene.robots[1].pose, (1.5, 1.0, 45.0));
        assert_eq!(scene.arena.width, 12.0);
        assert_eq!(scene.seed, 9);
        assert_eq!(
            o.to_json(),
            serde_json::json!({"comms.probability": 0.5, "robots[beta].pose": [1.5, 1.0, 45.0], "arena.width": 12, "seed": 9})
        );
    }

    #[test]
    fn bad_paths_and_values_are_errors_naming_the_override() {
        let mut scene = default_scene();
        let e = sets(&["comms.probabilty=0.5", "seed=abc"]).apply(&mut scene);
        let shown: Vec<String> = e.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert!(
            shown[0].starts_with("--set comms.probabilty: `comms` has no field `probabilty` (its fields:"),
            "{shown:?}"
        );
        assert_eq!(shown[1], "--set seed: `seed` takes a number, not \"abc\"");
        assert_eq!(
            "comms.probability".parse::<SetValue>().unwrap_err(),
            "`comms.probability`: expected PATH=VALUE, for example comms.probability=0.5"
        );
        // A value serde refuses (a variant that does not exist) is named too.
        let e = sets(&["robots[alpha].controller.Wander.speed=fast"]).apply(&mut scene);
        assert_eq!(e.len(), 1, "{e:?}");
    }

    #[test]
    fn an_override_that_breaks_the_scene_is_reported_by_validation() {
        let text = crate::scene::load::DEFAULT_SCENE;
        let o = sets(&["comms.probability=1.5"]);
        let e = crate::scene::load::parse_scene_with(text, "s.ron", &o).unwrap_err().to_string();
        assert!(e.contains("probability"), "{e}");
    }
}
