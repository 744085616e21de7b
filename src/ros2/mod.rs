//! ROS 2 without ROS installed: a bridge that makes every robot a ROS 2 robot under its own
//! namespace, over DDS-RTPS spoken in pure Rust (RustDDS, patched in `vendor/rustdds`), so
//! nothing needs to be sourced or installed. Per robot, under `/<prefix>/<robot>/`: `cmd_vel` in
//! (`geometry_msgs/msg/Twist`, for the robots programs drive), `odom` (`nav_msgs/msg/Odometry`),
//! `scan` (`sensor_msgs/msg/LaserScan`, robots with a range sensor), `battery`
//! (`sensor_msgs/msg/BatteryState`), `bump` and `gripper` (`std_msgs/msg/Bool`); one tf tree — the
//! scene's fixed frame above every robot's `odom` and each sensor's mount on `/tf_static`, every
//! robot's `odom → base_link` on `/tf` (or each robot's own `/<ns>/tf`, as Nav2's multi-robot
//! bringup wants) — and `/clock` every step so `use_sim_time` nodes run on simulated time. The
//! wire is the one the peers' ROS 2 release speaks (Humble or Jazzy and later: `ros2.distro`).
//!
//! It sits on `run/`'s headless core as the program server does: a way in, never a second copy
//! of the step. The robots `cmd_vel` drives are the scene's program robots (or those `--programs`
//! names), driven in the process as an environment drives them: a command becomes the robot's
//! program action in the think stage, limited by its drive like every other command, and holds
//! until the next one, or until it is older than `ros2.cmd_vel_timeout`.

use bevy::prelude::*;

mod bag;
mod bridge;
pub mod dds;
mod feed;
pub mod msgs;
pub mod typehash;

pub use bag::Ros2Recording;
pub use bridge::{Ros2Bridge, Ros2Stats};

use crate::control::programs::ProgramExchange;
use crate::run::runner::OpeningErrors;
use crate::scene::SceneLoaded;
use crate::scene::schema::{Ros2Spec, RosDistro};
use crate::sim::{LoadSystems, SimSystems, ThinkSystems, add_report_section};

/// What the command line asks of the bridge, over the scene's `ros2` section.
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct Ros2Request {
    /// `--ros2`: serve ROS 2 whatever the scene says.
    pub enabled: bool,
    /// `--ros2-domain`: the DDS domain, over the scene's and `ROS_DOMAIN_ID`.
    pub domain_id: Option<u16>,
    /// Settings in place of the scene's `ros2` section (`crsim bench --ros2`).
    pub settings: Option<Ros2Spec>,
}

/// The bridge, serving when the scene's `ros2.enabled` or the [`Ros2Request`] says so.
pub fn plugin(app: &mut App) {
    app.init_resource::<Ros2Request>()
        .init_resource::<Ros2Bridge>()
        // On every scene loaded, and when the request changes (the app's panel).
        .add_systems(
            PreUpdate,
            open.run_if(on_message::<SceneLoaded>.or_eager(resource_changed::<Ros2Request>)).in_set(LoadSystems::React),
        )
        // After the program server's exchange: both give program robots their actions.
        .add_systems(FixedUpdate, bridge::receive.in_set(ThinkSystems::Receive).after(ProgramExchange))
        .add_systems(FixedUpdate, bridge::publish.in_set(SimSystems::Record))
        .init_resource::<Ros2Recording>()
        .add_systems(FixedUpdate, bag::record.run_if(bag::wanted).in_set(SimSystems::Record));
    add_report_section(app, bridge::report_section);
    add_report_section(app, bag::report_section);
}

/// Serves the app's loaded scene now with `settings` on `domain`, whatever its own `ros2` section
/// says (`crsim bench --ros2`): its systems join the app's schedules.
pub fn serve(app: &mut App, settings: &Ros2Spec, domain: u16) -> Result<(), String> {
    app.insert_resource(Ros2Request { enabled: true, domain_id: Some(domain), settings: Some(settings.clone()) });
    plugin(app);
    open(app.world_mut());
    app.world().resource::<Ros2Bridge>().error.clone().map_or(Ok(()), Err)
}

