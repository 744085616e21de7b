//! The bridge's DDS participant, spoken to RustDDS directly, as ROS 2's `rmw` layer speaks to
//! its DDS: ROS names on `rt/` topics of `pkg::msg::dds_::Type_` types, the QoS each topic is
//! offered with, and the node's entities on `ros_discovery_info` — written once, when every
//! endpoint is made (a node that republished its whole list for each endpoint it added took 28 s
//! to open 800 robots), in the layout of the ROS 2 release the peers run ([`RosDistro`]: Humble's
//! 24-byte GIDs or Iron's and later 16-byte ones). From Jazzy on, each endpoint's USER_DATA holds
//! its type's hash (`typehash=RIHS01_…;`) and the participant's `enclave=/;`, as `rmw` writes them.

use std::fmt;

use rustdds::no_key::{DataWriter, SimpleDataReader};
use rustdds::policy::{Durability, History, Reliability};
use rustdds::{
    CDRDeserializerAdapter, CDRSerializerAdapter, DomainParticipant, DomainParticipantBuilder, GUID, QosPolicies,
    QosPolicyBuilder, RTPSEntity, TopicKind,
};
use serde::Serialize;
use serde::ser::SerializeTuple;

use super::typehash::type_hash;
use crate::scene::schema::RosDistro;

/// A topic written to, of message type `M`.
pub type Writer<M> = DataWriter<M, CDRSerializerAdapter<M>>;
/// A topic read from, of message type `M`.
pub type Reader<M> = SimpleDataReader<M, CDRDeserializerAdapter<M>>;

/// The DDS type name of ROS 2 type `pkg/msg/Type`: `pkg::msg::dds_::Type_`.
pub fn dds_type_name(ros_type: &str) -> String {
    let mut parts: Vec<&str> = ros_type.split('/').collect();
    let kind = parts.pop().unwrap_or_default();
    format!("{}::dds_::{kind}_", parts.join("::"))
}

/// The DDS topic of ROS 2 topic `/ns/topic`: `rt/ns/topic`.
pub fn dds_topic_name(ros_topic: &str) -> String {
    format!("rt/{}", ros_topic.trim_start_matches('/'))
}

/// An entity's ROS 2 GID: its DDS GUID, and for Humble 8 bytes of zeros after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gid(Vec<u8>);

impl Gid {
    pub fn of(guid: GUID, distro: RosDistro) -> Gid {
        let mut bytes = guid.to_bytes().to_vec();
        bytes.resize(distro.gid_len(), 0);
        Gid(bytes)
    }
}

impl Serialize for Gid {
    /// `rmw_dds_common/msg/Gid`: `octet data[16]` (`[24]` in Humble), a fixed array: no length.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut t = serializer.serialize_tuple(self.0.len())?;
        for b in &self.0 {
            t.serialize_element(b)?;
        }
        t.end()
    }
}

/// `rmw_dds_common/msg/NodeEntitiesInfo`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeEntitiesInfo {
    pub node_namespace: String,
    pub node_name: String,
    pub reader_gid_seq: Vec<Gid>,
    pub writer_gid_seq: Vec<Gid>,
}

/// `rmw_dds_common/msg/ParticipantEntitiesInfo`: what `ros_discovery_info` carries, the nodes a
/// participant holds and their endpoints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParticipantEntitiesInfo {
    pub gid: Gid,
    pub node_entities_info_seq: Vec<NodeEntitiesInfo>,
}

/// What a topic is offered with (its QoS): reliable or best effort, transient local ("latched")
/// or volatile, and the samples kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Offered {
    pub reliable: bool,
    pub latched: bool,
    pub depth: usize,
}

/// The USER_DATA a Jazzy-or-later endpoint of ROS 2 type `ros_type` announces.
pub fn endpoint_user_data(ros_type: &str) -> Result<Vec<u8>, String> {
    Ok(format!("typehash={};", type_hash(ros_type)?).into_bytes())
}

/// The DDS QoS of what a topic is offered with: reliable (a write never waits: a sample DDS
/// cannot take is counted, and the step goes on) or best effort, transient local ("latched") or
/// volatile, keeping the newest `depth`.
pub fn qos(o: Offered) -> QosPolicies {
    let reliability = if o.reliable {
        Reliability::Reliable { max_blocking_time: rustdds::Duration::ZERO }
    } else {
        Reliability::BestEffort
    };
    let durability = if o.latched { Durability::TransientLocal } else { Durability::Volatile };
    QosPolicyBuilder::new()
        .reliability(reliability)
        .durability(durability)
        .history(History::KeepLast { depth: o.depth as i32 })
        .build()
}

