//! Drawing (presentation only): the arena, walls and boxes as sprites; pens, dens, stations,
//! sonar beams and robots (heading, camera cone, gripper) as gizmos; a 2D camera with mouse pan
//! and zoom; clicking a robot selects it for the inspector. Nothing here writes simulation
//! state: visuals are separate entities, never components on simulation entities.

use bevy::ecs::world::EntityRefExcept;
use bevy::input::mouse::{AccumulatedMouseScroll, MouseScrollUnit};
use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::input::EguiWantsInput;
use bevy_rapier2d::prelude::{CollisionGroups, Group, QueryFilter, ReadRapierContext};

use crate::robot::registry::{Around, Carried, Mark, SensorRegistry};
use crate::robot::{Battery, BumpSensor, Gripper, LampState, Robot, RobotCamera, pose};
use crate::scene::{ActiveScene, SceneLoaded};
use crate::world::{Arena, Boxed, Den, Held, Pen, PenBox, Sonar, Station, Wall, groups, to_arena_edge};

pub mod explore;
pub mod frame_stats;
pub mod frames;
pub mod picture;
pub mod screenshot;

/// The robot picked in the world view, shown in the inspector.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Selection(pub Option<Entity>);

/// A second robot, picked with shift-click: the other end of the radio pair in the panel.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Partner(pub Option<Entity>);

/// The scene editor has the pointer: the left button selects and drags items instead of
/// panning the view and picking robots.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EditMode(pub bool);

/// The view's own systems (fitting, pan and zoom, picking, drawing); the editor runs after them.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViewSystems;

/// Width of the egui side panel in logical pixels, so the arena fits beside it.
#[derive(Resource, Debug, Clone, Copy)]
pub struct PanelWidth(pub f32);

/// Draw every robot's camera cone up to this many robots (beyond, only the selected one's).
const CONES_UP_TO: usize = 60;

/// A presentation entity drawn for the loaded scene.
#[derive(Component)]
struct Visual;

/// The world-view camera.
#[derive(Component)]
pub struct WorldCamera;

pub mod palette {
    use bevy::prelude::Color;
    pub const BOX: Color = Color::srgb(0.62, 0.45, 0.26);
    pub const BOX_EDGE: Color = Color::srgb(0.40, 0.27, 0.12);
    pub const PEN: Color = Color::srgb(0.10, 0.35, 0.85);
    pub const PEN_BOXED: Color = Color::srgb(0.20, 0.30, 0.60);
    pub const DEN: Color = Color::srgb(0.85, 0.45, 0.05);
    pub const STATION: Color = Color::srgb(0.10, 0.60, 0.20);
    pub const SONAR: Color = Color::srgb(0.00, 0.65, 0.75);
    pub const SONAR_HIT: Color = Color::srgb(0.95, 0.10, 0.40);
    pub const ROBOT_BUMP: Color = Color::srgb(0.90, 0.15, 0.10);
    pub const ROBOT_EMPTY: Color = Color::srgb(0.55, 0.55, 0.55);
    pub const SELECTED: Color = Color::srgb(1.0, 0.80, 0.0);
    pub const PARTNER: Color = Color::srgb(0.0, 0.75, 0.35);
    pub const LAMP: Color = Color::srgb(1.0, 0.75, 0.0);
}

/// Selects the robot called `name` whenever a scene loads (`crsim --select NAME`).
pub fn select_on_load(app: &mut App, name: String) {
    app.add_systems(
        Update,
        (move |robots: Query<(Entity, &Name), With<Robot>>, mut selection: ResMut<Selection>| match robots
            .iter()
            .find(|(_, n)| n.as_str() == name)
        {
            Some((e, _)) => selection.0 = Some(e),
            None => warn!("--select: no robot called {name:?} in this scene"),
        })
        .run_if(on_message::<SceneLoaded>)
        .after(rebuild_visuals),
    );
}