/// A freshly loaded scene: (re)open the bridge as its `ros2` section and the request say; while it
/// serves, the program robots take their commands from `cmd_vel` (no program server opens).
fn open(world: &mut World) {
    let request = world.resource::<Ros2Request>().clone();
    let Some(active) = world.get_resource::<crate::scene::ActiveScene>() else { return };
    // Once per scene loaded and request: `serve` opens at once, before the load's message is read.
    let key = (active.generation, request.clone());
    if world.resource::<Ros2Bridge>().opened_for.as_ref() == Some(&key) {
        return;
    }
    let scene = active.scene.clone();
    let serving = request.enabled || scene.ros2.enabled;
    let settings = request.settings.unwrap_or(scene.ros2);
    let env_domain = std::env::var("ROS_DOMAIN_ID").ok();
    let env_distro = std::env::var("ROS_DISTRO").ok();
    let mut bridge = world.remove_resource::<Ros2Bridge>().unwrap_or_default();
    if serving {
        bridge.drive_programs(world);
        let domain = bridge::domain_id(request.domain_id, settings.domain_id, env_domain.as_deref());
        let distro = RosDistro::choose(settings.distro, env_distro.as_deref());
        match domain.and_then(|d| Ok((d, distro?))) {
            Ok((d, distro)) => bridge.open(world, &settings, d, distro),
            Err(e) => bridge.fail(e),
        }
        if let Some(e) = &bridge.error {
            world.get_resource_or_init::<OpeningErrors>().0.push(format!("ROS 2: {e}"));
        }
    } else {
        bridge.close(world);
    }
    bridge.opened_for = Some(key);
    world.insert_resource(bridge);
}

#[cfg(test)]
mod tests {
    use bevy::ecs::schedule::Schedules;

    use super::*;
    use crate::control::programs::{InProcess, ProgramServer};
    use crate::run::headless::{headless_app_with, run_steps};
    use crate::scene::SceneSource;
    use crate::scene::load::load_scene_file;
    use crate::scene::schema::{Ros2Spec, SceneFile, ros_token};
    use crate::scene::validate::validate;

    /// A domain of its own for each test process, away from ROS's default 0.
    fn test_domain() -> u16 {
        200 + (std::process::id() % 30) as u16
    }

    fn ros2_scene() -> SceneFile {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/ros2.ron");
        load_scene_file(&path).unwrap().0
    }

    fn app(scene: SceneFile, request: Ros2Request) -> App {
        headless_app_with(scene, SceneSource::Generated, |app| {
            app.insert_resource(request);
            plugin(app);
        })
    }

    #[test]
    fn serving_it_names_every_robot_and_drives_the_program_robots_in_the_process() {
        let domain = test_domain();
        let mut app = app(ros2_scene(), Ros2Request { domain_id: Some(domain), ..Default::default() });
        let bridge = app.world().resource::<Ros2Bridge>();
        assert_eq!(bridge.error, None);
        assert_eq!(bridge.domain(), Some(domain), "the scene's ros2.enabled turns it on");
        assert_eq!(bridge.namespaces(), ["/alpha", "/beta", "/gamma"]);
        // No program server waits for alpha and beta: cmd_vel drives them.
        assert!(app.world().contains_resource::<InProcess>());
        assert_eq!(app.world().resource::<ProgramServer>().local, None);
        run_steps(&mut app, 10);
        app.world_mut().resource_mut::<Ros2Bridge>().shut_down();
        let stats = &app.world().resource::<Ros2Bridge>().stats();
        // Every step: /clock, and (50 Hz at dt 0.02) three robots' odom and /tf, each written or
        // replaced by a newer one before the writer thread got to it.
        assert!(stats.published + stats.coalesced >= 10 * (1 + 3 + 1), "{stats:?}");
        assert_eq!(stats.publish_errors, 0);
    }

    #[test]
    fn off_it_opens_nothing_and_the_program_server_serves_as_before() {
        let mut scene = ros2_scene();
        scene.ros2.enabled = false;
        scene.programs.port = 0;
        let app = app(scene, Ros2Request::default());
        let bridge = app.world().resource::<Ros2Bridge>();
        assert_eq!((bridge.domain(), &bridge.error), (None, &None));
        assert!(!app.world().contains_resource::<InProcess>());
        assert!(app.world().resource::<ProgramServer>().local.is_some());
    }

