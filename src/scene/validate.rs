//! Semantic checks of a parsed scene. Each error names the offending item, so a user editing a
//! scene by hand knows exactly what to fix. Pure logic: no Bevy, no physics.

use std::collections::{BTreeSet, HashMap};

use bevy::math::Vec2;

pub use super::error::SceneError;
use super::geometry::{Footprint, all_walls, boundary_walls, box_footprint, wall_footprint};
use super::schema::*;

fn v(p: Vec2f) -> Vec2 {
    Vec2::new(p.0, p.1)
}

/// Checks everything serde cannot: numbers in range, unique names, references, placement and
/// overlaps. Returns every problem found, in a stable order.
pub fn validate(scene: &SceneFile) -> Vec<SceneError> {
    let mut sizes = Vec::new();
    let mut rest = Vec::new();
    {
        let mut err = |item: String, message: String| sizes.push(SceneError { item, message });
        check_globals(scene, &mut err);
        check_items(scene, &mut err);
    }
    {
        let mut err = |item: String, message: String| rest.push(SceneError { item, message });
        check_names(scene, &mut err);
        check_comms(&scene.comms, &mut err);
        check_radio(scene, &mut err);
        check_botlink(scene, &mut err);
        // Placement and overlap checks need sane numbers; skip them while sizes are wrong.
        if sizes.is_empty() {
            check_placement(scene, &mut err);
            check_overlaps(scene, &mut err);
        }
    }
    sizes.extend(rest);
    sizes
}

type Report<'a> = dyn FnMut(String, String) + 'a;

fn positive(x: f32) -> bool {
    x.is_finite() && x > 0.0
}

fn finite2(p: Vec2f) -> bool {
    p.0.is_finite() && p.1.is_finite()
}

fn check_globals(scene: &SceneFile, err: &mut Report) {
    if scene.name.trim().is_empty() {
        err("scene".into(), "name must not be empty".into());
    }
    if !(scene.dt.is_finite() && scene.dt > 0.0 && scene.dt <= 1.0) {
        err("scene".into(), format!("dt must be in (0, 1] seconds, got {}", scene.dt));
    }
    if scene.substeps == 0 {
        err("scene".into(), "substeps must be at least 1".into());
    }
    let a = &scene.arena;
    if !positive(a.width) || !positive(a.height) {
        err("arena".into(), format!("size must be positive, got {} x {}", a.width, a.height));
    }
    if !positive(a.wall_thickness) {
        err("arena".into(), format!("wall_thickness must be positive, got {}", a.wall_thickness));
    }
}

