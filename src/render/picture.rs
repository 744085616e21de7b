//! The picture around the debugging view: robots filled, each in its own colour (the same colour
//! draws its trail, its radio lines and its curves in the plots), trails of the last seconds,
//! pens in a box drawn inside the box, a light and a dark theme, and the window sized to the
//! screen at start.

use std::collections::{HashMap, VecDeque};

use bevy::asset::RenderAssetUsages;
use bevy::image::Image;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use bevy::window::{Monitor, PrimaryMonitor, PrimaryWindow, WindowPosition};

use crate::robot::{Battery, Robot};
use crate::scene::SceneLoaded;
use crate::sim::SimTime;
use crate::world::{Boxed, Pen};

/// Robot `index`'s colour: hues a golden angle apart from blue, so neighbours in the list differ
/// (and the first is not the red of a bump).
pub fn robot_colour(index: u32) -> Color {
    Color::hsl((210.0 + index as f32 * 137.507_77) % 360.0, 0.65, 0.48)
}

/// The same colour as `[r, g, b]` bytes (for egui and the PNG plots).
pub fn robot_rgb(index: u32) -> [u8; 3] {
    let c = robot_colour(index).to_srgba();
    [c.red, c.green, c.blue].map(|x| (x.clamp(0.0, 1.0) * 255.0).round() as u8)
}

/// Light or dark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    #[default]
    Light,
    Dark,
}

/// The colours of a theme.
#[derive(Debug, Clone, Copy)]
pub struct Colours {
    pub background: Color,
    pub floor: Color,
    pub wall: Color,
    pub outline: Color,
    pub cone: Color,
}

impl Theme {
    pub fn colours(self) -> Colours {
        match self {
            Theme::Light => Colours {
                background: Color::srgb(0.80, 0.81, 0.83),
                floor: Color::srgb(0.97, 0.96, 0.93),
                wall: Color::srgb(0.30, 0.31, 0.35),
                outline: Color::srgb(0.12, 0.12, 0.14),
                cone: Color::srgba(0.25, 0.30, 0.75, 0.22),
            },
            Theme::Dark => Colours {
                background: Color::srgb(0.07, 0.08, 0.09),
                floor: Color::srgb(0.17, 0.18, 0.20),
                wall: Color::srgb(0.55, 0.56, 0.60),
                outline: Color::srgb(0.92, 0.92, 0.95),
                cone: Color::srgba(0.55, 0.65, 1.0, 0.20),
            },
        }
    }
}

/// What the view draws; the panel's View section and the keys change it.
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct ViewOptions {
    pub theme: Theme,
    /// Trails of the robots' last `trail_seconds` of simulated time.
    pub trails: bool,
    pub trail_seconds: f32,
    /// Camera cones (of every robot up to a few dozen, of the selected one beyond).
    pub cones: bool,
    /// Names over the arena.
    pub labels: bool,
}

impl Default for ViewOptions {
    fn default() -> Self {
        Self { theme: Theme::Light, trails: true, trail_seconds: 8.0, cones: true, labels: true }
    }
}

/// Trails are kept for at most this many robots (beyond, only the selected one's).
pub const TRAILS_UP_TO: usize = 300;
/// A trail point every this much simulated time.
const TRAIL_EVERY: f64 = 0.1;

/// Each robot's recent positions, with the simulated time they were taken at.
#[derive(Resource, Default)]
pub struct Trails {
    pub points: HashMap<Entity, VecDeque<(f64, Vec2)>>,
    last: f64,
}

impl Trails {
    /// Adds `p` at `t` to `robot`'s trail and forgets what is older than `keep` seconds.
    pub fn add(&mut self, robot: Entity, t: f64, p: Vec2, keep: f64) {
        let trail = self.points.entry(robot).or_default();
        trail.push_back((t, p));
        while trail.front().is_some_and(|(t0, _)| t - *t0 > keep) {
            trail.pop_front();
        }
    }
}

/// The filled disc drawn under a robot's outline.
#[derive(Component)]
pub struct RobotDisc(pub Entity);

/// The floor's and walls' sprites, recoloured with the theme.
#[derive(Component)]
pub enum Themed {
    Floor,
    Wall,
}

/// A white disc, tinted per robot.
#[derive(Resource)]
pub struct DiscImage(pub Handle<Image>);