/// What `ros_discovery_info` is offered with, as `rmw` offers it: reliable, transient local, the
/// newest kept.
const DISCOVERY: Offered = Offered { reliable: true, latched: true, depth: 1 };

/// The participant and the endpoints of the one ROS 2 node it holds. Its fields are dropped in
/// their order: the discovery writer and the publisher and subscriber before the participant they
/// belong to.
pub struct Participant {
    discovery: Writer<ParticipantEntitiesInfo>,
    publisher: rustdds::Publisher,
    subscriber: rustdds::Subscriber,
    dp: DomainParticipant,
    pub distro: RosDistro,
    node: (String, String),
    readers: Vec<GUID>,
    writers: Vec<GUID>,
}

impl fmt::Debug for Participant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Participant").field("distro", &self.distro).field("node", &self.node).finish()
    }
}

impl Participant {
    /// Joins DDS domain `domain` as a participant holding the node `/namespace/name`.
    pub fn join(domain: u16, distro: RosDistro, (namespace, name): (&str, &str)) -> Result<Participant, String> {
        let mut builder = DomainParticipantBuilder::new(domain);
        if distro.has_type_hash() {
            builder = builder.user_data(b"enclave=/;".to_vec());
        }
        let dp = builder.build().map_err(|e| format!("cannot join DDS domain {domain}: {e:?}"))?;
        let no_qos = QosPolicies::qos_none();
        let publisher = dp.create_publisher(&no_qos).map_err(|e| format!("cannot create a DDS publisher: {e:?}"))?;
        let subscriber = dp.create_subscriber(&no_qos).map_err(|e| format!("cannot create a DDS subscriber: {e:?}"))?;
        let topic = dp
            .create_topic(
                "ros_discovery_info".into(),
                "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_".into(),
                &qos(DISCOVERY),
                TopicKind::NoKey,
            )
            .map_err(|e| format!("topic ros_discovery_info: {e:?}"))?;
        let discovery = publisher
            .create_datawriter_no_key_cdr::<ParticipantEntitiesInfo>(&topic, Some(qos(DISCOVERY)))
            .map_err(|e| format!("writer of ros_discovery_info: {e:?}"))?;
        Ok(Participant {
            dp,
            publisher,
            subscriber,
            distro,
            node: (namespace.to_string(), name.to_string()),
            discovery,
            readers: Vec::new(),
            writers: Vec::new(),
        })
    }

    /// The topic `topic` (a ROS name) of ROS 2 type `ros_type` and the QoS for its endpoints.
    fn topic(&self, topic: &str, ros_type: &str, offered: Offered) -> Result<(rustdds::Topic, QosPolicies), String> {
        let mut q = qos(offered);
        if self.distro.has_type_hash() {
            q = q.with_user_data(endpoint_user_data(ros_type)?);
        }
        let t = self
            .dp
            .create_topic(dds_topic_name(topic), dds_type_name(ros_type), &q, TopicKind::NoKey)
            .map_err(|e| format!("topic {topic}: {e:?}"))?;
        Ok((t, q))
    }

    /// A writer of `topic` (`/alpha/odom`) of ROS 2 type `ros_type` (`nav_msgs/msg/Odometry`).
    pub fn writer<M: Serialize>(&mut self, topic: &str, ros_type: &str, offered: Offered) -> Result<Writer<M>, String> {
        let (t, q) = self.topic(topic, ros_type, offered)?;
        let w = self
            .publisher
            .create_datawriter_no_key_cdr::<M>(&t, Some(q))
            .map_err(|e| format!("writer of {topic}: {e:?}"))?;
        self.writers.push(w.guid());
        Ok(w)
    }