pub fn plugin(app: &mut App) {
    explore::plugin(app);
    picture::plugin(app);
    app.init_resource::<Selection>()
        .init_resource::<ViewFit>()
        .init_resource::<Partner>()
        .init_resource::<EditMode>()
        .init_resource::<SensorMarks>()
        .insert_resource(PanelWidth(320.0))
        .insert_resource(ClearColor(picture::ViewOptions::default().theme.colours().background))
        .add_systems(Startup, spawn_camera)
        .add_systems(
            Update,
            (
                rebuild_visuals.run_if(on_message::<SceneLoaded>),
                fit_camera.run_if(on_message::<SceneLoaded>.or_eager(panel_resized)),
                pan_zoom_and_pick,
                collect_sensor_marks,
                draw_world,
                draw_replayed_radio.run_if(resource_exists::<crate::record::replay::Replay>),
            )
                .chain()
                .in_set(ViewSystems),
        );
}

fn spawn_camera(mut commands: Commands) {
    commands.spawn((Camera2d, WorldCamera, Name::new("World camera")));
}

fn rebuild_visuals(
    mut commands: Commands,
    old: Query<Entity, With<Visual>>,
    arena: Res<Arena>,
    walls: Query<(&Transform, &Wall)>,
    boxes: Query<(&Transform, &PenBox)>,
    mut selection: ResMut<Selection>,
    options: Res<picture::ViewOptions>,
) {
    selection.0 = None;
    for e in &old {
        commands.entity(e).despawn();
    }
    let colours = options.theme.colours();
    let floor = Vec2::new(arena.width, arena.height);
    commands.spawn((
        Visual,
        picture::Themed::Floor,
        Sprite::from_color(colours.floor, floor),
        Transform::from_translation((floor / 2.0).extend(-2.0)),
    ));
    for (t, wall) in &walls {
        commands.spawn((
            Visual,
            picture::Themed::Wall,
            Sprite::from_color(colours.wall, wall.size),
            t.with_translation(t.translation.with_z(-1.0)),
        ));
    }
    for (t, b) in &boxes {
        commands.spawn((
            Visual,
            Sprite::from_color(palette::BOX, b.size),
            t.with_translation(t.translation.with_z(-1.0)),
        ));
    }
}

/// Centres the arena in the area right of the panel.
/// How the world view was last fitted: to which panel width, and whether the user has panned or
/// zoomed since (then a panel resize leaves the view alone).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct ViewFit {
    pub panel: f32,
    pub manual: bool,
}

/// The panel's width changed (its content got wider or narrower) and the view is still the
/// automatic fit: fit again so the arena is not hidden under the panel.
fn panel_resized(fit: Res<ViewFit>, panel: Res<PanelWidth>) -> bool {
    !fit.manual && (fit.panel - panel.0).abs() > 1.0
}

fn fit_camera(
    arena: Res<Arena>,
    panel: Res<PanelWidth>,
    mut fit: ResMut<ViewFit>,
    window: Single<&Window, With<PrimaryWindow>>,
    camera: Single<(&mut Transform, &mut Projection), With<WorldCamera>>,
) {
    *fit = ViewFit { panel: panel.0, manual: false };
    let (mut transform, mut projection) = camera.into_inner();
    let (w, h) = (window.width().max(1.0), window.height().max(1.0));
    let free_w = (w - panel.0).max(100.0);
    let scale = (arena.width / free_w).max(arena.height / h) * 1.08;
    if let Projection::Orthographic(ortho) = &mut *projection {
        ortho.scale = scale;
    }
    // Shift the centre left by half the panel so the arena sits in the free area.
    let centre = Vec2::new(arena.width, arena.height) / 2.0 - Vec2::new(panel.0 / 2.0 * scale, 0.0);
    transform.translation = centre.extend(transform.translation.z);
}

#[derive(Default)]
struct DragState {
    last: Option<Vec2>,
    moved: f32,
}

