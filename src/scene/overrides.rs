//! Changes to a scene from outside its file — the command line's — applied every time the file
//! is read, so a reload in the app keeps them. Applied after parsing and before validation: an
//! override that makes the scene inconsistent is reported like an error in the file.

use bevy::prelude::*;

use super::error::SceneError;
use super::schema::{ControllerSpec, SceneFile};

/// The overrides of this process.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct SceneOverrides {
    /// Robots driven by programs outside crsim, whatever their controller in the file: names, or
    /// `all` (`--programs`).
    pub programs: Vec<String>,
}

impl SceneOverrides {
    /// Applies the overrides to `scene`; the errors name the override and what it asked for.
    pub fn apply(&self, scene: &mut SceneFile) -> Vec<SceneError> {
        let mut errors = Vec::new();
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

    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::load::default_scene;

    #[test]
    fn programs_turn_named_robots_or_all_into_program_robots() {
        let mut scene = default_scene();
        let o = SceneOverrides { programs: vec!["beta".into()] };
        assert!(o.apply(&mut scene).is_empty());
        let kinds: Vec<bool> =
            scene.robots.iter().map(|r| matches!(r.controller, ControllerSpec::Program {})).collect();
        assert_eq!(kinds, vec![false, true, false]);
        let o = SceneOverrides { programs: vec!["all".into()] };
        assert!(o.apply(&mut scene).is_empty());
        assert!(scene.robots.iter().all(|r| matches!(r.controller, ControllerSpec::Program {})));
    }

    #[test]
    fn an_unknown_robot_is_named_with_the_robots_there_are() {
        let mut scene = default_scene();
        let o = SceneOverrides { programs: vec!["delta".into()] };
        let e = o.apply(&mut scene);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].to_string(), "--programs: the scene has no robot \"delta\" (its robots: alpha, beta, gamma)");
    }
}
