"""Talking to crsim's ROS 2 bridge from Python without ROS installed: Eclipse Cyclone DDS (one of
ROS 2's own middlewares) through its Python package (``pip install './clients/python[ros2]'``),
with the ROS 2 message types crsim speaks written out as ``rosidl`` generates them
(``geometry_msgs::msg::dds_::Twist_`` on ``rt/alpha/cmd_vel``). The test suite uses it as the
independent peer of crsim's pure-Rust DDS; on a machine with ROS 2, ``rclpy`` and the ``ros2``
tools talk to crsim directly instead.

    peer = Peer(domain=0)
    peer.discover({"rt/alpha/odom"})
    odom = peer.reader("/alpha/odom", "nav_msgs/msg/Odometry")
    cmd = peer.writer("/alpha/cmd_vel", "geometry_msgs/msg/Twist")
    cmd.write(Twist(linear=Vector3(x=0.2)))
"""


import time
from dataclasses import dataclass, field

from cyclonedds.builtin import (
    BuiltinDataReader,
    BuiltinTopicDcpsParticipant,
    BuiltinTopicDcpsPublication,
    BuiltinTopicDcpsSubscription,
)
from cyclonedds.core import InstanceState, Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float32, float64, int32, sequence, uint8, uint32
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration


@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32 = 0
    nanosec: uint32 = 0


@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time = field(default_factory=Time)
    frame_id: str = ""