fn pan_zoom_and_pick(
    buttons: Res<ButtonInput<MouseButton>>,
    scroll: Res<AccumulatedMouseScroll>,
    wants: Res<EguiWantsInput>,
    window: Single<&Window, With<PrimaryWindow>>,
    camera: Single<(&Camera, &GlobalTransform, &mut Transform, &mut Projection), With<WorldCamera>>,
    robots: Query<(Entity, &Transform, &Robot), Without<WorldCamera>>,
    mut selection: ResMut<Selection>,
    mut partner: ResMut<Partner>,
    keys: Res<ButtonInput<KeyCode>>,
    panel: Res<PanelWidth>,
    mut fit: ResMut<ViewFit>,
    mut drag: Local<DragState>,
    edit: Res<EditMode>,
) {
    let (cam, cam_global, mut cam_transform, mut projection) = camera.into_inner();
    let Projection::Orthographic(ortho) = &mut *projection else {
        return;
    };
    let cursor = window.cursor_position();
    // The panel is drawn into a full-window background Ui, so egui counts the whole window as
    // its area; the panel's own rectangle tells where the world view starts.
    let over_ui = wants.is_using_pointer() || wants.is_popup_open() || cursor.is_some_and(|c| c.x <= panel.0);
    // Zoom about the cursor.
    if !over_ui && scroll.delta.y != 0.0 {
        let lines = match scroll.unit {
            MouseScrollUnit::Line => scroll.delta.y,
            MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
        };
        let before = cursor.and_then(|c| cam.viewport_to_world_2d(cam_global, c).ok());
        let factor = 0.85f32.powf(lines);
        fit.manual = true;
        ortho.scale = (ortho.scale * factor).clamp(1e-4, 10.0);
        if let Some(p) = before {
            let centre = cam_transform.translation.truncate();
            let new_centre = p + (centre - p) * factor;
            cam_transform.translation = new_centre.extend(cam_transform.translation.z);
        }
    }
    // In edit mode the left button belongs to the editor; the others still pan.
    let left = !edit.0;
    let dragging = (left && buttons.pressed(MouseButton::Left))
        || buttons.pressed(MouseButton::Right)
        || buttons.pressed(MouseButton::Middle);
    if (left && buttons.just_pressed(MouseButton::Left))
        || buttons.just_pressed(MouseButton::Right)
        || buttons.just_pressed(MouseButton::Middle)
    {
        drag.last = if over_ui { None } else { cursor };
        drag.moved = 0.0;
    }
    if dragging && let (Some(last), Some(now)) = (drag.last, cursor) {
        let delta = now - last;
        drag.moved += delta.length();
        if delta != Vec2::ZERO {
            fit.manual = true;
        }
        // Screen y grows downwards, world y upwards.
        cam_transform.translation.x -= delta.x * ortho.scale;
        cam_transform.translation.y += delta.y * ortho.scale;
        drag.last = Some(now);
    }
    if left
        && buttons.just_released(MouseButton::Left)
        && drag.last.is_some()
        && drag.moved < 4.0
        && let Some(p) = cursor.and_then(|c| cam.viewport_to_world_2d(cam_global, c).ok())
    {
        // Clicks are rare: a scan over robots is fine here.
        let shift = keys.pressed(KeyCode::ShiftLeft) || keys.pressed(KeyCode::ShiftRight);
        let picked = robots
            .iter()
            .map(|(e, t, r)| (t.translation.truncate().distance(p) - r.radius, e))
            .filter(|(d, _)| *d <= 0.05)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, e)| e);
        if shift {
            partner.0 = picked;
        } else {
            selection.0 = picked;
        }
    }
    if !dragging {
        drag.last = None;
    }
}

/// A replay's radio deliveries of the last steps, as lines from sender to receiver fading with
/// age (the live run's flashes, from the recording).
fn draw_replayed_radio(
    mut gizmos: Gizmos,
    replay: Res<crate::record::replay::Replay>,
    robots: Query<(&Name, &Transform), With<Robot>>,
) {
    let f = &replay.frame;
    if f.deliveries.is_empty() {
        return;
    }
    let at: std::collections::HashMap<&str, Vec2> =
        robots.iter().map(|(n, t)| (n.as_str(), t.translation.truncate())).collect();
    let window = crate::record::reader::DELIVERY_WINDOW as f32;
    for (step, d) in &f.deliveries {
        let age = f.step.step.saturating_sub(*step) as f32;
        if let (Some(a), Some(b)) = (at.get(d.from.as_str()), at.get(d.to.as_str())) {
            gizmos.line_2d(*a, *b, palette::PARTNER.with_alpha(1.0 - age / (window + 1.0)));
        }
    }
}

/// Rays per camera cone drawn.
const CONE_RAYS: usize = 24;

