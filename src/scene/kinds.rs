//! Robot kinds: a robot that names a kind takes from it every field of
//! [`KindSpec::FIELDS`](super::schema::KindSpec::FIELDS) it
//! does not write itself. Which fields a robot writes is read from the scene's text (a field
//! written with its default value, or `range_sensor: None`, is the robot's own choice), so the
//! kinds are applied where the text is parsed.

use serde::Deserialize;

use super::error::SceneError;
use super::schema::SceneFile;

/// Whether a field is written in the file, whatever its value (`None` included).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Written(bool);

impl<'de> Deserialize<'de> for Written {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Written(true))
    }
}

/// A robot's entry as far as kinds care: which of the kind's fields it writes. Named as
/// [`super::schema::RobotSpec`] is, since RON checks a struct's name where the file gives one.
#[derive(Debug, Default, Deserialize)]
#[serde(rename = "RobotSpec")]
struct WrittenRobot {
    #[serde(default)]
    radius: Written,
    #[serde(default)]
    max_speed: Written,
    #[serde(default)]
    max_turn: Written,
    #[serde(default)]
    drive: Written,
    #[serde(default)]
    sensors: Written,
    #[serde(default)]
    battery: Written,
    #[serde(default)]
    camera: Written,
    #[serde(default)]
    range_sensor: Written,
    #[serde(default)]
    grip_reach: Written,
    #[serde(default)]
    controller: Written,
    #[serde(default)]
    comms: Written,
}

impl WrittenRobot {
    /// Whether the robot writes `field` (one of [`super::schema::KindSpec::FIELDS`]).
    fn writes(&self, field: &str) -> bool {
        let w = match field {
            "radius" => self.radius,
            "max_speed" => self.max_speed,
            "max_turn" => self.max_turn,
            "drive" => self.drive,
            "sensors" => self.sensors,
            "battery" => self.battery,
            "camera" => self.camera,
            "range_sensor" => self.range_sensor,
            "grip_reach" => self.grip_reach,
            "controller" => self.controller,
            "comms" => self.comms,
            _ => Written(false),
        };
        w.0
    }
}

/// The scene as far as kinds care.
#[derive(Debug, Deserialize)]
#[serde(rename = "SceneFile")]
struct WrittenScene {
    #[serde(default)]
    robots: Vec<WrittenRobot>,
}