pub fn plugin(app: &mut App) {
    app.init_resource::<ViewOptions>()
        .init_resource::<Trails>()
        .add_systems(Startup, make_disc)
        // The screen is known a frame or two after start: look for it in the first frames only.
        .add_systems(
            Update,
            size_window_to_screen.run_if(|mut tries: Local<u32>| {
                *tries += 1;
                *tries < 30
            }),
        )
        .add_systems(
            Update,
            (
                spawn_discs.run_if(on_message::<SceneLoaded>),
                follow_robots,
                // A new scene's sprites are made in the theme's colours already.
                apply_theme.run_if(resource_changed::<ViewOptions>),
                record_trails,
                draw_trails,
            )
                .chain()
                .after(super::rebuild_visuals),
        );
}

fn make_disc(mut images: ResMut<Assets<Image>>, mut commands: Commands) {
    const N: u32 = 64;
    let mut data = Vec::with_capacity((N * N * 4) as usize);
    let c = (N as f32 - 1.0) / 2.0;
    for y in 0..N {
        for x in 0..N {
            let d = Vec2::new(x as f32 - c, y as f32 - c).length();
            // One pixel of antialiased edge.
            let a = (c + 0.5 - d).clamp(0.0, 1.0);
            data.extend_from_slice(&[255, 255, 255, (a * 255.0) as u8]);
        }
    }
    let image = Image::new(
        Extent3d { width: N, height: N, depth_or_array_layers: 1 },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    );
    commands.insert_resource(DiscImage(images.add(image)));
}

/// Sizes the window to 90% of the screen it opens on, centred, as soon as the screen is known.
fn size_window_to_screen(
    monitors: Query<&Monitor, With<PrimaryMonitor>>,
    mut window: Single<&mut Window, With<PrimaryWindow>>,
    mut done: Local<bool>,
) {
    if *done {
        return;
    }
    let Some(m) = monitors.iter().next() else { return };
    *done = true;
    let scale = m.scale_factor.max(0.5) as f32;
    let (w, h) = (m.physical_width as f32 / scale, m.physical_height as f32 / scale);
    if w < 200.0 || h < 200.0 {
        return;
    }
    window.resolution.set((w * 0.9).round(), (h * 0.9).round());
    window.position = WindowPosition::Centered(bevy::window::MonitorSelection::Primary);
}

fn spawn_discs(
    mut commands: Commands,
    disc: Option<Res<DiscImage>>,
    old: Query<Entity, With<RobotDisc>>,
    robots: Query<(Entity, &Transform, &Robot)>,
    mut trails: ResMut<Trails>,
) {
    for e in &old {
        commands.entity(e).despawn();
    }
    trails.points.clear();
    trails.last = f64::NEG_INFINITY;
    let Some(disc) = disc else { return };
    for (e, t, robot) in &robots {
        let mut sprite = Sprite::from_image(disc.0.clone());
        sprite.color = robot_colour(robot.index);
        sprite.custom_size = Some(Vec2::splat(robot.radius * 2.0));
        commands.spawn((RobotDisc(e), sprite, Transform::from_translation(t.translation.truncate().extend(-0.5))));
    }
}

/// Discs follow their robots; an empty battery greys the disc out.
fn follow_robots(
    mut discs: Query<(&RobotDisc, &mut Transform, &mut Sprite)>,
    robots: Query<(&Transform, &Robot, &Battery), Without<RobotDisc>>,
) {
    for (disc, mut t, mut sprite) in &mut discs {
        let Ok((rt, robot, battery)) = robots.get(disc.0) else { continue };
        let p = rt.translation.truncate().extend(-0.5);
        if t.translation != p {
            t.translation = p;
        }
        let colour = if battery.is_empty() { Color::srgb(0.6, 0.6, 0.6) } else { robot_colour(robot.index) };
        if sprite.color != colour {
            sprite.color = colour;
        }
    }
}

fn apply_theme(options: Res<ViewOptions>, mut clear: ResMut<ClearColor>, mut sprites: Query<(&Themed, &mut Sprite)>) {
    let c = options.theme.colours();
    clear.0 = c.background;
    for (themed, mut sprite) in &mut sprites {
        sprite.color = match themed {
            Themed::Floor => c.floor,
            Themed::Wall => c.wall,
        };
    }
}

fn record_trails(
    time: Res<SimTime>,
    options: Res<ViewOptions>,
    selection: Res<super::Selection>,
    robots: Query<(Entity, &Transform), With<Robot>>,
    mut trails: ResMut<Trails>,
) {
    let now = time.seconds();
    if !options.trails || now - trails.last < TRAIL_EVERY {
        return;
    }
    trails.last = now;
    let keep = options.trail_seconds as f64;
    if robots.iter().len() <= TRAILS_UP_TO {
        for (e, t) in &robots {
            trails.add(e, now, t.translation.truncate(), keep);
        }
    } else if let Some((e, t)) = selection.0.and_then(|e| robots.get(e).ok()) {
        trails.add(e, now, t.translation.truncate(), keep);
    }
}

