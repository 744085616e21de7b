//! Semantic checks of a parsed scene. Each error names the offending item, so a user editing a
//! scene by hand knows exactly what to fix. Pure logic: no Bevy, no physics.

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

use bevy::math::Vec2;

pub use super::error::SceneError;
use super::geometry::{Footprint, all_walls, boundary_walls, box_footprint, wall_footprint};
use super::overlap::{Aabb, candidate_pairs};
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
        check_programs(scene, &mut err);
        check_ros2(scene, &mut err);
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

/// The error of coordinates that are not finite or lie too far out.
fn unplaceable(what: &str) -> String {
    format!("{what} must be finite numbers within {MAX_COORDINATE} m of the origin")
}

fn positive(x: f32) -> bool {
    x.is_finite() && x > 0.0
}

/// A coordinate crsim can place: a finite number within [`MAX_COORDINATE`] of the origin.
fn finite2(p: Vec2f) -> bool {
    [p.0, p.1].iter().all(|x| x.is_finite() && x.abs() <= MAX_COORDINATE)
}

/// What is wrong with the size `what` of a body, if anything: it must be positive and within
/// [`MIN_LENGTH`]..=[`MAX_LENGTH`] metres.
fn size_problem(what: &str, x: f32) -> Option<String> {
    if !positive(x) {
        Some(format!("{what} must be positive, got {x}"))
    } else if x < MIN_LENGTH {
        Some(format!("{what} {x} m is below the smallest size crsim simulates, {MIN_LENGTH} m"))
    } else if x > MAX_LENGTH {
        Some(format!("{what} {x} m is beyond the largest size crsim simulates, {MAX_LENGTH} m"))
    } else {
        None
    }
}

/// The shortest step a scene may ask for, seconds.
pub const MIN_DT: f64 = 1e-4;
/// The longest step, seconds.
pub const MAX_DT: f64 = 1.0;
/// The most physics substeps per step.
pub const MAX_SUBSTEPS: u32 = 64;
/// The most cells an explorer's mental map may have (a room of 1,000 × 1,000 robot units).
pub const MAX_EXPLORER_CELLS: f64 = 1.0e6;
/// The longest side of an arena, metres (100 km: an `f32` position there is still good to a
/// centimetre).
pub const MAX_ARENA_SIDE: f32 = 100_000.0;
/// The farthest any coordinate of a scene may be from the origin, metres.
pub const MAX_COORDINATE: f32 = 1_000_000.0;
/// The smallest size of a body (a radius, a box's side, a wall's thickness), metres: grids and
/// maps are sized in such units, so it bounds what a scene's numbers can make crsim allocate.
pub const MIN_LENGTH: f32 = 1e-3;
/// The largest size of a body, metres.
pub const MAX_LENGTH: f32 = 1_000_000.0;
/// Overlapping pairs reported before the overlap check stops (a pile of robots on one spot
/// would otherwise make it quadratic).
pub const MAX_OVERLAPS: usize = 100;

fn check_globals(scene: &SceneFile, err: &mut Report) {
    if scene.name.trim().is_empty() {
        err("scene".into(), "name must not be empty".into());
    }
    if !(scene.dt.is_finite() && (MIN_DT..=MAX_DT).contains(&scene.dt)) {
        err("scene".into(), format!("dt must be in [{MIN_DT}, {MAX_DT}] seconds, got {}", scene.dt));
    }
    if !(1..=MAX_SUBSTEPS).contains(&scene.substeps) {
        err("scene".into(), format!("substeps must be in 1..={MAX_SUBSTEPS}, got {}", scene.substeps));
    }
    let a = &scene.arena;
    if !positive(a.width) || !positive(a.height) {
        err("arena".into(), format!("size must be positive, got {} x {}", a.width, a.height));
    } else if a.width.max(a.height) > MAX_ARENA_SIDE || a.width.min(a.height) < MIN_LENGTH {
        err(
            "arena".into(),
            format!(
                "size {} x {} m is outside what crsim simulates: each side from {MIN_LENGTH} to {MAX_ARENA_SIDE} m",
                a.width, a.height
            ),
        );
    }
    if let Some(e) = size_problem("wall_thickness", a.wall_thickness) {
        err("arena".into(), e);
    }
}