@dataclass
class Vector3(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Quaternion(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    w: float64 = 1.0


@dataclass
class Twist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3 = field(default_factory=Vector3)
    angular: Vector3 = field(default_factory=Vector3)


@dataclass
class Point(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Pose(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    position: Point = field(default_factory=Point)
    orientation: Quaternion = field(default_factory=Quaternion)


@dataclass
class PoseWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::PoseWithCovariance_"):
    pose: Pose = field(default_factory=Pose)
    covariance: array[float64, 36] = field(default_factory=lambda: [0.0] * 36)


@dataclass
class TwistWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::TwistWithCovariance_"):
    twist: Twist = field(default_factory=Twist)
    covariance: array[float64, 36] = field(default_factory=lambda: [0.0] * 36)


@dataclass
class Odometry(IdlStruct, typename="nav_msgs::msg::dds_::Odometry_"):
    header: Header = field(default_factory=Header)
    child_frame_id: str = ""
    pose: PoseWithCovariance = field(default_factory=PoseWithCovariance)
    twist: TwistWithCovariance = field(default_factory=TwistWithCovariance)


@dataclass
class LaserScan(IdlStruct, typename="sensor_msgs::msg::dds_::LaserScan_"):
    header: Header = field(default_factory=Header)
    angle_min: float32 = 0.0
    angle_max: float32 = 0.0
    angle_increment: float32 = 0.0
    time_increment: float32 = 0.0
    scan_time: float32 = 0.0
    range_min: float32 = 0.0
    range_max: float32 = 0.0
    ranges: sequence[float32] = field(default_factory=list)
    intensities: sequence[float32] = field(default_factory=list)


@dataclass
class BatteryState(IdlStruct, typename="sensor_msgs::msg::dds_::BatteryState_"):
    header: Header = field(default_factory=Header)
    voltage: float32 = 0.0
    temperature: float32 = 0.0
    current: float32 = 0.0
    charge: float32 = 0.0
    capacity: float32 = 0.0
    design_capacity: float32 = 0.0
    percentage: float32 = 0.0
    power_supply_status: uint8 = 0
    power_supply_health: uint8 = 0
    power_supply_technology: uint8 = 0
    present: bool = False
    cell_voltage: sequence[float32] = field(default_factory=list)
    cell_temperature: sequence[float32] = field(default_factory=list)
    location: str = ""
    serial_number: str = ""


@dataclass
class Bool(IdlStruct, typename="std_msgs::msg::dds_::Bool_"):
    data: bool = False


@dataclass
class String(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    """`std_msgs/msg/String`: crsim's radio topics carry JSON in it."""

    data: str = ""


@dataclass
class Clock(IdlStruct, typename="rosgraph_msgs::msg::dds_::Clock_"):
    clock: Time = field(default_factory=Time)


@dataclass
class TransformMsg(IdlStruct, typename="geometry_msgs::msg::dds_::Transform_"):
    translation: Vector3 = field(default_factory=Vector3)
    rotation: Quaternion = field(default_factory=Quaternion)


@dataclass
class TransformStamped(IdlStruct, typename="geometry_msgs::msg::dds_::TransformStamped_"):
    header: Header = field(default_factory=Header)
    child_frame_id: str = ""
    transform: TransformMsg = field(default_factory=TransformMsg)


@dataclass
class TFMessage(IdlStruct, typename="tf2_msgs::msg::dds_::TFMessage_"):
    transforms: sequence[TransformStamped] = field(default_factory=list)


@dataclass
class GidJazzy(IdlStruct, typename="rmw_dds_common::msg::dds_::Gid_"):
    """`rmw_dds_common/msg/Gid` of Iron and later: 16 octets."""

    data: array[uint8, 16] = field(default_factory=lambda: [0] * 16)


@dataclass
class NodeEntitiesInfoJazzy(IdlStruct, typename="rmw_dds_common::msg::dds_::NodeEntitiesInfo_"):
    node_namespace: str = ""
    node_name: str = ""
    reader_gid_seq: sequence[GidJazzy] = field(default_factory=list)
    writer_gid_seq: sequence[GidJazzy] = field(default_factory=list)


@dataclass
class ParticipantEntitiesInfoJazzy(IdlStruct, typename="rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_"):
    """What `ros_discovery_info` carries in Iron and later: a participant's nodes."""

    gid: GidJazzy = field(default_factory=GidJazzy)
    node_entities_info_seq: sequence[NodeEntitiesInfoJazzy] = field(default_factory=list)


@dataclass
class GidHumble(IdlStruct, typename="rmw_dds_common::msg::dds_::Gid_"):
    """`rmw_dds_common/msg/Gid` of Humble: 24 octets."""

    data: array[uint8, 24] = field(default_factory=lambda: [0] * 24)


@dataclass
class NodeEntitiesInfoHumble(IdlStruct, typename="rmw_dds_common::msg::dds_::NodeEntitiesInfo_"):
    node_namespace: str = ""
    node_name: str = ""
    reader_gid_seq: sequence[GidHumble] = field(default_factory=list)
    writer_gid_seq: sequence[GidHumble] = field(default_factory=list)


@dataclass
class ParticipantEntitiesInfoHumble(IdlStruct, typename="rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_"):
    """What `ros_discovery_info` carries in Humble."""

    gid: GidHumble = field(default_factory=GidHumble)
    node_entities_info_seq: sequence[NodeEntitiesInfoHumble] = field(default_factory=list)


#: ROS 2 message name → the IDL type above, as `rosidl` names it on the wire.
TYPES = {
    "geometry_msgs/msg/Twist": Twist,
    "nav_msgs/msg/Odometry": Odometry,
    "sensor_msgs/msg/LaserScan": LaserScan,
    "sensor_msgs/msg/BatteryState": BatteryState,
    "std_msgs/msg/Bool": Bool,
    "std_msgs/msg/String": String,
    "rosgraph_msgs/msg/Clock": Clock,
    "tf2_msgs/msg/TFMessage": TFMessage,
}


def _user_data(sample) -> bytes:
    """A discovered entity's USER_DATA QoS (b"" when it has none)."""
    qos = getattr(sample, "qos", None)
    if qos is None or Policy.Userdata not in qos:
        return b""
    return bytes(qos[Policy.Userdata].data)


def dds_type(ros: str) -> str:
    """`nav_msgs/msg/Odometry` → `nav_msgs::msg::dds_::Odometry_`, as rmw writes it."""
    package, kind, name = ros.split("/")
    return f"{package}::{kind}::dds_::{name}_"


def dds_topic(ros: str) -> str:
    """A ROS topic (`/alpha/odom`) → its DDS name (`rt/alpha/odom`)."""
    return "rt" + ros


def reliable(depth: int = 100) -> Qos:
    return Qos(Policy.Reliability.Reliable(max_blocking_time=duration(milliseconds=100)), Policy.History.KeepLast(depth))


def best_effort(depth: int = 100) -> Qos:
    return Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(depth))


class Peer:
    """A DDS participant on `domain` that reads and writes ROS 2 topics."""

    def __init__(self, domain: int):
        self.dp = DomainParticipant(domain)
        self._participants = BuiltinDataReader(self.dp, BuiltinTopicDcpsParticipant)
        self._pubs = BuiltinDataReader(self.dp, BuiltinTopicDcpsPublication)
        self._subs = BuiltinDataReader(self.dp, BuiltinTopicDcpsSubscription)
        self.publications: dict[str, str] = {}
        self.subscriptions: dict[str, str] = {}
        #: Each discovered endpoint's USER_DATA (b"" for none) and GUID, by topic.
        self.user_data: dict[str, bytes] = {}
        self.endpoint_keys: dict[str, bytes] = {}
        #: Each discovered participant's USER_DATA, by its GUID.
        self.participant_user_data: dict[bytes, bytes] = {}
        self._topics: dict[str, Topic] = {}

    def discover(self, want: set[str], timeout: float = 20.0) -> None:
        """Waits until every DDS topic name in `want` is seen published or subscribed."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for s in self._participants.take(N=256):
                if getattr(s, "key", None) is not None:
                    self.participant_user_data[s.key.bytes] = _user_data(s)
            for seen, found in ((self.publications, self._pubs), (self.subscriptions, self._subs)):
                for s in found.take(N=256):
                    if s.topic_name:
                        seen[s.topic_name] = s.type_name
                        self.user_data[s.topic_name] = _user_data(s)
                        self.endpoint_keys[s.topic_name] = s.key.bytes
            if want <= set(self.publications) | set(self.subscriptions):
                return
            time.sleep(0.05)
        seen = sorted(set(self.publications) | set(self.subscriptions))
        raise TimeoutError(f"not discovered in {timeout} s: {sorted(want - set(seen))}; seen: {seen}")

    def wait_for_departure(self, timeout: float = 10.0) -> bool:
        """Whether another participant announces its departure (disposes itself) within
        `timeout` seconds, as a participant that stops cleanly does; one that vanishes is only
        noticed when its lease runs out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for s in self._participants.take(N=100):
                if s.sample_info.instance_state == InstanceState.NotAliveDisposed:
                    return True
            time.sleep(0.05)
        return False

    def topic(self, ros_topic: str, ros_type: str) -> Topic:
        name = dds_topic(ros_topic)
        if name not in self._topics:
            self._topics[name] = Topic(self.dp, name, TYPES[ros_type])
        return self._topics[name]

    def reader(self, ros_topic: str, ros_type: str, qos: Qos | None = None) -> DataReader:
        return DataReader(self.dp, self.topic(ros_topic, ros_type), qos=qos or reliable())

    def writer(self, ros_topic: str, ros_type: str, qos: Qos | None = None) -> DataWriter:
        return DataWriter(self.dp, self.topic(ros_topic, ros_type), qos=qos or reliable(10))
