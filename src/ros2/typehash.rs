//! ROS 2's type hashes (REP 2011, `RIHS01_…`), computed from the message definitions the bridge
//! holds (`msgs.rs`), as `rosidl` computes them: the type's description and every type it refers
//! to (field names and types, no constants, no default values), as JSON in one fixed layout,
//! hashed with SHA-256. Jazzy and later put it in each endpoint's USER_DATA (`typehash=…;`) and in
//! a bag's channel metadata (`topic_type_hash`); Humble has none.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use super::msgs::definition;

/// `type_description_interfaces/msg/FieldType`'s ids of the primitive types `.msg` files name.
fn primitive_id(name: &str) -> Option<u8> {
    Some(match name {
        "int8" => 2,
        "uint8" | "char" => 3,
        "int16" => 4,
        "uint16" => 5,
        "int32" => 6,
        "uint32" => 7,
        "int64" => 8,
        "uint64" => 9,
        "float32" => 10,
        "float64" => 11,
        "bool" => 15,
        "byte" => 16,
        "string" => 17,
        "wstring" => 18,
        _ => return None,
    })
}

/// `FieldType`'s id of a nested type; a fixed array adds 48, a bounded sequence 96, an unbounded
/// one 144.
const NESTED: u8 = 1;
const ARRAY: u8 = 48;
const SEQUENCE: u8 = 144;

/// One field of a type's description.
struct Field {
    name: String,
    type_id: u8,
    capacity: u64,
    /// `package/msg/Type` of a nested type, else empty.
    nested: String,
}

/// `pkg/Type` (how `.msg` files and crsim's definitions name a type) as `pkg/msg/Type`.
fn full_name(short: &str) -> String {
    match short.split_once('/') {
        Some((pkg, kind)) if !kind.starts_with("msg/") => format!("{pkg}/msg/{kind}"),
        _ => short.to_string(),
    }
}

/// The fields of a `.msg` definition (constants, comments and blank lines left out).
fn fields(text: &str) -> Result<Vec<Field>, String> {
    let mut out = Vec::new();
    for line in text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()) {
        if line.contains('=') {
            continue; // a constant: not part of the description
        }
        let mut words = line.split_whitespace();
        let (Some(kind), Some(name)) = (words.next(), words.next()) else {
            return Err(format!("cannot read the field {line:?}"));
        };
        let (base, extra, capacity) = match kind.split_once('[') {
            None => (kind, 0, 0),
            Some((base, "]")) => (base, SEQUENCE, 0),
            Some((base, n)) => {
                let n: u64 = n.trim_end_matches(']').parse().map_err(|_| format!("cannot read the array {kind:?}"))?;
                (base, ARRAY, n)
            }
        };
        let (type_id, nested) = match primitive_id(base) {
            Some(id) => (id + extra, String::new()),
            None => (NESTED + extra, full_name(base)),
        };
        out.push(Field { name: name.to_string(), type_id, capacity, nested });
    }
    Ok(out)
}

/// A type's description as the hash reads it.
fn description_json(type_name: &str, fields: &[Field]) -> String {
    let mut out = format!("{{\"type_name\": {}, \"fields\": [", json_string(type_name));
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(
            out,
            "{{\"name\": {}, \"type\": {{\"type_id\": {}, \"capacity\": {}, \"string_capacity\": 0, \
             \"nested_type_name\": {}}}}}",
            json_string(&f.name),
            f.type_id,
            f.capacity,
            json_string(&f.nested)
        );
    }
    out.push_str("]}");
    out
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The RIHS01 hash of `type_name` (`geometry_msgs/msg/Twist`), from the definitions crsim holds.
pub fn type_hash(type_name: &str) -> Result<String, String> {
    let root = full_name(type_name);
    // Every type the root refers to, by name (sorted, as the hash wants them).
    let mut described: BTreeMap<String, Vec<Field>> = BTreeMap::new();
    let mut todo = vec![root.clone()];
    while let Some(name) = todo.pop() {
        if described.contains_key(&name) {
            continue;
        }
        let text = definition(&name).ok_or_else(|| format!("no definition of {name}"))?;
        let fs = fields(text)?;
        todo.extend(fs.iter().filter(|f| !f.nested.is_empty()).map(|f| f.nested.clone()));
        described.insert(name, fs);
    }
    let root_fields = described.remove(&root).unwrap_or_default();
    let referenced: Vec<String> = described.iter().map(|(n, f)| description_json(n, f)).collect();
    let json = format!(
        "{{\"type_description\": {}, \"referenced_type_descriptions\": [{}]}}",
        description_json(&root, &root_fields),
        referenced.join(", ")
    );
    let digest = Sha256::digest(json.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest {
        let _ = write!(hex, "{b:02x}");
    }
    Ok(format!("RIHS01_{hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hashes rosbags (an implementation independent of ROS and of crsim) gives the same
    /// types: `get_typestore(Stores.ROS2_JAZZY).hash_rihs01(name)`, rosbags 0.11.
    #[test]
    fn the_hashes_are_rosbags_own() {
        for (name, hash) in [
            ("std_msgs/msg/String", "df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"),
            ("std_msgs/msg/Bool", "feb91e995ff9ebd09c0cb3d2aed18b11077585839fb5db80193b62d74528f6c9"),
            ("geometry_msgs/msg/Twist", "9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a"),
            ("nav_msgs/msg/Odometry", "3cc97dc7fb7502f8714462c526d369e35b603cfc34d946e3f2eda2766dfec6e0"),
            ("sensor_msgs/msg/LaserScan", "64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828"),
            ("sensor_msgs/msg/BatteryState", "4bee5dfce981c98faa6828b868307a0a73f992ed0789f374ee96c8f840e69741"),
            ("tf2_msgs/msg/TFMessage", "e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"),
            ("rosgraph_msgs/msg/Clock", "692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564"),
        ] {
            assert_eq!(type_hash(name).unwrap(), format!("RIHS01_{hash}"), "{name}");
        }
        assert_eq!(type_hash("geometry_msgs/Twist"), type_hash("geometry_msgs/msg/Twist"));
        assert!(type_hash("nobody_msgs/msg/Nothing").unwrap_err().contains("no definition"));
    }
}
