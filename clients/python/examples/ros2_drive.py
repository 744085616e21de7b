"""Drive two of crsim's robots over ROS 2 from Python, with no ROS installed: alpha in a circle,
beta straight ahead, their odometry printed as it comes.

    crsim run scenes/ros2.ron --realtime --steps 30000     # one terminal (or: crsim scenes/ros2.ron)
    python3 clients/python/examples/ros2_drive.py          # another (pip install './clients/python[ros2]')

Both sides use the DDS domain of ROS_DOMAIN_ID (0 when unset) unless --domain says otherwise.
"""

import argparse
import math
import os
import time

from crsim.ros2 import Peer, Twist, Vector3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID") or 0))
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()

    peer = Peer(args.domain)
    peer.discover({"rt/alpha/cmd_vel", "rt/beta/cmd_vel", "rt/alpha/odom", "rt/beta/odom"}, timeout=30)
    robots = ("alpha", "beta")
    odom = {r: peer.reader(f"/{r}/odom", "nav_msgs/msg/Odometry") for r in robots}
    cmd = {r: peer.writer(f"/{r}/cmd_vel", "geometry_msgs/msg/Twist") for r in robots}
    commands = {"alpha": Twist(linear=Vector3(x=0.15), angular=Vector3(z=0.8)), "beta": Twist(linear=Vector3(x=0.1))}
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for r in robots:
            cmd[r].write(commands[r])
            samples = odom[r].take(N=100)
            if samples:
                o = samples[-1]
                p, q = o.pose.pose.position, o.pose.pose.orientation
                heading = math.degrees(math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z)))
                t = o.header.stamp.sec + o.header.stamp.nanosec * 1e-9
                print(f"{t:8.2f} s  {r:5}  x {p.x:6.3f}  y {p.y:6.3f}  heading {heading:7.1f}°", flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
