//! ROS 2 bags of a run (`crsim run --record-ros2 BAG.mcap`): every step's messages of the bridged
//! robots — on the topics and at the rates the bridge serves them, whether or not it serves DDS —
//! as CDR with `ros2msg` schemas, logged at the simulated time they are stamped with, into an
//! MCAP file of profile `ros2` that `ros2 bag play`, Foxglove and `rosbags` open. The recorder
//! owns the file (a [`FileSink::foreign`](crate::record::writer::FileSink::foreign) among its
//! sinks), so it ends and is finished as a recording is; crsim's own recording (`--record`) is a
//! file of its own beside it, since a `ros2` MCAP file holds CDR channels only.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bevy::prelude::*;
use serde_json::json;

use super::dds::Offered;
use super::feed::{Bridged, Feed, Published, Sample, feeds, gather};
use super::msgs;
use crate::record::Recorder;
use crate::record::format::{ForeignChannel, ForeignMessage};
use crate::scene::ActiveScene;
use crate::scene::schema::{Ros2Spec, RosDistro};
use crate::sim::{RobotOrder, SimTime};

/// The ROS 2 bag being written, and what it got.
#[derive(Resource, Default)]
pub struct Ros2Recording {
    /// Messages written to bags, and those that could not be encoded.
    pub written: u64,
    pub errors: u64,
    /// The bag being written: its recording (the recorder's count) and channels.
    current: Option<(u64, Channels)>,
}

/// One bag's feeds and the channels opened in it, by robot index (none: `/tf`, `/clock`)
/// and topic.
struct Channels {
    feeds: Vec<Feed>,
    /// The release whose bags it writes: Jazzy and later record each topic's type hash.
    distro: RosDistro,
    by_topic: HashMap<(Option<usize>, &'static str), Arc<ForeignChannel>>,
    /// Whether the fixed transforms were written (at the bag's first step).
    started: bool,
}

impl Channels {
    fn channel(&mut self, sample: &Sample, settings: &Ros2Spec) -> Arc<ForeignChannel> {
        let (robot, topic, kind) = sample.route();
        let (feeds, distro) = (&self.feeds, self.distro);
        Arc::clone(self.by_topic.entry((robot, topic)).or_insert_with(|| {
            let topic = match robot {
                Some(i) => format!("{}/{topic}", feeds[i].namespace),
                None => format!("/{topic}"),
            };
            let mut metadata =
                BTreeMap::from([("offered_qos_profiles".into(), offered_qos_profiles(sample.offered(settings)))]);
            if distro.has_type_hash()
                && let Ok(hash) = super::typehash::type_hash(kind)
            {
                // As rosbag2 (Jazzy and later) records it.
                metadata.insert("topic_type_hash".into(), hash);
            }
            Arc::new(ForeignChannel {
                topic,
                message_encoding: "cdr".into(),
                schema_name: kind.into(),
                schema_encoding: "ros2msg".into(),
                schema: msgs::schema(kind).unwrap_or_default(),
                metadata,
            })
        }))
    }
}

/// A topic's QoS as `ros2 bag record` stores it in a channel's metadata (the YAML of rosbag2's
/// metadata version 8, which later versions read too), so `ros2 bag play` offers each topic as
/// the bridge does — `scan` best effort, `bump` and `gripper` transient local. Durations of zero
/// are the defaults (infinite).
fn offered_qos_profiles(o: Offered) -> String {
    // rmw's enumerations: reliability 1 reliable, 2 best effort; durability 1 transient local,
    // 2 volatile; history 1 keep last; liveliness 1 automatic.
    let (reliability, durability) = (if o.reliable { 1 } else { 2 }, if o.latched { 1 } else { 2 });
    let zero = "\n    sec: 0\n    nsec: 0";
    format!(
        "- history: 1\n  depth: {}\n  reliability: {reliability}\n  durability: {durability}\n  deadline:{zero}\n  \
         lifespan:{zero}\n  liveliness: 1\n  liveliness_lease_duration:{zero}\n  avoid_ros_namespace_conventions: false",
        o.depth
    )
}

/// Whether a ROS 2 bag is being written.
pub(super) fn wanted(rec: Res<Recorder>) -> bool {
    rec.wants_foreign()
}

/// Record stage, after physics: the step's messages into the bag. A new bag starts afresh (the
/// bump and gripper states are written in full).
pub(super) fn record(
    mut bag: ResMut<Ros2Recording>,
    mut rec: ResMut<Recorder>,
    time: Res<SimTime>,
    active: Res<ActiveScene>,
    order: Res<RobotOrder>,
    bridged: Query<Bridged>,
    robots: Query<Published>,
) {
    let settings = &active.scene.ros2;
    let bag = &mut *bag;
    let channels = match &mut bag.current {
        Some((started, c)) if *started == rec.started => c,
        _ => {
            // A release ROS_DISTRO does not name records as the default does (the bridge, if it
            // serves, says what is wrong with it).
            let env = std::env::var("ROS_DISTRO").ok();
            let distro = RosDistro::choose(settings.distro, env.as_deref()).unwrap_or(RosDistro::DEFAULT);
            let feeds = feeds(&order.0, &bridged, settings);
            let c = Channels { feeds, distro, by_topic: HashMap::new(), started: false };
            &mut bag.current.insert((rec.started, c)).1
        }
    };
    let first = !std::mem::replace(&mut channels.started, true);
    // Logged at the time every message of the step is stamped with.
    let stamp = super::feed::stamp(&time);
    let log_time = stamp.sec.max(0) as u64 * 1_000_000_000 + u64::from(stamp.nanosec);
    for sample in gather(&mut channels.feeds, settings, &time, &robots, first) {
        match sample.cdr() {
            Ok(data) => {
                let channel = channels.channel(&sample, settings);
                rec.emit_foreign(ForeignMessage { channel, log_time, data });
                bag.written += 1;
            }
            Err(e) => {
                bag.errors += 1;
                warn!("ROS 2 recording: a {} message does not encode: {e}", sample.route().2);
            }
        }
    }
}

/// The run metrics' `ros2_recording` section, when recordings carried ROS 2 topics.
pub(super) fn report_section(world: &mut World) -> Option<(String, serde_json::Value)> {
    let bag = world.get_resource::<Ros2Recording>()?;
    let mut topics: Vec<&str> = bag.current.as_ref()?.1.by_topic.values().map(|c| c.topic.as_str()).collect();
    topics.sort_unstable();
    Some(("ros2_recording".into(), json!({ "messages": bag.written, "errors": bag.errors, "topics": topics })))
}