/// The outline of what a camera at `pos` can see: its cone of `fov` radians about `heading`,
/// each ray cut where `reach` (the free distance along a unit direction) ends it.
pub fn cone_points(pos: Vec2, heading: f32, fov: f32, reach: impl Fn(Vec2) -> f32) -> Vec<Vec2> {
    let mut pts = Vec::with_capacity(CONE_RAYS + 3);
    pts.push(pos);
    for i in 0..=CONE_RAYS {
        let dir = Vec2::from_angle(heading - fov / 2.0 + fov * i as f32 / CONE_RAYS as f32);
        pts.push(pos + dir * reach(dir));
    }
    pts.push(pos);
    pts
}

fn draw_world(
    mut gizmos: Gizmos,
    rapier: ReadRapierContext,
    arena: Res<Arena>,
    selection: Res<Selection>,
    partner: Res<Partner>,
    active: Option<Res<ActiveScene>>,
    robots: Query<(Entity, &Transform, &Robot, &RobotCamera, &BumpSensor, &Battery, &Gripper, &LampState)>,
    pens: Query<(Entity, &Transform, &Pen, Has<Held>, Option<&Boxed>)>,
    boxes: Query<(Entity, &Transform, &PenBox)>,
    options: Res<picture::ViewOptions>,
    dens: Query<(&Transform, &Den)>,
    stations: Query<(&Transform, &Station)>,
    sonars: Query<(&Transform, &Sonar)>,
    marks: Res<SensorMarks>,
) {
    if active.is_none() {
        return;
    }
    let colours = options.theme.colours();
    // Boxed pens are drawn inside their box, side by side.
    let boxed = picture::boxed_pens(pens.iter().map(|(e, _, pen, _, b)| (e, pen, b)));
    for (e, t, b) in &boxes {
        let (p, a) = pose(t);
        gizmos.rect_2d(Isometry2d::new(p, Rot2::radians(a)), b.size, palette::BOX_EDGE);
        if let Some(inside) = boxed.get(&e) {
            let r = inside.iter().map(|(_, r)| *r).fold(0.0f32, f32::max);
            for spot in picture::boxed_pen_spots(p, b.size, a, r, inside.len()) {
                gizmos.circle_2d(spot, r, palette::PEN_BOXED);
            }
        }
    }
    for (t, d) in &dens {
        let p = t.translation.truncate();
        gizmos.circle_2d(p, d.radius, palette::DEN);
        gizmos.circle_2d(p, d.radius * 0.6, palette::DEN);
    }
    for (t, s) in &stations {
        let p = t.translation.truncate();
        gizmos.circle_2d(p, s.radius, palette::STATION);
        let k = s.radius * 0.5;
        gizmos.line_2d(p - Vec2::X * k, p + Vec2::X * k, palette::STATION);
        gizmos.line_2d(p - Vec2::Y * k, p + Vec2::Y * k, palette::STATION);
    }
    for (t, s) in &sonars {
        let p = t.translation.truncate();
        let colour = if s.inside.is_empty() { palette::SONAR } else { palette::SONAR_HIT };
        let centre = p + s.axis * s.beam_length / 2.0;
        let angle = s.axis.y.atan2(s.axis.x);
        gizmos.rect_2d(
            Isometry2d::new(centre, Rot2::radians(angle)),
            Vec2::new(s.beam_length.max(0.01), s.width),
            colour,
        );
        gizmos.circle_2d(p, s.width * 0.3, colour);
    }
    for (_, t, pen, held, boxed) in &pens {
        if boxed.is_none() {
            let p = t.translation.truncate();
            gizmos.circle_2d(p, pen.radius, if held { palette::SELECTED } else { palette::PEN });
        }
    }
    let all_cones = robots.iter().len() <= CONES_UP_TO;
    for (e, t, robot, camera, bump, battery, gripper, lamp) in &robots {
        let (p, heading) = pose(t);
        let selected = selection.0 == Some(e);
        let colour = if battery.is_empty() {
            palette::ROBOT_EMPTY
        } else if bump.is_touching() {
            palette::ROBOT_BUMP
        } else {
            colours.outline
        };
        gizmos.circle_2d(p, robot.radius, colour);
        let dir = Vec2::from_angle(heading);
        gizmos.line_2d(p, p + dir * robot.radius, colour);
        // Gripper jaws.
        let side = dir.perp() * robot.radius * 0.35;
        let jaw = robot.radius + gripper.reach * 0.5;
        for s in [side, -side] {
            gizmos.line_2d(p + dir * robot.radius + s, p + dir * jaw + s, colour);
        }
        if robot.max_lateral > 0.0 {
            // Omni wheels: a short tick on each side, across the heading, where it can also go.
            let (left, back) = (dir.perp(), dir * robot.radius * 0.3);
            for s in [left, -left] {
                let rim = p + s * robot.radius * 0.7;
                gizmos.line_2d(rim - back, rim + back, colour);
            }
        }
        if lamp.on {
            for k in [0.15, 0.25, 0.35] {
                gizmos.circle_2d(p, robot.radius * k, palette::LAMP);
            }
        }
        if selected {
            gizmos.circle_2d(p, robot.radius * 1.35, palette::SELECTED);
            gizmos.circle_2d(p, robot.radius * 1.45, palette::SELECTED);
        }
        if partner.0 == Some(e) {
            gizmos.circle_2d(p, robot.radius * 1.35, palette::PARTNER);
        }
        if options.cones && (all_cones || selected) {
            // What the camera can see: cut at the first wall or box, and at the arena's edge.
            let occluders = CollisionGroups::new(Group::ALL, groups::WALL | groups::BOX);
            let filter = QueryFilter::only_fixed().exclude_sensors().groups(occluders);
            let reach = |dir: Vec2| {
                let edge = to_arena_edge(p, dir, &arena).min(camera.range);
                let hit = rapier.single().ok().and_then(|ctx| ctx.cast_ray(p, dir, edge, true, filter));
                hit.map_or(edge, |(_, toi)| toi)
            };
            gizmos.linestrip_2d(cone_points(p, heading, camera.fov, reach), colours.cone);
        }
    }
    for mark in &marks.0 {
        match *mark {
            Mark::Line { from, to, colour: [r, g, b, a] } => gizmos.line_2d(from, to, Color::srgba(r, g, b, a)),
            Mark::Dot { at, radius, colour: [r, g, b, a] } => {
                gizmos.circle_2d(at, radius, Color::srgba(r, g, b, a));
            }
        }
    }
}