    /// As `tests/sim.rs` checks the core's systems: the bridge's two systems have an order with
    /// every system that touches what they touch.
    #[test]
    fn its_systems_conflict_with_none_of_the_steps() {
        let mut app = app(ros2_scene(), Ros2Request { enabled: true, domain_id: Some(test_domain()), settings: None });
        run_steps(&mut app, 1);
        let world = app.world();
        let schedule = world.resource::<Schedules>().get(FixedUpdate).expect("the fixed schedule ran");
        let names: std::collections::HashMap<_, String> =
            schedule.systems().expect("initialised").map(|(key, system)| (key, system.name().to_string())).collect();
        let conflicts: Vec<String> = schedule
            .graph()
            .conflicting_systems()
            .iter()
            .map(|(a, b, _)| (names[a].clone(), names[b].clone()))
            .filter(|(a, b)| !(a.starts_with("bevy_rapier2d::") && b.starts_with("bevy_rapier2d::")))
            .map(|(a, b)| format!("{a} <-> {b}"))
            .collect();
        assert!(conflicts.is_empty(), "systems without an order:\n{}", conflicts.join("\n"));
    }

    #[test]
    fn robot_names_become_ros_tokens_under_the_prefix() {
        assert_eq!(ros_token("alpha"), "alpha");
        assert_eq!(ros_token("robot-1"), "robot_1");
        assert_eq!(ros_token("a  b"), "a_b");
        assert_eq!(ros_token("7"), "r7");
        assert_eq!(ros_token(""), "r");
        let spec = Ros2Spec { prefix: "/sim/".into(), ..Default::default() };
        assert_eq!(spec.namespace_of("robot-1"), "/sim/robot_1");
        assert_eq!(Ros2Spec::default().namespace_of("alpha"), "/alpha");
    }

    #[test]
    fn a_bad_ros2_section_is_refused_naming_what_is_wrong() {
        let mut scene = ros2_scene();
        scene.ros2.domain_id = Some(233);
        scene.ros2.prefix = "9lives/x".into();
        scene.ros2.rate = f32::NAN;
        (scene.robots[0].name, scene.robots[1].name) = ("robot-1".into(), "robot_1".into());
        scene.ros2.robots = vec!["robot-1".into(), "robot_1".into(), "zeta".into()];
        let errors: Vec<String> =
            validate(&scene).iter().filter(|e| e.item == "ros2").map(|e| e.message.clone()).collect();
        let has = |s: &str| errors.iter().any(|e| e.contains(s));
        assert!(has("domain_id must be 0..=232, got 233"), "{errors:?}");
        assert!(has("prefix \"9lives/x\" is not a ROS namespace"), "{errors:?}");
        assert!(has("rate must be 0..1000000 Hz (0: every step), got NaN"), "{errors:?}");
        assert!(has("robots names \"zeta\", which is not a robot of the scene"), "{errors:?}");
        assert!(has("robots \"robot-1\" and \"robot_1\" would share the namespace /9lives/x/robot_1"), "{errors:?}");
        assert!(validate(&ros2_scene()).is_empty());
    }

    /// `crsim bench --ros2`: serving a loaded scene with settings of its own, every step.
    #[test]
    fn served_on_request_it_publishes_every_robots_state_every_step() {
        let scene = crate::run::bench::bench_arena(10, 1, Default::default());
        let mut app = headless_app_with(scene, SceneSource::Generated, |_| {});
        let settings = Ros2Spec { rate: 0.0, scan_rate: 0.0, ..Default::default() };
        serve(&mut app, &settings, test_domain()).unwrap();
        run_steps(&mut app, 10);
        assert_eq!(app.world().resource::<Ros2Bridge>().namespaces().len(), 10);
        // Closing writes what was handed over. Each step: /clock, /tf and each robot's odom; at the
        // first, /tf_static and each robot's bump and gripper: each written, or replaced by a
        // newer one of its topic before the writer thread got to it (the steps ran faster than
        // DDS writes).
        app.world_mut().resource_mut::<Ros2Bridge>().shut_down();
        let stats = app.world().resource::<Ros2Bridge>().stats();
        assert_eq!(stats.published + stats.coalesced, 10 * (2 + 10) + 1 + 2 * 10, "{stats:?}");
        assert_eq!((stats.publish_errors, stats.publish_dropped), (0, 0), "{stats:?}");
    }