/// Gives every robot of `scene` that names a known kind the kind's fields it does not write in
/// `text` (the text `scene` was parsed from with `options`) and that `also_set(index, robot,
/// field)` does not say were set another way (the command line's overrides). A robot naming a
/// kind the scene does not have is left as it is (validation reports it).
pub fn apply_kinds(
    scene: &mut SceneFile,
    text: &str,
    options: &ron::Options,
    also_set: impl Fn(usize, &str, &str) -> bool,
) -> Result<(), SceneError> {
    if scene.robots.iter().all(|r| r.kind.is_none()) {
        return Ok(());
    }
    let problem = |message: String| SceneError { item: "robots".into(), message };
    let written: WrittenScene = options
        .from_str(text)
        .map_err(|e| problem(format!("cannot tell which fields each robot sets itself: {}", e.code)))?;
    if written.robots.len() != scene.robots.len() {
        return Err(problem(format!(
            "the text has {} robots where the scene has {}",
            written.robots.len(),
            scene.robots.len()
        )));
    }
    for (i, (robot, written)) in scene.robots.iter_mut().zip(&written.robots).enumerate() {
        if let Some(kind) = robot.kind.as_ref().and_then(|k| scene.kinds.get(k)) {
            let name = robot.name.clone();
            kind.apply(robot, |field| written.writes(field) || also_set(i, &name, field));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::load::parse_scene;
    use super::super::schema::{DriveSpec, KindSpec, RobotSpec};
    use super::*;

    const SCENE: &str = r#"(
        name: "kinds",
        arena: (width: 4.0, height: 3.0),
        kinds: {
            "scout": (radius: 0.06, max_speed: 0.5, range_sensor: (rays: 8), sensors: ["pose", "range"]),
            "carrier": (radius: 0.15, drive: Holonomic(max_lateral: 0.2), controller: Drive(linear: 0.1, angular: 0.0)),
        },
        robots: [
            (name: "s1", kind: "scout", pose: (1.0, 1.0, 0.0)),
            (name: "s2", kind: "scout", pose: (2.0, 1.0, 0.0), radius: 0.1, range_sensor: None),
            RobotSpec(name: "c1", kind: "carrier", pose: (1.0, 2.0, 0.0), max_speed: 0.3),
            (name: "plain", pose: (3.0, 2.0, 0.0)),
        ],
    )"#;

    #[test]
    fn a_robot_takes_from_its_kind_every_field_it_does_not_write() {
        let scene = parse_scene(SCENE, "kinds.ron").unwrap();
        let [s1, s2, c1, plain] = &scene.robots[..] else { panic!() };
        assert_eq!((s1.radius, s1.max_speed, s1.range_sensor.as_ref().map(|r| r.rays)), (0.06, 0.5, Some(8)));
        assert_eq!(s1.sensors.as_deref(), Some(&["pose".to_string(), "range".to_string()][..]));
        // Its own radius, and no range sensor though the kind has one: written, so its own.
        assert_eq!((s2.radius, s2.max_speed, s2.range_sensor.is_none()), (0.1, 0.5, true));
        assert_eq!((c1.radius, c1.max_speed, c1.drive), (0.15, 0.3, DriveSpec::Holonomic { max_lateral: 0.2 }));
        assert!(matches!(c1.controller, crate::scene::schema::ControllerSpec::Drive { linear: 0.1, .. }));
        // A robot of no kind is today's robot.
        let mut expected = RobotSpec::new("plain", 3.0, 2.0, 0.0);
        expected.pose = plain.pose;
        assert_eq!(plain, &expected);
    }

    #[test]
    fn the_fields_a_kind_gives_are_the_fields_robots_and_kinds_have() {
        let robot = schemars::schema_for!(RobotSpec).to_value();
        let kind = schemars::schema_for!(KindSpec).to_value();
        let names = |v: &serde_json::Value| {
            v["properties"].as_object().unwrap().keys().cloned().collect::<std::collections::BTreeSet<_>>()
        };
        let given: std::collections::BTreeSet<_> = KindSpec::FIELDS.iter().map(|f| f.to_string()).collect();
        assert_eq!(names(&kind), given, "KindSpec::FIELDS lists every field of a kind");
        assert!(given.is_subset(&names(&robot)), "a robot has every field a kind gives");
        // Each is read from the text: a robot writing only that field keeps its own value.
        for field in KindSpec::FIELDS {
            let written: WrittenRobot = ron::from_str(&format!("({field}: 1)")).unwrap();
            assert!(written.writes(field), "{field}");
            assert!(!written.writes(if field == "radius" { "comms" } else { "radius" }));
        }
    }

    #[test]
    fn the_command_lines_overrides_change_a_kind_for_its_robots_or_one_robots_own_fields() {
        use super::super::load::parse_scene_with;
        use super::super::overrides::SceneOverrides;
        let overrides = |sets: &[&str], programs: &[&str]| SceneOverrides {
            programs: programs.iter().map(|p| p.to_string()).collect(),
            sets: sets.iter().map(|s| s.parse().unwrap()).collect(),
        };
        let o = overrides(&["kinds.scout.max_speed=0.2", "robots[s1].radius=0.05"], &["c1"]);
        let scene = parse_scene_with(SCENE, "kinds.ron", &o).unwrap();
        let [s1, s2, c1, _] = &scene.robots[..] else { panic!() };
        assert_eq!((s1.max_speed, s2.max_speed), (0.2, 0.2), "the kind changed for both scouts");
        assert_eq!((s1.radius, s2.radius), (0.05, 0.1), "s1's own radius; s2 wrote its own");
        assert_eq!(c1.controller, crate::scene::schema::ControllerSpec::Program {}, "--programs beats the kind");
        // A robot given a kind on the command line takes it.
        let o = overrides(&["robots[plain].kind=scout"], &[]);
        let scene = parse_scene_with(SCENE, "kinds.ron", &o).unwrap();
        assert_eq!(scene.robots[3].radius, 0.06);
    }

    #[test]
    fn an_unknown_kind_is_named_with_the_kinds_the_scene_has() {
        let text = SCENE.replace(r#"kind: "carrier""#, r#"kind: "carier""#);
        let err = parse_scene(&text, "kinds.ron").unwrap_err().to_string();
        assert!(
            err.contains(r#"robot "c1": kind "carier" is not one of the scene's kinds ("carrier", "scout")"#),
            "{err}"
        );
    }

    #[test]
    fn a_kinds_own_values_are_checked_as_a_robots_are() {
        let text = SCENE.replace("radius: 0.15", "radius: -1.0").replace("max_lateral: 0.2", "max_lateral: -3.0");
        let err = parse_scene(&text, "kinds.ron").unwrap_err().to_string();
        assert!(err.contains(r#"kind "carrier": radius"#), "{err}");
        assert!(err.contains(r#"kind "carrier": drive's max_lateral must be positive, got -3"#), "{err}");
    }
}