/// What the robots' sensors draw in this frame, from the registry: every robot's when the scene
/// has few, else the selected one's; none with the view's cones off.
#[derive(Resource, Debug, Default)]
pub struct SensorMarks(pub Vec<Mark>);

fn collect_sensor_marks(
    sensors: Option<Res<SensorRegistry>>,
    options: Res<picture::ViewOptions>,
    selection: Res<Selection>,
    arena: Res<Arena>,
    robots: Query<EntityRefExcept<SensorMarks>, With<Robot>>,
    names: Query<&Name>,
    mut marks: ResMut<SensorMarks>,
) {
    marks.0.clear();
    let Some(sensors) = sensors.filter(|_| options.cones) else { return };
    let name_of = |e: Entity| names.get(e).map_or_else(|_| e.to_string(), |n| n.to_string());
    let around = Around { arena: *arena, name_of: &name_of };
    let shown: Vec<_> = if robots.iter().len() <= CONES_UP_TO {
        robots.iter().collect()
    } else {
        selection.0.and_then(|e| robots.get(e).ok()).into_iter().collect()
    };
    for robot in shown {
        let Some(carried) = robot.get::<Carried>() else { continue };
        if let Err(fault) = sensors.marks(carried, &(&robot).into(), &around, &mut marks.0) {
            warn_once!("the app does not draw it: {}", fault.describe(&name_of(fault.robot)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cone_is_cut_where_its_rays_end() {
        // A wall 0.5 m ahead across the whole cone; range 1.5 m.
        let pts = cone_points(Vec2::ZERO, 0.0, std::f32::consts::FRAC_PI_2, |d: Vec2| (0.5 / d.x).min(1.5));
        assert_eq!(pts.len(), CONE_RAYS + 3);
        assert_eq!((pts[0], *pts.last().unwrap()), (Vec2::ZERO, Vec2::ZERO));
        assert!(pts[1..pts.len() - 1].iter().all(|p| (p.x - 0.5).abs() < 1e-4), "{pts:?}");
    }
}