    /// The app's switch: changing the request opens or closes the bridge on the running scene.
    #[test]
    fn switching_the_request_opens_and_closes_it_live() {
        let mut scene = ros2_scene();
        scene.ros2.enabled = false;
        scene.programs.port = 0;
        let mut app = app(scene, Ros2Request { domain_id: Some(test_domain()), ..Default::default() });
        assert_eq!(app.world().resource::<Ros2Bridge>().domain(), None);
        app.world_mut().resource_mut::<Ros2Request>().enabled = true;
        app.update();
        assert_eq!(app.world().resource::<Ros2Bridge>().domain(), Some(test_domain()));
        assert!(app.world().contains_resource::<InProcess>());
        app.world_mut().resource_mut::<Ros2Request>().enabled = false;
        app.update();
        assert_eq!(app.world().resource::<Ros2Bridge>().domain(), None);
        assert!(!app.world().contains_resource::<InProcess>());
    }

    /// `--record-ros2`: a bag of profile `ros2` holding each bridged robot's topics as CDR at
    /// the scene's rates (the bridge off: nothing served), and crsim's own recording beside it
    /// none of them.
    #[test]
    fn a_bag_holds_the_topics_as_cdr_at_their_rates_and_crsims_recording_none_of_them() {
        use crate::record::Recorder;
        use crate::record::writer::FileSink;

        let mut scene = ros2_scene();
        scene.ros2.enabled = false;
        scene.programs.port = 0;
        scene.ros2.robots = vec!["alpha".into(), "gamma".into()];
        let dir = std::env::temp_dir().join(format!("crsim-bag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (bag, own) = (dir.join("run.bag.mcap"), dir.join("run.mcap"));
        let meta = crate::record::run_meta(&scene, "", "ros2.ron", &dir, &Default::default(), false, 0);
        // The program robots driven in the process, so no program server waits for them.
        let mut app = headless_app_with(scene, SceneSource::Generated, |app| {
            app.insert_resource(InProcess);
            plugin(app);
        });
        let mut rec = app.world_mut().resource_mut::<Recorder>();
        rec.add_sink(Box::new(FileSink::foreign(&bag, "ros2").unwrap()));
        rec.add_sink(Box::new(FileSink::create(&own, &meta).unwrap()));
        run_steps(&mut app, 60);
        app.world_mut().resource_mut::<Recorder>().finish(false);
        assert_eq!(app.world().resource::<Ros2Bridge>().domain(), None, "the bag needs no bridge");

        let bytes = std::fs::read(&bag).unwrap();
        let summary = mcap::Summary::read(&bytes).unwrap().expect("a summary");
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        let mut last_odom = None;
        for m in mcap::MessageStream::new(&bytes).unwrap() {
            let m = m.unwrap();
            assert_eq!(m.channel.message_encoding, "cdr");
            let schema = m.channel.schema.as_ref().unwrap();
            assert_eq!(
                (schema.encoding.as_str(), &schema.data[..]),
                ("ros2msg", msgs::schema(&schema.name).unwrap().as_bytes())
            );
            *counts.entry(m.channel.topic.clone()).or_default() += 1;
            if m.channel.topic == "/gamma/odom" {
                let (odom, _) =
                    cdr_encoding::from_bytes::<msgs::Odometry, byteorder::LittleEndian>(&m.data[4..]).unwrap();
                assert_eq!(m.log_time, odom.header.stamp.sec as u64 * 1_000_000_000 + odom.header.stamp.nanosec as u64);
                last_odom = Some(odom);
            }
        }
        assert!(summary.channels.values().all(|c| !c.topic.starts_with("/beta")), "beta is not bridged");
        assert_eq!((counts["/clock"], counts["/tf"], counts["/gamma/odom"], counts["/alpha/scan"]), (60, 60, 60, 12));
        assert_eq!((counts["/alpha/battery"], counts["/gamma/bump"]), (1, 1));
        let mut robots = app.world_mut().query::<(&Name, &Transform)>();
        let gamma = robots.iter(app.world()).find(|(n, _)| n.as_str() == "gamma").map(|(_, t)| *t);
        let (odom, gamma) = (last_odom.unwrap(), gamma.unwrap());
        assert_eq!(
            (odom.pose.pose.position.x as f32, odom.pose.pose.position.y as f32),
            (gamma.translation.x, gamma.translation.y)
        );

        let own = std::fs::read(&own).unwrap();
        let channels = mcap::Summary::read(&own).unwrap().expect("a summary").channels;
        assert!(channels.values().all(|c| crate::record::format::Channel::from_topic(&c.topic).is_some()));
        std::fs::remove_dir_all(&dir).ok();
    }
}