fn check_names(scene: &SceneFile, err: &mut Report) {
    let mut seen: HashMap<&str, &'static str> = HashMap::new();
    let boundary = boundary_walls(&scene.arena);
    // (kind, list in the file, position in that list, name)
    let mut all: Vec<(&'static str, &'static str, usize, &str)> = Vec::new();
    all.extend(boundary.iter().enumerate().map(|(i, w)| ("wall", "arena", i, w.name.as_str())));
    all.extend(scene.walls.iter().enumerate().map(|(i, w)| ("wall", "walls", i, w.name.as_str())));
    all.extend(scene.boxes.iter().enumerate().map(|(i, b)| ("box", "boxes", i, b.name.as_str())));
    all.extend(scene.pens.iter().enumerate().map(|(i, p)| ("pen", "pens", i, p.name.as_str())));
    all.extend(scene.dens.iter().enumerate().map(|(i, d)| ("den", "dens", i, d.name.as_str())));
    all.extend(scene.stations.iter().enumerate().map(|(i, s)| ("station", "stations", i, s.name.as_str())));
    all.extend(scene.sonars.iter().enumerate().map(|(i, s)| ("sonar", "sonars", i, s.name.as_str())));
    all.extend(scene.robots.iter().enumerate().map(|(i, r)| ("robot", "robots", i, r.name.as_str())));
    if let Some(problem) = control_character(&scene.name) {
        err("scene".into(), format!("name {problem}"));
    }
    for (kind, list, index, name) in all {
        if name.trim().is_empty() {
            err(format!("{kind} number {} in {list}", index + 1), "name must not be empty".into());
            continue;
        }
        // Names reach thread names, files, logs and protocols: a NUL, a newline or an escape
        // in one would end a thread name, split a line or reach a terminal.
        if let Some(problem) = control_character(name) {
            err(format!("{kind} number {} in {list}", index + 1), format!("name {problem}"));
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

/// What is wrong with a name that holds a control character: which, and where.
fn control_character(name: &str) -> Option<String> {
    let (at, c) = name.chars().enumerate().find(|(_, c)| c.is_control())?;
    Some(format!(
        "{name:?} holds the control character U+{:04X} at character {}: names are printable text",
        c as u32,
        at + 1
    ))
}

fn check_items(scene: &SceneFile, err: &mut Report) {
    for w in &scene.walls {
        let item = format!("wall \"{}\"", w.name);
        if !finite2(w.from) || !finite2(w.to) {
            err(item.clone(), unplaceable("coordinates"));
        } else if v(w.from).distance(v(w.to)) <= 0.0 {
            err(item.clone(), "length must be positive (from and to are the same point)".into());
        }
        if let Some(e) = size_problem("thickness", w.thickness) {
            err(item, e);
        }
    }
    for b in &scene.boxes {
        let item = format!("box \"{}\"", b.name);
        if !finite2(b.center) || !b.angle.is_finite() {
            err(item.clone(), unplaceable("coordinates"));
        }
        if !positive(b.size.0) || !positive(b.size.1) {
            err(item, format!("size must be positive, got {} x {}", b.size.0, b.size.1));
        } else if let Some(e) =
            size_problem("side", b.size.0.min(b.size.1)).or(size_problem("side", b.size.0.max(b.size.1)))
        {
            err(item, e);
        }
    }
    for p in &scene.pens {
        let item = format!("pen \"{}\"", p.name);
        if !finite2(p.pos) {
            err(item.clone(), unplaceable("position"));
        }
        if let Some(e) = size_problem("radius", p.radius) {
            err(item, e);
        }
    }
    for d in &scene.dens {
        let item = format!("den \"{}\"", d.name);
        if !finite2(d.pos) {
            err(item.clone(), unplaceable("position"));
        }
        if let Some(e) = size_problem("radius", d.radius) {
            err(item, e);
        }
    }
    for s in &scene.stations {
        let item = format!("station \"{}\"", s.name);
        if !finite2(s.pos) {
            err(item.clone(), unplaceable("position"));
        }
        if let Some(e) = size_problem("radius", s.radius) {
            err(item.clone(), e);
        }
        if !(s.rate.is_finite() && s.rate >= 0.0) {
            err(item, format!("rate must be zero or positive, got {}", s.rate));
        }
    }
    for s in &scene.sonars {
        let item = format!("sonar \"{}\"", s.name);
        if !finite2(s.pos) || !s.axis.is_finite() {
            err(
                item.clone(),
                format!(
                    "position and axis must be finite numbers, the position within {MAX_COORDINATE} m of the origin"
                ),
            );
        }
        if let Some(e) = size_problem("width", s.width) {
            err(item.clone(), e);
        }
        if let Some(r) = s.range
            && !positive(r)
        {
            err(item, format!("range must be positive, got {r}"));
        }
    }
    for r in &scene.robots {
        let item = format!("robot \"{}\"", r.name);
        if !(finite2((r.pose.0, r.pose.1)) && r.pose.2.is_finite()) {
            err(
                item.clone(),
                format!("pose must be finite numbers, the position within {MAX_COORDINATE} m of the origin"),
            );
        }
        check_robot(r, &item, err);
    }
    check_kinds(scene, err);
}

/// Each robot's kind is one of the scene's, and each kind's values are what a robot's must be.
fn check_kinds(scene: &SceneFile, err: &mut Report) {
    for r in &scene.robots {
        if let Some(kind) = &r.kind
            && !scene.kinds.contains_key(kind)
        {
            let have = scene.kinds.keys().map(|k| format!("{k:?}")).collect::<Vec<_>>();
            let have = if have.is_empty() { "it has none".to_string() } else { have.join(", ") };
            err(format!("robot \"{}\"", r.name), format!("kind {kind:?} is not one of the scene's kinds ({have})"));
        }
    }
    for (name, kind) in &scene.kinds {
        let item = format!("kind {name:?}");
        if name.is_empty() {
            err(item.clone(), "a kind's name must not be empty".into());
        } else if let Some(problem) = control_character(name) {
            err(item.clone(), problem);
        }
        check_robot(&kind.robot(name), &item, err);
    }
}

fn check_robot(r: &RobotSpec, item: &str, err: &mut Report) {
    let mut e = |m: String| err(item.to_string(), m);
    if let Some(m) = size_problem("radius", r.radius) {
        e(m);
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
    if let DriveSpec::Holonomic { max_lateral } = r.drive
        && !positive(max_lateral)
    {
        e(format!("drive's max_lateral must be positive, got {max_lateral}"));
    }
    if let Some(sensors) = &r.sensors {
        for (i, name) in sensors.iter().enumerate() {
            if sensors[..i].contains(name) {
                e(format!("sensors names {name:?} twice"));
            }
        }
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
    if let Some(s) = &r.range_sensor {
        if !(1..=MAX_RAYS).contains(&s.rays) {
            e(format!("range_sensor rays must be 1 to {MAX_RAYS}, got {}", s.rays));
        }
        if !(positive(s.fov) && s.fov <= 360.0) {
            e(format!("range_sensor fov must be in (0, 360] degrees, got {}", s.fov));
        }
        if let Some(problem) = size_problem("range_sensor range", s.range) {
            e(problem);
        }
        if s.period == 0 {
            e("range_sensor period must be at least 1 step".into());
        }
    }
    match r.controller {
        ControllerSpec::Idle
        | ControllerSpec::External { .. }
        | ControllerSpec::Explorer { .. }
        | ControllerSpec::Program {} => {}
        ControllerSpec::Drive { linear, angular, lateral } => {
            if !(linear.is_finite() && angular.is_finite() && lateral.is_finite()) {
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
    if !(positive(b.connect_timeout) && b.connect_timeout <= 3600.0) {
        err("botlink".into(), format!("connect_timeout must be in (0, 3600] seconds, got {}", b.connect_timeout));
    }
    if !positive(b.status_period) {
        err("botlink".into(), format!("status_period must be positive seconds, got {}", b.status_period));
    }
    if !(b.reply_timeout.is_finite() && (0.0..=10.0).contains(&b.reply_timeout)) {
        err("botlink".into(), format!("reply_timeout must be 0 to 10 seconds, got {}", b.reply_timeout));
    }
    if let Some(group) = &b.multicast {
        match group.parse::<std::net::SocketAddr>() {
            Ok(addr) if addr.ip().is_multicast() => {}
            Ok(_) => err("botlink".into(), format!("multicast \"{group}\" is not a multicast address (224.0.0.0/4)")),
            Err(_) => err(
                "botlink".into(),
                format!("multicast \"{group}\" is not an address and port like \"239.255.42.42:10050\""),
            ),
        }
    }
    for r in &scene.robots {
        let Some(address) = &r.outside else { continue };
        let me = format!("robot \"{}\"", r.name);
        match address.parse::<std::net::SocketAddr>() {
            Ok(addr) if addr.port() == 0 => err(me.clone(), format!("outside address \"{address}\" needs a port")),
            Ok(_) => {}
            Err(_) => err(
                me.clone(),
                format!("outside address \"{address}\" is not an address and port like \"127.0.0.1:7001\""),
            ),
        }
        if matches!(r.controller, ControllerSpec::External { .. }) {
            err(me, "an outside bot is driven by a crsim controller, not External".into());
        }
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

fn check_ros2(scene: &SceneFile, err: &mut Report) {
    let r = &scene.ros2;
    let mut e = |m: String| err("ros2".into(), m);
    if let Some(d) = r.domain_id
        && d > Ros2Spec::MAX_DOMAIN_ID
    {
        e(format!("domain_id must be 0..={}, got {d}", Ros2Spec::MAX_DOMAIN_ID));
    }
    let prefix = r.prefix.trim_matches('/');
    if !prefix.is_empty() && !prefix.split('/').all(is_ros_token) {
        e(format!(
            "prefix \"{}\" is not a ROS namespace: tokens of letters, digits and single underscores, \
             not starting with a digit, separated by /",
            r.prefix
        ));
    }
    for (what, hz) in [("rate", r.rate), ("scan_rate", r.scan_rate), ("battery_rate", r.battery_rate)] {
        if !(hz.is_finite() && (0.0..=1e6).contains(&hz)) {
            e(format!("{what} must be 0..1000000 Hz (0: every step), got {hz}"));
        }
    }
    if !(r.cmd_vel_timeout.is_finite() && (0.0..=1e6).contains(&r.cmd_vel_timeout)) {
        e(format!("cmd_vel_timeout must be 0..1000000 s (0: never), got {}", r.cmd_vel_timeout));
    }
    if !r.frame.is_empty() && !r.frame.split('/').all(is_ros_token) {
        e(format!(
            "frame \"{}\" is not a frame name: tokens of letters, digits and single underscores, separated by /",
            r.frame
        ));
    }
    for name in &r.robots {
        if !scene.robots.iter().any(|s| &s.name == name) {
            e(format!("robots names \"{name}\", which is not a robot of the scene"));
        }
    }
    // Two robots whose names make the same ROS token would share their topics.
    let mut seen: HashMap<String, &str> = HashMap::new();
    for s in scene.robots.iter().filter(|s| r.bridges(&s.name)) {
        if let Some(other) = seen.insert(r.namespace_of(&s.name), &s.name) {
            e(format!(
                "robots \"{other}\" and \"{}\" would share the namespace {} (ROS names allow letters, digits \
                 and _ only); rename one",
                s.name,
                r.namespace_of(&s.name)
            ));
        }
    }
}

fn check_programs(scene: &SceneFile, err: &mut Report) {
    let p = &scene.programs;
    let mut e = |m: String| err("programs".into(), m);
    if p.address.parse::<std::net::IpAddr>().is_err() {
        e(format!("address \"{}\" is not an IP address", p.address));
    }
    if !(p.wait_for_robots.is_finite() && (0.0..=86_400.0).contains(&p.wait_for_robots)) {
        e(format!("wait_for_robots must be 0..86400 seconds, got {}", p.wait_for_robots));
    }
    if !(p.step_timeout.is_finite() && p.step_timeout > 0.0 && p.step_timeout <= 3600.0) {
        e(format!("step_timeout must be in (0, 3600] seconds, got {}", p.step_timeout));
    }
    if !(16..=p.max_frame_bytes / 2).contains(&p.max_message_bytes) {
        e(format!(
            "max_message_bytes must be 16 up to half of max_frame_bytes ({}), got {}",
            p.max_frame_bytes, p.max_message_bytes
        ));
    }
    if !(1024..=1 << 30).contains(&p.max_frame_bytes) {
        e(format!("max_frame_bytes must be 1024 up to 1073741824, got {}", p.max_frame_bytes));
    }
    if !(1..=4096).contains(&p.max_connections) {
        e(format!("max_connections must be 1..4096, got {}", p.max_connections));
    }
    let programs = scene.robots.iter().any(|r| matches!(r.controller, ControllerSpec::Program {}));
    if programs && p.port != 0 {
        for r in &scene.robots {
            if let ControllerSpec::Remote { http, ws, .. } = r.controller
                && (http == p.port || ws == p.port)
            {
                err(format!("robot \"{}\"", r.name), format!("TCP port {} is already the programs' port", p.port));
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
    let dens: HashMap<&str, &DenSpec> = scene.dens.iter().map(|d| (d.name.as_str(), d)).collect();
    for r in &scene.robots {
        let item = format!("robot \"{}\"", r.name);
        let p = Vec2::new(r.pose.0, r.pose.1);
        if !floor(p, r.radius) {
            err(item.clone(), format!("body {}", outside(p)));
        }
        if let Some(den) = &r.den
            && !dens.contains_key(den.as_str())
        {
            let mut known: Vec<&str> = scene.dens.iter().map(|d| d.name.as_str()).take(20).collect();
            if scene.dens.len() > known.len() {
                known.push("...");
            }
            err(item.clone(), format!("den \"{den}\" does not exist (dens in this scene: {})", list(&known)));
        }
        if let ControllerSpec::Explorer { .. } = r.controller {
            check_explorer(r, p, &dens, (w, h), &mut |m| err(item.clone(), m));
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

/// An explorer starts in its den (its refuge, where every excursion begins and ends), and its
/// mental map must stay a sane size.
fn check_explorer(
    r: &RobotSpec,
    p: Vec2,
    dens: &HashMap<&str, &DenSpec>,
    (w, h): (f32, f32),
    err: &mut dyn FnMut(String),
) {
    match r.den.as_deref().map(|d| (d, dens.get(d))) {
        None => err("an explorer needs a den to start from and return to: name one with den: \"NAME\"".into()),
        Some((_, None)) => {}
        Some((name, Some(den))) => {
            let off = p.distance(v(den.pos));
            if off > den.radius + 1e-4 {
                err(format!(
                    "an explorer must start in its den \"{name}\": it starts {off:.2} m from the den's centre, \
                     beyond the den's radius of {:.2} m",
                    den.radius
                ));
            }
        }
    }
    let cell = f64::from(2.0 * r.radius);
    let cells = (f64::from(w) / cell + 2.0).floor() * (f64::from(h) / cell + 2.0).floor();
    if cells > MAX_EXPLORER_CELLS {
        err(format!(
            "the explorer's mental map would have {cells:.0} cells (the arena in cells of the robot's diameter, \
             {cell} m); at most {MAX_EXPLORER_CELLS:.0}: use a larger robot or a smaller arena"
        ));
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}

/// Overlap tolerance: bodies may touch, not interpenetrate.
const OVERLAP_EPS: f32 = 1e-4;

fn check_overlaps(scene: &SceneFile, err: &mut Report) {
    // Every solid body, in a stable order: robots, pens, boxes, walls (boundary walls first).
    let walls = all_walls(scene);
    let mut bodies: Vec<(Footprint, bool)> = Vec::new();
    bodies.extend(
        scene
            .robots
            .iter()
            .map(|r| (Footprint::Circle { center: Vec2::new(r.pose.0, r.pose.1), radius: r.radius }, false)),
    );
    bodies.extend(scene.pens.iter().map(|p| (Footprint::Circle { center: v(p.pos), radius: p.radius }, false)));
    bodies.extend(scene.boxes.iter().map(|b| (box_footprint(b), false)));
    bodies.extend(walls.iter().map(|w| (wall_footprint(v(w.from), v(w.to), w.thickness), true)));
    let name = |i: usize| {
        let mut i = i;
        for (kind, names) in [
            ("robot", scene.robots.iter().map(|r| r.name.as_str()).collect::<Vec<_>>()),
            ("pen", scene.pens.iter().map(|p| p.name.as_str()).collect()),
            ("box", scene.boxes.iter().map(|b| b.name.as_str()).collect()),
            ("wall", walls.iter().map(|w| w.name.as_str()).collect()),
        ] {
            if i < names.len() {
                return format!("{kind} \"{}\"", names[i]);
            }
            i -= names.len();
        }
        String::new()
    };

    // Candidate pairs from a grid of cells at every body's own size; each pair is then measured
    // exactly. Pairs come in no fixed order: they are sorted before they are reported.
    let aabbs: Vec<Aabb> = bodies
        .iter()
        .map(|(f, wall)| {
            let (c, h) = (f.center(), f.aabb_half());
            let (c, h) = (c.as_dvec2(), h.as_dvec2());
            Aabb { min: (c - h).to_array(), max: (c + h).to_array(), wall: *wall }
        })
        .collect();
    let mut pairs: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut full = false;
    candidate_pairs(&aabbs, |a, b| {
        let ((fa, _), (fb, _)) = (&bodies[a], &bodies[b]);
        // Bodies may touch but not sink in.
        if fa.penetration(fb) > OVERLAP_EPS {
            pairs.insert((a, b));
            if pairs.len() >= MAX_OVERLAPS {
                full = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    for (a, b) in pairs {
        err(name(a), format!("overlaps {}", name(b)));
    }
    if full {
        err("scene".into(), format!("more bodies overlap: the check stopped after {MAX_OVERLAPS} overlapping pairs"));
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

    /// A remote robot named with a NUL passed `check`, then `run` panicked building the thread
    /// named after it: names are printable text, and what reaches the OS is a token of them.
    #[test]
    fn a_name_with_a_control_character_is_refused_naming_where() {
        let mut s = scene();
        s.robots[0].name = "r\u{0}1".into();
        s.pens[0].name = "line\nbreak".into();
        s.name = "\u{1b}[31mred".into();
        let m = messages(&s);
        for expected in [
            r#"robot number 1 in robots: name "r\01" holds the control character U+0000 at character 2: names are printable text"#,
            r#"pen number 1 in pens: name "line\nbreak" holds the control character U+000A at character 5: names are printable text"#,
            r#"scene: name "\u{1b}[31mred" holds the control character U+001B at character 1: names are printable text"#,
        ] {
            assert!(m.iter().any(|e| e == expected), "{expected}\nnot in {m:#?}");
        }
        use crate::scene::schema::file_token;
        assert_eq!(file_token("r\u{0}1"), "r_1");
        assert_eq!(file_token("../../etc/passwd"), ".._.._etc_passwd");
        assert_eq!(file_token(".."), "___");
        assert_eq!(file_token(""), "_");
        assert_eq!(file_token("pens-room_2.v1"), "pens-room_2.v1");
        assert_eq!(file_token(&"x".repeat(500)).len(), 64);
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
        s.botlink.multicast = Some("127.0.0.1:9".into());
        s.botlink.reply_timeout = -1.0;
        let mut outside = RobotSpec::new("far", 1.0, 1.0, 0.0);
        outside.outside = Some("somewhere".into());
        outside.controller = ControllerSpec::External { port: 0 };
        s.robots.push(outside);
        s.robots[0].controller = ControllerSpec::External { port: 9000 };
        let m = messages(&s);
        assert!(m.contains(&"botlink: address \"localhost:1\" is not an IP address".to_string()), "{m:?}");
        assert!(m.contains(&"botlink: watchdog must be positive seconds, got 0".to_string()), "{m:?}");
        assert!(m.iter().any(|x| x.contains("multicast \"127.0.0.1:9\" is not a multicast address")), "{m:?}");
        assert!(m.iter().any(|x| x.contains("reply_timeout must be 0 to 10 seconds")), "{m:?}");
        assert!(
            m.iter().any(|x| x.contains("robot \"far\": outside address \"somewhere\" is not an address")),
            "{m:?}"
        );
        assert!(m.iter().any(|x| x.contains("robot \"far\": an outside bot is driven by a crsim controller")), "{m:?}");
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
    fn many_robots_on_a_grid_validate_cleanly() {
        let mut s = SceneFile::empty("grid", 100.0, 100.0);
        for i in 0..10_000 {
            let (x, y) = ((i % 100) as f32 + 0.5, (i / 100) as f32 + 0.5);
            s.robots.push(RobotSpec::new(format!("r{i}"), x, y, 0.0));
        }
        assert!(validate(&s).is_empty());
        // One robot moved onto another is found among them.
        s.robots[5_050].pose = (51.4, 50.5, 0.0);
        assert_eq!(messages(&s), vec!["robot \"r5050\": overlaps robot \"r5051\"".to_string()]);
    }

    #[test]
    fn a_pile_of_robots_on_one_spot_is_reported_without_listing_every_pair() {
        let mut s = SceneFile::empty("pile", 10.0, 10.0);
        for i in 0..10_000 {
            s.robots.push(RobotSpec::new(format!("r{i}"), 5.0, 5.0, 0.0));
        }
        let m = messages(&s);
        assert_eq!(m.len(), MAX_OVERLAPS + 1, "{:?}", &m[..3]);
        assert_eq!(m[0], "robot \"r0\": overlaps robot \"r1\"");
        assert_eq!(
            m[MAX_OVERLAPS],
            format!("scene: more bodies overlap: the check stopped after {MAX_OVERLAPS} overlapping pairs")
        );
    }

    #[test]
    fn a_long_wall_in_a_huge_arena_is_checked_against_every_body() {
        let mut s = SceneFile::empty("huge", 60_000.0, 100.0);
        s.robots.push(RobotSpec::new("r", 30_000.0, 50.0, 0.0));
        s.walls.push(WallSpec { name: "long".into(), from: (10.0, 50.0), to: (59_000.0, 50.0), thickness: 0.1 });
        assert_eq!(messages(&s), vec!["robot \"r\": overlaps wall \"long\"".to_string()]);
    }

    #[test]
    fn an_explorer_needs_its_den_and_starts_in_it() {
        let mut s = scene();
        s.robots[0].controller = ControllerSpec::Explorer { strategy: StrategySpec::Rings, sonar: false };
        assert_eq!(messages(&s), Vec::<String>::new());
        s.robots[0].den = None;
        assert_eq!(
            messages(&s),
            vec![
                "robot \"r1\": an explorer needs a den to start from and return to: name one with den: \"NAME\""
                    .to_string()
            ]
        );
        s.robots[0].den = Some("den".into());
        s.robots[0].pose = (0.2, 0.5, 0.0);
        assert_eq!(
            messages(&s),
            vec![
                "robot \"r1\": an explorer must start in its den \"den\": it starts 1.00 m from the den's centre, \
                 beyond the den's radius of 0.20 m"
                    .to_string()
            ]
        );
    }

    #[test]
    fn an_explorers_map_is_bounded() {
        let mut s = scene();
        s.arena = ArenaSpec { width: 65_000.0, height: 3.0, boundary: true, wall_thickness: 0.1 };
        s.robots[0].controller = ControllerSpec::Explorer { strategy: StrategySpec::Rings, sonar: false };
        let m = messages(&s);
        assert!(m.iter().any(|e| e.starts_with("robot \"r1\": the explorer's mental map would have 5")), "{m:?}");
        s.arena.width = 4.0;
        s.robots[0].radius = 0.001;
        s.robots[0].pose.0 = 0.2;
        let m = messages(&s);
        assert!(m.iter().any(|e| e.contains("at most 1000000: use a larger robot")), "{m:?}");
    }

    #[test]
    fn what_a_scene_makes_crsim_allocate_is_bounded_before_anything_is_checked_further() {
        // Found by fuzzing: an explorer in a 1e30 m arena with a robot a micrometre wide, which
        // made the overlap check walk (and allocate) cells without end.
        let mut s = scene();
        s.arena.width = 1e30;
        s.arena.height = 1e30;
        s.robots[0].radius = 1e-6;
        s.robots[0].controller = ControllerSpec::Explorer { strategy: StrategySpec::Rings, sonar: false };
        assert_eq!(
            messages(&s),
            vec![
                "arena: size 1000000000000000000000000000000 x 1000000000000000000000000000000 m is outside what \
                 crsim simulates: each side from 0.001 to 100000 m"
                    .to_string(),
                "robot \"r1\": radius 0.000001 m is below the smallest size crsim simulates, 0.001 m".to_string(),
            ]
        );
        let mut s = scene();
        s.boxes[0].size = (1e20, 0.4);
        s.walls.push(WallSpec { name: "w".into(), from: (1.0, 1.0), to: (2.0, 1.0), thickness: 1e30 });
        s.pens[0].pos = (3.0, -2e6);
        s.arena.wall_thickness = 5e-4;
        let m = messages(&s);
        for expected in [
            "arena: wall_thickness 0.0005 m is below the smallest size crsim simulates, 0.001 m",
            "box \"b\": side 100000000000000000000 m is beyond the largest size crsim simulates, 1000000 m",
            "wall \"w\": thickness 1000000000000000000000000000000 m is beyond the largest size crsim simulates, 1000000 m",
            "pen \"p\": position must be finite numbers within 1000000 m of the origin",
        ] {
            assert!(m.contains(&expected.to_string()), "{expected} not in {m:?}");
        }
    }

    #[test]
    fn the_largest_arena_with_bodies_of_every_size_is_checked_in_linear_work() {
        // A 100 km arena, a wall along it, a box 50 km wide, and 20,000 robots in a row: every
        // robot is compared with its neighbours, the box and the wall, never with all the others.
        let mut s = SceneFile::empty("wide", MAX_ARENA_SIDE, 60_000.0);
        s.walls.push(WallSpec { name: "long".into(), from: (1.0, 2.0), to: (99_999.0, 2.0), thickness: 0.01 });
        s.boxes.push(BoxSpec {
            name: "big".into(),
            center: (50_000.0, 35_000.0),
            size: (50_000.0, 50_000.0),
            angle: 0.0,
        });
        for i in 0..20_000 {
            s.robots.push(RobotSpec::new(format!("r{i}"), 1.0 + i as f32 * 0.5, 1.0, 0.0));
            s.robots[i].radius = 0.2;
        }
        assert_eq!(messages(&s), Vec::<String>::new());
        s.robots[7].pose.1 = 2.0;
        assert_eq!(messages(&s), vec!["robot \"r7\": overlaps wall \"long\"".to_string()]);
    }

    #[test]
    fn dt_and_substeps_are_bounded() {
        let mut s = scene();
        s.dt = 1e-10;
        s.substeps = 4_000_000_000;
        assert_eq!(
            messages(&s),
            vec![
                "scene: dt must be in [0.0001, 1] seconds, got 0.0000000001".to_string(),
                "scene: substeps must be in 1..=64, got 4000000000".to_string(),
            ]
        );
    }

    #[test]
    fn an_empty_name_says_which_item_has_it() {
        let mut s = scene();
        s.pens.push(PenSpec { name: " ".into(), pos: (3.5, 1.0), radius: 0.03 });
        s.robots[0].name = String::new();
        let m = messages(&s);
        assert!(m.contains(&"pen number 2 in pens: name must not be empty".to_string()), "{m:?}");
        assert!(m.contains(&"robot number 1 in robots: name must not be empty".to_string()), "{m:?}");
    }
}