fn draw_trails(
    mut gizmos: Gizmos,
    options: Res<ViewOptions>,
    trails: Res<Trails>,
    time: Res<SimTime>,
    robots: Query<&Robot>,
) {
    if !options.trails {
        return;
    }
    let now = time.seconds();
    let keep = options.trail_seconds.max(0.1) as f64;
    for (e, points) in &trails.points {
        let Ok(robot) = robots.get(*e) else { continue };
        if points.len() < 2 {
            continue;
        }
        let colour = robot_colour(robot.index);
        gizmos.linestrip_gradient_2d(points.iter().map(|(t, p)| {
            let age = ((now - t) / keep).clamp(0.0, 1.0) as f32;
            (*p, colour.with_alpha(0.75 * (1.0 - age)))
        }));
    }
}

/// Where the `n` pens in a box of `size` centred at `centre` (rotated by `angle`) are drawn: a
/// grid of pen-sized cells inside it, filled row by row; when they do not fit, the grid packs
/// tighter.
pub fn boxed_pen_spots(centre: Vec2, size: Vec2, angle: f32, radius: f32, n: usize) -> Vec<Vec2> {
    if n == 0 {
        return Vec::new();
    }
    let inner = (size - Vec2::splat(radius * 2.0)).max(Vec2::ZERO);
    let mut pitch = radius * 2.2;
    let (mut cols, mut rows);
    loop {
        cols = ((inner.x / pitch).floor() as usize + 1).max(1);
        rows = ((inner.y / pitch).floor() as usize + 1).max(1);
        if cols * rows >= n || pitch < 1e-4 {
            break;
        }
        pitch *= 0.8;
    }
    // Only the rows needed, the grid centred in the box.
    let used_cols = cols.min(n);
    let used_rows = n.div_ceil(cols).min(rows);
    let rot = Rot2::radians(angle);
    let origin = -Vec2::new((used_cols - 1) as f32, (used_rows - 1) as f32) * pitch / 2.0;
    (0..n)
        .map(|i| {
            let (c, r) = ((i % cols) as f32, ((i / cols) % rows) as f32);
            centre + rot * (origin + Vec2::new(c, r) * pitch)
        })
        .collect()
}

/// The boxed pens of each box, in a stable order.
pub fn boxed_pens<'a>(
    pens: impl Iterator<Item = (Entity, &'a Pen, Option<&'a Boxed>)>,
) -> HashMap<Entity, Vec<(Entity, f32)>> {
    let mut by_box: HashMap<Entity, Vec<(Entity, f32)>> = HashMap::new();
    for (e, pen, boxed) in pens {
        if let Some(b) = boxed {
            by_box.entry(b.container).or_default().push((e, pen.radius));
        }
    }
    for v in by_box.values_mut() {
        v.sort_by_key(|(e, _)| *e);
    }
    by_box
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxed_pens_sit_inside_their_box() {
        let centre = Vec2::new(1.0, 2.0);
        let size = Vec2::new(0.5, 0.5);
        for n in [1, 4, 9, 30, 200] {
            let spots = boxed_pen_spots(centre, size, 0.3, 0.03, n);
            assert_eq!(spots.len(), n);
            for p in &spots {
                let local = Rot2::radians(0.3).inverse() * (*p - centre);
                assert!(local.x.abs() <= 0.25 - 0.03 + 1e-4 && local.y.abs() <= 0.25 - 0.03 + 1e-4, "{n}: {local}");
            }
            if n <= 9 {
                // Few pens do not overlap.
                for (i, a) in spots.iter().enumerate() {
                    for b in &spots[i + 1..] {
                        assert!(a.distance(*b) >= 0.06 - 1e-4, "{n}: {a} {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn neighbouring_robots_get_different_colours_and_trails_forget_old_points() {
        let a = robot_rgb(0);
        let b = robot_rgb(1);
        assert_ne!(a, b);
        assert_eq!(robot_rgb(5), robot_rgb(5));
        let mut trails = Trails::default();
        let e = Entity::from_raw_u32(3).unwrap();
        for i in 0..100 {
            trails.add(e, i as f64 * 0.1, Vec2::new(i as f32, 0.0), 2.0);
        }
        let t = &trails.points[&e];
        assert_eq!(t.len(), 21, "the last 2 s at 0.1 s");
        assert_eq!(t.back().unwrap().1, Vec2::new(99.0, 0.0));
    }
}