    /// A reader of `topic` of ROS 2 type `ros_type`.
    pub fn reader<M: 'static + serde::de::DeserializeOwned>(
        &mut self,
        topic: &str,
        ros_type: &str,
        offered: Offered,
    ) -> Result<Reader<M>, String> {
        let (t, q) = self.topic(topic, ros_type, offered)?;
        let r = self
            .subscriber
            .create_simple_datareader_no_key::<M, CDRDeserializerAdapter<M>>(&t, Some(q))
            .map_err(|e| format!("reader of {topic}: {e:?}"))?;
        self.readers.push(r.guid());
        Ok(r)
    }

    /// What `ros_discovery_info` says of this participant: its node and every endpoint made so
    /// far (the discovery writer among them, as `rmw` lists it), or no node at all.
    pub fn entities(&self, with_node: bool) -> ParticipantEntitiesInfo {
        let gid = |g: &GUID| Gid::of(*g, self.distro);
        let mut writers: Vec<Gid> = self.writers.iter().map(gid).collect();
        writers.push(gid(&self.discovery.guid()));
        let node = NodeEntitiesInfo {
            node_namespace: self.node.0.clone(),
            node_name: self.node.1.clone(),
            reader_gid_seq: self.readers.iter().map(gid).collect(),
            writer_gid_seq: writers,
        };
        ParticipantEntitiesInfo {
            gid: gid(&self.dp.guid()),
            node_entities_info_seq: if with_node { vec![node] } else { Vec::new() },
        }
    }

    /// Tells the domain's ROS 2 graph about the node and its endpoints (once they are all made).
    pub fn announce(&self) -> Result<(), String> {
        self.discovery.write(self.entities(true), None).map_err(|e| format!("ros_discovery_info: {e:?}"))
    }

    /// The number of endpoints made.
    pub fn endpoints(&self) -> usize {
        self.readers.len() + self.writers.len()
    }
}

impl Drop for Participant {
    /// The node leaves the graph before the participant goes, as `rmw` says so on shutdown.
    fn drop(&mut self) {
        let _ = self.discovery.write(self.entities(false), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ros_names_become_dds_names_as_rmw_mangles_them() {
        assert_eq!(dds_type_name("geometry_msgs/msg/Twist"), "geometry_msgs::msg::dds_::Twist_");
        assert_eq!(dds_type_name("tf2_msgs/msg/TFMessage"), "tf2_msgs::msg::dds_::TFMessage_");
        assert_eq!(dds_topic_name("/alpha/cmd_vel"), "rt/alpha/cmd_vel");
        assert_eq!(dds_topic_name("/tf"), "rt/tf");
    }

    /// Humble's `rmw_dds_common/msg/Gid` is 24 octets, Iron's and later 16: a Humble peer decodes
    /// every sample of the other layout as an error, so `ros2 node list` would not show crsim.
    #[test]
    fn gids_have_the_layout_of_the_peers_release() {
        let guid = GUID::from_bytes(std::array::from_fn(|i| i as u8 + 1));
        let info = |distro| {
            let g = Gid::of(guid, distro);
            let node = NodeEntitiesInfo {
                node_namespace: "/".into(),
                node_name: "crsim".into(),
                reader_gid_seq: vec![g.clone()],
                writer_gid_seq: vec![g.clone(), g.clone()],
            };
            let e = ParticipantEntitiesInfo { gid: g, node_entities_info_seq: vec![node] };
            cdr_encoding::to_vec::<_, byteorder::LittleEndian>(&e).unwrap()
        };
        let (humble, jazzy) = (info(RosDistro::Humble), info(RosDistro::Jazzy));
        // gid, then the node sequence: count, "/" (length 2), "crsim" (length 6, padded to 4),
        // then each GID sequence: count and the GIDs.
        let expected = |n: usize| {
            let gid: Vec<u8> = (1..=16).chain(std::iter::repeat_n(0, n - 16)).collect();
            let mut out = gid.clone();
            out.extend([1, 0, 0, 0, 2, 0, 0, 0, b'/', 0, 0, 0, 6, 0, 0, 0]);
            out.extend(b"crsim\0");
            out.extend([0, 0]);
            out.extend([1, 0, 0, 0]);
            out.extend(&gid);
            out.extend([2, 0, 0, 0]);
            out.extend(&gid);
            out.extend(&gid);
            out
        };
        assert_eq!(humble, expected(24));
        assert_eq!(jazzy, expected(16));
    }

    #[test]
    fn a_jazzy_endpoint_announces_its_type_hash() {
        let data = endpoint_user_data("geometry_msgs/msg/Twist").unwrap();
        assert_eq!(
            String::from_utf8(data).unwrap(),
            "typehash=RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a;"
        );
    }
}