fn check_names(scene: &SceneFile, err: &mut Report) {
    let mut seen: HashMap<&str, &'static str> = HashMap::new();
    let boundary = boundary_walls(&scene.arena);
    let mut all: Vec<(&'static str, &str)> = Vec::new();
    all.extend(boundary.iter().map(|w| ("wall", w.name.as_str())));
    all.extend(scene.walls.iter().map(|w| ("wall", w.name.as_str())));
    all.extend(scene.boxes.iter().map(|b| ("box", b.name.as_str())));
    all.extend(scene.pens.iter().map(|p| ("pen", p.name.as_str())));
    all.extend(scene.dens.iter().map(|d| ("den", d.name.as_str())));
    all.extend(scene.stations.iter().map(|s| ("station", s.name.as_str())));
    all.extend(scene.sonars.iter().map(|s| ("sonar", s.name.as_str())));
    all.extend(scene.robots.iter().map(|r| ("robot", r.name.as_str())));
    for (kind, name) in all {
        if name.trim().is_empty() {
            err(kind.to_string(), "name must not be empty".into());
            continue;
        }
        if let Some(first) = seen.get(name) {
            let also = if scene.arena.boundary && boundary.iter().any(|w| w.name == name) {
                " (the arena's boundary walls use this name)"
            } else {
                ""
            };
            err(format!("{kind} \"{name}\""), format!("duplicate name: a {first} is already called \"{name}\"{also}"));
        } else {
            seen.insert(name, kind);
        }
    }
}

fn check_items(scene: &SceneFile, err: &mut Report) {
    for w in &scene.walls {
        let item = format!("wall \"{}\"", w.name);
        if !finite2(w.from) || !finite2(w.to) {
            err(item.clone(), "coordinates must be finite numbers".into());
        } else if v(w.from).distance(v(w.to)) <= 0.0 {
            err(item.clone(), "length must be positive (from and to are the same point)".into());
        }
        if !positive(w.thickness) {
            err(item, format!("thickness must be positive, got {}", w.thickness));
        }
    }
    for b in &scene.boxes {
        let item = format!("box \"{}\"", b.name);
        if !finite2(b.center) || !b.angle.is_finite() {
            err(item.clone(), "coordinates must be finite numbers".into());
        }
        if !positive(b.size.0) || !positive(b.size.1) {
            err(item, format!("size must be positive, got {} x {}", b.size.0, b.size.1));
        }
    }
    for p in &scene.pens {
        let item = format!("pen \"{}\"", p.name);
        if !finite2(p.pos) {
            err(item.clone(), "position must be finite numbers".into());
        }
        if !positive(p.radius) {
            err(item, format!("radius must be positive, got {}", p.radius));
        }
    }
    for d in &scene.dens {
        let item = format!("den \"{}\"", d.name);
        if !finite2(d.pos) {
            err(item.clone(), "position must be finite numbers".into());
        }
        if !positive(d.radius) {
            err(item, format!("radius must be positive, got {}", d.radius));
        }
    }
    for s in &scene.stations {
        let item = format!("station \"{}\"", s.name);
        if !finite2(s.pos) {
            err(item.clone(), "position must be finite numbers".into());
        }
        if !positive(s.radius) {
            err(item.clone(), format!("radius must be positive, got {}", s.radius));
        }
        if !(s.rate.is_finite() && s.rate >= 0.0) {
            err(item, format!("rate must be zero or positive, got {}", s.rate));
        }
    }
    for s in &scene.sonars {
        let item = format!("sonar \"{}\"", s.name);
        if !finite2(s.pos) || !s.axis.is_finite() {
            err(item.clone(), "position and axis must be finite numbers".into());
        }
        if !positive(s.width) {
            err(item.clone(), format!("width must be positive, got {}", s.width));
        }
        if let Some(r) = s.range
            && !positive(r)
        {
            err(item, format!("range must be positive, got {r}"));
        }
    }
    for r in &scene.robots {
        check_robot(r, err);
    }
}

fn check_robot(r: &RobotSpec, err: &mut Report) {
    let item = format!("robot \"{}\"", r.name);
    let mut e = |m: String| err(item.clone(), m);
    if !(r.pose.0.is_finite() && r.pose.1.is_finite() && r.pose.2.is_finite()) {
        e("pose must be finite numbers".into());
    }
    if !positive(r.radius) {
        e(format!("radius must be positive, got {}", r.radius));
    }
    if !positive(r.max_speed) {
        e(format!("max_speed must be positive, got {}", r.max_speed));
    }
    if !positive(r.max_turn) {
        e(format!("max_turn must be positive, got {}", r.max_turn));
    }
    if !positive(r.grip_reach) {
        e(format!("grip_reach must be positive, got {}", r.grip_reach));
    }
    let b = &r.battery;
    if !positive(b.capacity) {
        e(format!("battery capacity must be positive, got {}", b.capacity));
    } else if let Some(init) = b.initial
        && !(init.is_finite() && (0.0..=b.capacity).contains(&init))
    {
        e(format!("battery initial charge {init} is outside 0..{}", b.capacity));
    }
    for (what, x) in [("idle_drain", b.idle_drain), ("move_drain", b.move_drain), ("turn_drain", b.turn_drain)] {
        if !(x.is_finite() && x >= 0.0) {
            e(format!("battery {what} must be zero or positive, got {x}"));
        }
    }
    let c = &r.camera;
    if !(positive(c.fov) && c.fov <= 360.0) {
        e(format!("camera fov must be in (0, 360] degrees, got {}", c.fov));
    }
    if !positive(c.range) {
        e(format!("camera range must be positive, got {}", c.range));
    }
    if c.period == 0 {
        e("camera period must be at least 1 step".into());
    }
    match r.controller {
        ControllerSpec::Idle | ControllerSpec::External { .. } | ControllerSpec::Explorer { .. } => {}
        ControllerSpec::Drive { linear, angular } => {
            if !(linear.is_finite() && angular.is_finite()) {
                e("Drive speeds must be finite numbers".into());
            }
        }
        ControllerSpec::Wander { speed } => {
            if !(positive(speed) && speed <= 1.0) {
                e(format!("Wander speed must be in (0, 1] (a fraction of max_speed), got {speed}"));
            }
        }
        ControllerSpec::Remote { http, ws, .. } => {
            if http == ws && http != 0 {
                e(format!("Remote http and ws ports must differ, both are {http}"));
            }
        }
        ControllerSpec::Network { forget_after, low_power, full_power } => {
            if forget_after == 0 {
                e("Network forget_after must be at least 1 step".into());
            }
            if !(low_power.is_finite() && full_power.is_finite() && 0.0 <= low_power && low_power < full_power)
                || full_power > 1.0
            {
                e(format!(
                    "Network needs 0 <= low_power < full_power <= 1 (battery levels), got {low_power} and {full_power}"
                ));
            }
        }
    }
}

fn check_comms(c: &CommsSpec, err: &mut Report) {
    if c.inbox_capacity == 0 {
        err("comms".into(), "inbox_capacity must be at least 1".into());
    }
    if !(c.probability.is_finite() && (0.0..=1.0).contains(&c.probability)) {
        err("comms".into(), format!("probability {} is outside 0..1", c.probability));
    }
    if let Some(r) = c.range
        && !(r.is_finite() && r >= 0.0)
    {
        err("comms".into(), format!("range must be zero or positive, got {r}"));
    }
}

fn probability_ok(p: f32) -> bool {
    p.is_finite() && (0.0..=1.0).contains(&p)
}

fn check_radio(scene: &SceneFile, err: &mut Report) {
    for r in &scene.robots {
        let item = format!("robot \"{}\"", r.name);
        if !probability_ok(r.comms.probability) {
            err(item.clone(), format!("comms probability {} is outside 0..1", r.comms.probability));
        }
        if let Some(range) = r.comms.range
            && !(range.is_finite() && range >= 0.0)
        {
            err(item, format!("comms range must be zero or positive, got {range}"));
        }
    }
    for p in &scene.comms.pairs {
        let item = format!("comms pair \"{}\" -> \"{}\"", p.from, p.to);
        for end in [&p.from, &p.to] {
            if !scene.robots.iter().any(|r| &r.name == end) {
                err(item.clone(), format!("robot \"{end}\" does not exist"));
            }
        }
        if let Some(q) = p.probability
            && !probability_ok(q)
        {
            err(item.clone(), format!("probability {q} is outside 0..1"));
        }
        if let Some(range) = p.range
            && !(range.is_finite() && range >= 0.0)
        {
            err(item, format!("range must be zero or positive, got {range}"));
        }
    }
}

fn check_botlink(scene: &SceneFile, err: &mut Report) {
    let b = &scene.botlink;
    if b.address.parse::<std::net::IpAddr>().is_err() {
        err("botlink".into(), format!("address \"{}\" is not an IP address", b.address));
    }
    if !positive(b.watchdog) {
        err("botlink".into(), format!("watchdog must be positive seconds, got {}", b.watchdog));
    }
    let mut ports: HashMap<u16, String> = HashMap::new();
    if let Some(p) = b.update_all_port.filter(|p| *p != 0) {
        ports.insert(p, "the update-all port".into());
    }
    for r in &scene.robots {
        if let ControllerSpec::External { port } = r.controller
            && port != 0
        {
            let me = format!("robot \"{}\"", r.name);
            if let Some(other) = ports.get(&port) {
                err(me, format!("UDP port {port} is already used by {other}"));
            } else {
                ports.insert(port, me);
            }
        }
    }
    // TCP ports of remote robots (HTTP and WebSocket) must not collide with each other.
    let mut tcp: HashMap<u16, String> = HashMap::new();
    for r in &scene.robots {
        if let ControllerSpec::Remote { http, ws, .. } = r.controller {
            for (what, port) in [("HTTP", http), ("WebSocket", ws)] {
                if port == 0 {
                    continue;
                }
                let me = format!("robot \"{}\"", r.name);
                if let Some(other) = tcp.get(&port) {
                    if *other != me {
                        err(me, format!("{what} port {port} is already used by {other}"));
                    }
                } else {
                    tcp.insert(port, me);
                }
            }
        }
    }
}

fn check_placement(scene: &SceneFile, err: &mut Report) {
    let (w, h) = (scene.arena.width, scene.arena.height);
    let floor = |p: Vec2, margin: f32| {
        p.x - margin >= -1e-5 && p.y - margin >= -1e-5 && p.x + margin <= w + 1e-5 && p.y + margin <= h + 1e-5
    };
    let outside = |p: Vec2| format!("at ({:.2}, {:.2}) is outside the arena (0..{w} x 0..{h})", p.x, p.y);
    for r in &scene.robots {
        let p = Vec2::new(r.pose.0, r.pose.1);
        if !floor(p, r.radius) {
            err(format!("robot \"{}\"", r.name), format!("body {}", outside(p)));
        }
        if let Some(den) = &r.den
            && !scene.dens.iter().any(|d| &d.name == den)
        {
            let known: Vec<&str> = scene.dens.iter().map(|d| d.name.as_str()).collect();
            err(
                format!("robot \"{}\"", r.name),
                format!("den \"{den}\" does not exist (dens in this scene: {})", list(&known)),
            );
        }
    }
    for p in &scene.pens {
        if !floor(v(p.pos), p.radius) {
            err(format!("pen \"{}\"", p.name), outside(v(p.pos)));
        }
    }
    for b in &scene.boxes {
        let fp = box_footprint(b);
        if let Some(c) = fp.corners().into_iter().find(|c| !floor(*c, 0.0)) {
            err(format!("box \"{}\"", b.name), format!("corner {}", outside(c)));
        }
    }
    for d in &scene.dens {
        if !floor(v(d.pos), 0.0) {
            err(format!("den \"{}\"", d.name), outside(v(d.pos)));
        }
    }
    for s in &scene.stations {
        if !floor(v(s.pos), 0.0) {
            err(format!("station \"{}\"", s.name), outside(v(s.pos)));
        }
    }
    let t = scene.arena.wall_thickness;
    for s in &scene.sonars {
        // Sonars are usually mounted on a wall, so the wall's thickness is allowed.
        if !floor(v(s.pos), -t) {
            err(format!("sonar \"{}\"", s.name), outside(v(s.pos)));
        }
    }
    for wall in &scene.walls {
        for end in [wall.from, wall.to] {
            if !floor(v(end), -wall.thickness) {
                err(format!("wall \"{}\"", wall.name), format!("end {}", outside(v(end))));
            }
        }
    }
    // A den is a refuge by a wall: its centre must be within two radii of a wall surface.
    let walls: Vec<Footprint> =
        all_walls(scene).iter().map(|w| wall_footprint(v(w.from), v(w.to), w.thickness)).collect();
    for d in &scene.dens {
        let nearest = walls.iter().map(|f| f.signed_distance(v(d.pos))).fold(f32::INFINITY, f32::min);
        if nearest > 2.0 * d.radius {
            let found = if nearest.is_finite() {
                format!("the nearest wall is {nearest:.2} m away")
            } else {
                "the scene has no walls".to_string()
            };
            err(
                format!("den \"{}\"", d.name),
                format!(
                    "not near a wall: {found}; a den's centre must be within {:.2} m (two radii) of a wall",
                    2.0 * d.radius
                ),
            );
        }
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}

/// Overlap tolerance: bodies may touch, not interpenetrate.
const OVERLAP_EPS: f32 = 1e-4;

fn check_overlaps(scene: &SceneFile, err: &mut Report) {
    // Circles (robots and pens) go through a uniform grid, so a 10,000-robot scene is checked
    // in linear time; rectangles (walls and boxes) are few and checked against everything.
    let mut circles: Vec<(String, Vec2, f32)> = Vec::new();
    circles.extend(
        scene.robots.iter().map(|r| (format!("robot \"{}\"", r.name), Vec2::new(r.pose.0, r.pose.1), r.radius)),
    );
    circles.extend(scene.pens.iter().map(|p| (format!("pen \"{}\"", p.name), v(p.pos), p.radius)));
    let mut rects: Vec<(String, Footprint, bool)> = Vec::new();
    rects.extend(scene.boxes.iter().map(|b| (format!("box \"{}\"", b.name), box_footprint(b), false)));
    rects.extend(
        all_walls(scene)
            .iter()
            .map(|w| (format!("wall \"{}\"", w.name), wall_footprint(v(w.from), v(w.to), w.thickness), true)),
    );

    let mut pairs: BTreeSet<(String, String)> = BTreeSet::new();
    let mut report = |a: &str, b: &str| {
        pairs.insert((a.to_string(), b.to_string()));
    };

    let cell = circles.iter().map(|c| c.2).fold(0.0f32, f32::max).max(1e-3) * 2.0;
    let key = |p: Vec2| ((p.x / cell).floor() as i64, (p.y / cell).floor() as i64);
    let mut grid: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
    for (i, c) in circles.iter().enumerate() {
        grid.entry(key(c.1)).or_default().push(i);
    }
    for (i, (name, center, radius)) in circles.iter().enumerate() {
        let (kx, ky) = key(*center);
        for dx in -1..=1 {
            for dy in -1..=1 {
                let Some(bucket) = grid.get(&(kx + dx, ky + dy)) else {
                    continue;
                };
                for &j in bucket.iter().filter(|&&j| j > i) {
                    let (other, oc, or) = &circles[j];
                    if radius + or - center.distance(*oc) > OVERLAP_EPS {
                        report(name, other);
                    }
                }
            }
        }
        let fp = Footprint::Circle { center: *center, radius: *radius };
        for (rname, rect, _) in &rects {
            if fp.penetration(rect) > OVERLAP_EPS {
                report(name, rname);
            }
        }
    }
    for (i, (a, fa, a_wall)) in rects.iter().enumerate() {
        for (b, fb, b_wall) in &rects[i + 1..] {
            // Walls may meet and cross each other; boxes may touch but not sink into anything.
            if *a_wall && *b_wall {
                continue;
            }
            let (ha, hb) = (fa.aabb_half(), fb.aabb_half());
            let d = (fa.center() - fb.center()).abs();
            if d.x > ha.x + hb.x || d.y > ha.y + hb.y {
                continue;
            }
            if fa.penetration(fb) > OVERLAP_EPS {
                report(a, b);
            }
        }
    }
    for (a, b) in pairs {
        err(a, format!("overlaps {b}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scene() -> SceneFile {
        let mut s = SceneFile::empty("t", 4.0, 3.0);
        s.dens.push(DenSpec { name: "den".into(), pos: (0.2, 1.5), radius: 0.2 });
        let mut r = RobotSpec::new("r1", 0.2, 1.5, 0.0);
        r.den = Some("den".into());
        s.robots.push(r);
        s.boxes.push(BoxSpec { name: "b".into(), center: (2.0, 1.5), size: (0.4, 0.4), angle: 0.0 });
        s.pens.push(PenSpec { name: "p".into(), pos: (3.0, 1.0), radius: 0.03 });
        s
    }

    fn messages(s: &SceneFile) -> Vec<String> {
        validate(s).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn valid_scene_has_no_errors() {
        assert_eq!(messages(&scene()), Vec::<String>::new());
    }

    #[test]
    fn duplicate_names_are_reported_with_both_kinds() {
        let mut s = scene();
        s.pens[0].name = "r1".into();
        let m = messages(&s);
        assert!(m.iter().any(|e| e.contains("robot \"r1\": duplicate name: a pen is already called \"r1\"")), "{m:?}");
    }

    #[test]
    fn a_name_clashing_with_a_boundary_wall_says_so() {
        let mut s = scene();
        s.boxes[0].name = "wallUp".into();
        let m = messages(&s);
        assert!(m.iter().any(|e| e.contains("box \"wallUp\"") && e.contains("boundary walls")), "{m:?}");
    }

    #[test]
    fn den_far_from_walls_is_rejected() {
        let mut s = scene();
        s.dens[0].pos = (2.0, 2.5);
        let m = messages(&s);
        assert!(m.iter().any(|e| e.starts_with("den \"den\": not near a wall")), "{m:?}");
    }

    #[test]
    fn den_near_an_inner_wall_is_accepted() {
        let mut s = scene();
        s.walls.push(WallSpec { name: "inner".into(), from: (1.0, 2.5), to: (3.0, 2.5), thickness: 0.1 });
        s.dens.push(DenSpec { name: "den2".into(), pos: (2.0, 2.25), radius: 0.2 });
        assert_eq!(messages(&s), Vec::<String>::new());
    }

    #[test]
    fn robot_outside_the_arena_is_rejected() {
        let mut s = scene();
        s.robots[0].pose = (5.0, 1.0, 0.0);
        let m = messages(&s);
        assert!(m.iter().any(|e| e.starts_with("robot \"r1\": body at (5.00, 1.00) is outside the arena")), "{m:?}");
    }

    #[test]
    fn robot_half_through_the_boundary_is_rejected() {
        let mut s = scene();
        s.robots[0].pose = (0.05, 1.5, 0.0);
        let m = messages(&s);
        assert!(m.iter().any(|e| e.starts_with("robot \"r1\": body")), "{m:?}");
    }

    #[test]
    fn overlapping_bodies_are_named() {
        let mut s = scene();
        s.robots.push(RobotSpec::new("r2", 0.3, 1.5, 0.0));
        s.pens.push(PenSpec { name: "p2".into(), pos: (2.1, 1.5), radius: 0.03 });
        let m = messages(&s);
        assert!(m.contains(&"robot \"r1\": overlaps robot \"r2\"".to_string()), "{m:?}");
        assert!(m.contains(&"pen \"p2\": overlaps box \"b\"".to_string()), "{m:?}");
    }

    #[test]
    fn rotated_boxes_overlap_by_separating_axes() {
        let mut s = scene();
        s.boxes.push(BoxSpec { name: "b2".into(), center: (2.45, 1.5), size: (0.4, 0.4), angle: 45.0 });
        let m = messages(&s);
        assert!(m.contains(&"box \"b\": overlaps box \"b2\"".to_string()), "{m:?}");
        s.boxes[1].center = (2.55, 1.5);
        assert_eq!(messages(&s), Vec::<String>::new());
    }

    #[test]
    fn touching_bodies_are_fine() {
        let mut s = scene();
        s.robots.push(RobotSpec::new("r2", 0.4, 1.5, 0.0));
        assert_eq!(messages(&s), Vec::<String>::new());
    }

    #[test]
    fn non_positive_sizes_are_rejected() {
        let mut s = scene();
        s.boxes[0].size = (0.0, 1.0);
        s.robots[0].radius = -0.1;
        s.pens[0].radius = 0.0;
        s.arena.width = 0.0;
        let m = messages(&s);
        assert!(m.contains(&"box \"b\": size must be positive, got 0 x 1".to_string()), "{m:?}");
        assert!(m.contains(&"robot \"r1\": radius must be positive, got -0.1".to_string()), "{m:?}");
        assert!(m.contains(&"pen \"p\": radius must be positive, got 0".to_string()), "{m:?}");
        assert!(m.iter().any(|e| e.starts_with("arena: size must be positive")), "{m:?}");
    }

    #[test]
    fn probability_outside_unit_interval_is_rejected() {
        let mut s = scene();
        s.comms.probability = 1.5;
        assert_eq!(messages(&s), vec!["comms: probability 1.5 is outside 0..1".to_string()]);
        s.comms.probability = -0.1;
        assert_eq!(messages(&s), vec!["comms: probability -0.1 is outside 0..1".to_string()]);
    }

    #[test]
    fn botlink_ports_and_address_are_checked() {
        let mut s = scene();
        s.botlink.update_all_port = Some(9000);
        s.botlink.address = "localhost:1".into();
        s.botlink.watchdog = 0.0;
        s.robots[0].controller = ControllerSpec::External { port: 9000 };
        let m = messages(&s);
        assert!(m.contains(&"botlink: address \"localhost:1\" is not an IP address".to_string()), "{m:?}");
        assert!(m.contains(&"botlink: watchdog must be positive seconds, got 0".to_string()), "{m:?}");
        assert!(m.contains(&"robot \"r1\": UDP port 9000 is already used by the update-all port".to_string()), "{m:?}");
    }

    #[test]
    fn radio_parameters_are_checked_with_the_item_named() {
        let mut s = scene();
        s.robots[0].comms.probability = 1.2;
        s.robots[0].comms.range = Some(-1.0);
        s.comms.pairs.push(PairSpec {
            from: "r1".into(),
            to: "ghost".into(),
            link: None,
            range: Some(-2.0),
            delay: None,
            probability: Some(-0.5),
        });
        let m = messages(&s);
        for expected in [
            "robot \"r1\": comms probability 1.2 is outside 0..1",
            "robot \"r1\": comms range must be zero or positive, got -1",
            "comms pair \"r1\" -> \"ghost\": robot \"ghost\" does not exist",
            "comms pair \"r1\" -> \"ghost\": probability -0.5 is outside 0..1",
            "comms pair \"r1\" -> \"ghost\": range must be zero or positive, got -2",
        ] {
            assert!(m.contains(&expected.to_string()), "{expected} not in {m:?}");
        }
    }

    #[test]
    fn missing_den_is_named() {
        let mut s = scene();
        s.robots[0].den = Some("nest".into());
        assert_eq!(
            messages(&s),
            vec!["robot \"r1\": den \"nest\" does not exist (dens in this scene: den)".to_string()]
        );
    }

    #[test]
    fn many_robots_on_a_grid_validate_quickly_and_cleanly() {
        let mut s = SceneFile::empty("grid", 100.0, 100.0);
        for i in 0..10_000 {
            let (x, y) = ((i % 100) as f32 + 0.5, (i / 100) as f32 + 0.5);
            s.robots.push(RobotSpec::new(format!("r{i}"), x, y, 0.0));
        }
        let t = std::time::Instant::now();
        assert!(validate(&s).is_empty());
        assert!(t.elapsed().as_secs_f32() < 5.0);
    }
}
