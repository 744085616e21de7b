//! Paths into a scene or into a run's metrics, written as people write them on a command line:
//! `comms.probability`, `robots[alpha].battery.initial`, `robots[2].pose`,
//! `robots[*].controller.Network.low_power`. A path walks the scene's serde form (the same field
//! names as the RON file; an enum with fields is one key, its variant's name): `.field` enters a
//! section, `[name]` picks the list item with that `name`, `[N]` the item at index N (from 0) and
//! `[*]` every item that has the rest of the path.

use std::fmt;

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Field(String),
    Name(String),
    Index(usize),
    All,
}

/// A parsed path, with the text it came from for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuePath {
    pub text: String,
    pub segments: Vec<Segment>,
}

impl fmt::Display for ValuePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl ValuePath {
    /// Parses `text`; the error says what is wrong and where (a character position from 1).
    pub fn parse(text: &str) -> Result<ValuePath, String> {
        let mut segments = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        let field_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if chars.is_empty() {
            return Err("an empty path".into());
        }
        loop {
            let start = i;
            while i < chars.len() && field_char(chars[i]) {
                i += 1;
            }
            if i == start {
                return Err(format!("a field name was expected at character {}", i + 1));
            }
            segments.push(Segment::Field(chars[start..i].iter().collect()));
            while i < chars.len() && chars[i] == '[' {
                let open = i;
                let Some(close) = chars[i..].iter().position(|&c| c == ']').map(|p| p + i) else {
                    return Err(format!("the `[` at character {} is never closed", open + 1));
                };
                let inner: String = chars[open + 1..close].iter().collect();
                let inner = inner.trim();
                segments.push(if inner == "*" {
                    Segment::All
                } else if let Ok(n) = inner.parse::<usize>() {
                    Segment::Index(n)
                } else if !inner.is_empty() {
                    Segment::Name(inner.trim_matches('"').to_string())
                } else {
                    return Err(format!("empty brackets at character {}", open + 1));
                });
                i = close + 1;
            }
            if i == chars.len() {
                break;
            }
            if chars[i] != '.' {
                return Err(format!("unexpected `{}` at character {}", chars[i], i + 1));
            }
            i += 1;
        }
        Ok(ValuePath { text: text.to_string(), segments })
    }

    /// The one value at this path (a path with `[*]` is not one value).
    pub fn get<'a>(&self, root: &'a Value) -> Result<&'a Value, String> {
        let mut here = root;
        let mut walked = String::new();
        for seg in &self.segments {
            here = match seg {
                Segment::All => return Err(format!("{}: `[*]` names many values, not one", self.text)),
                _ => step(here, seg, &walked).map_err(|e| format!("{}: {e}", self.text))?,
            };
            walked.push_str(&seg_text(seg, walked.is_empty()));
        }
        Ok(here)
    }

    /// Replaces the value at this path by `new`, which must be of the same kind as the value it
    /// replaces (a number for a number, text for text, ...). Returns how many values were set.
    pub fn set(&self, root: &mut Value, new: &Value) -> Result<usize, String> {
        set_at(root, &self.segments, new, String::new()).map_err(|e| format!("{}: {e}", self.text))
    }
}

fn seg_text(seg: &Segment, first: bool) -> String {
    match seg {
        Segment::Field(f) if first => f.clone(),
        Segment::Field(f) => format!(".{f}"),
        Segment::Name(n) => format!("[{n}]"),
        Segment::Index(i) => format!("[{i}]"),
        Segment::All => "[*]".into(),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a section",
    }
}

fn where_(walked: &str) -> String {
    if walked.is_empty() { "the top level".to_string() } else { format!("`{walked}`") }
}

/// One step down from `here` (not `[*]`).
fn step<'a>(here: &'a Value, seg: &Segment, walked: &str) -> Result<&'a Value, String> {
    match (seg, here) {
        (Segment::Field(f), Value::Object(map)) => map.get(f).ok_or_else(|| {
            let fields: Vec<&str> = map.keys().map(String::as_str).collect();
            format!("{} has no field `{f}` (its fields: {})", where_(walked), fields.join(", "))
        }),
        (Segment::Field(f), v) => Err(format!("{} is {}, it has no field `{f}`", where_(walked), kind(v))),
        (Segment::Index(i), Value::Array(items)) => items.get(*i).ok_or_else(|| {
            format!("{} has {} items, there is no item {i} (counted from 0)", where_(walked), items.len())
        }),
        (Segment::Name(n), Value::Array(items)) => {
            items.iter().find(|item| item.get("name").and_then(Value::as_str) == Some(n.as_str())).ok_or_else(|| {
                let names: Vec<&str> = items.iter().filter_map(|i| i.get("name").and_then(Value::as_str)).collect();
                format!(
                    "{} has no item named \"{n}\" (its names: {})",
                    where_(walked),
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                )
            })
        }
        (_, v) => Err(format!("{} is {}, not a list", where_(walked), kind(v))),
    }
}

fn step_mut<'a>(here: &'a mut Value, seg: &Segment, walked: &str) -> Result<&'a mut Value, String> {
    // Find the way with the shared walk (for its messages), then take it mutably.
    step(here, seg, walked)?;
    Ok(match (seg, here) {
        (Segment::Field(f), Value::Object(map)) => map.get_mut(f).expect("checked"),
        (Segment::Index(i), Value::Array(items)) => &mut items[*i],
        (Segment::Name(n), Value::Array(items)) => {
            items.iter_mut().find(|item| item.get("name").and_then(Value::as_str) == Some(n.as_str())).expect("checked")
        }
        _ => unreachable!("step checked the kind"),
    })
}

fn set_at(here: &mut Value, rest: &[Segment], new: &Value, walked: String) -> Result<usize, String> {
    let Some((seg, tail)) = rest.split_first() else {
        return replace(here, new, &walked).map(|()| 1);
    };
    let next = format!("{walked}{}", seg_text(seg, walked.is_empty()));
    if *seg == Segment::All {
        let Value::Array(items) = here else {
            return Err(format!("{} is {}, not a list", where_(&walked), kind(here)));
        };
        // Every item that has the rest of the path; an error only when none has it.
        let mut set = 0;
        let mut first_error = None;
        for item in items.iter_mut() {
            match set_at(item, tail, new, next.clone()) {
                Ok(n) => set += n,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        return match (set, first_error) {
            (0, Some(e)) => Err(format!("no item of {} has it: {e}", where_(&walked))),
            (0, None) => Err(format!("{} is an empty list", where_(&walked))),
            (n, _) => Ok(n),
        };
    }
    let child = step_mut(here, seg, &walked)?;
    set_at(child, tail, new, next)
}

fn replace(old: &mut Value, new: &Value, walked: &str) -> Result<(), String> {
    let fits = match (&*old, new) {
        (Value::Null, _) => true,
        (Value::Number(o), Value::Number(n)) => {
            if (o.is_u64() || o.is_i64()) && !(n.is_u64() || n.is_i64()) {
                return Err(format!("{} is a whole number, not {n}", where_(walked)));
            }
            true
        }
        (Value::Bool(_), Value::Bool(_)) | (Value::String(_), Value::String(_)) => true,
        (Value::Array(o), Value::Array(n)) => o.len() == n.len() || o.is_empty(),
        (Value::Object(o), _) => {
            let fields: Vec<&str> = o.keys().map(String::as_str).collect();
            return Err(format!("{} is a section: set one of its fields ({})", where_(walked), fields.join(", ")));
        }
        _ => false,
    };
    if !fits {
        let what = match (&*old, new) {
            (Value::Array(o), Value::Array(_)) => format!("a list of {} values", o.len()),
            (o, _) => kind(o).to_string(),
        };
        return Err(format!("{} takes {what}, not {}", where_(walked), new));
    }
    *old = new.clone();
    Ok(())
}

/// Reads a value as written after `=` on the command line: RON (`0.5`, `true`, `"text"`,
/// `(1.0, 2.0)`, `[1, 2]`), and anything else as text, so `strategy=Random` names a variant.
pub fn parse_value(text: &str) -> Value {
    let text = text.trim();
    match ron::from_str::<Value>(text) {
        Ok(Value::Null) if text != "None" && text != "()" => Value::String(text.to_string()),
        Ok(v) => v,
        Err(_) => Value::String(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scene() -> Value {
        json!({
            "seed": 1,
            "comms": {"probability": 1.0, "link": true},
            "robots": [
                {"name": "alpha", "pose": [1.0, 2.0, 90.0], "battery": {"initial": null, "capacity": 20.0},
                 "controller": {"Network": {"low_power": 0.3}}},
                {"name": "beta", "pose": [1.0, 2.0, 90.0], "battery": {"initial": 5.0, "capacity": 20.0},
                 "controller": {"Explorer": {"strategy": "Rings"}}},
            ]
        })
    }

    fn set(v: &mut Value, path: &str, value: &str) -> Result<usize, String> {
        ValuePath::parse(path)?.set(v, &parse_value(value))
    }

    #[test]
    fn paths_parse_into_fields_names_indices_and_all() {
        let p = ValuePath::parse("robots[alpha].controller.Network.low_power").unwrap();
        assert_eq!(
            p.segments,
            vec![
                Segment::Field("robots".into()),
                Segment::Name("alpha".into()),
                Segment::Field("controller".into()),
                Segment::Field("Network".into()),
                Segment::Field("low_power".into())
            ]
        );
        assert_eq!(ValuePath::parse("robots[2].x").unwrap().segments[1], Segment::Index(2));
        assert_eq!(ValuePath::parse("robots[*].x").unwrap().segments[1], Segment::All);
        assert_eq!(ValuePath::parse("").unwrap_err(), "an empty path");
        assert_eq!(ValuePath::parse("a..b").unwrap_err(), "a field name was expected at character 3");
        assert_eq!(ValuePath::parse("robots[alpha.x").unwrap_err(), "the `[` at character 7 is never closed");
        assert_eq!(ValuePath::parse("a b").unwrap_err(), "unexpected ` ` at character 2");
    }

    #[test]
    fn values_are_set_by_name_index_and_for_every_item_that_has_the_path() {
        let mut v = scene();
        assert_eq!(set(&mut v, "comms.probability", "0.5"), Ok(1));
        assert_eq!(v["comms"]["probability"], json!(0.5));
        assert_eq!(set(&mut v, "robots[alpha].battery.initial", "40"), Ok(1));
        assert_eq!(v["robots"][0]["battery"]["initial"], json!(40));
        assert_eq!(set(&mut v, "robots[1].pose", "(3.0, 1.0, 0.0)"), Ok(1));
        assert_eq!(v["robots"][1]["pose"], json!([3.0, 1.0, 0.0]));
        assert_eq!(set(&mut v, "robots[*].controller.Network.low_power", "0.2"), Ok(1));
        assert_eq!(v["robots"][0]["controller"]["Network"]["low_power"], json!(0.2));
        assert_eq!(set(&mut v, "robots[*].battery.capacity", "50.0"), Ok(2));
        assert_eq!(set(&mut v, "robots[beta].controller.Explorer.strategy", "Random"), Ok(1));
        assert_eq!(v["robots"][1]["controller"]["Explorer"]["strategy"], json!("Random"));
        assert_eq!(set(&mut v, "comms.link", "false"), Ok(1));
        assert_eq!(v["comms"]["link"], json!(false));
    }

    #[test]
    fn wrong_paths_and_values_are_named() {
        let mut v = scene();
        let e = set(&mut v, "comms.probabilty", "0.5").unwrap_err();
        assert_eq!(e, "comms.probabilty: `comms` has no field `probabilty` (its fields: link, probability)");
        let e = set(&mut v, "robots[delta].battery.initial", "1").unwrap_err();
        assert_eq!(e, "robots[delta].battery.initial: `robots` has no item named \"delta\" (its names: alpha, beta)");
        let e = set(&mut v, "robots[5].pose", "(1.0, 1.0, 0.0)").unwrap_err();
        assert!(e.contains("`robots` has 2 items, there is no item 5"), "{e}");
        let e = set(&mut v, "comms.probability", "high").unwrap_err();
        assert_eq!(e, "comms.probability: `comms.probability` takes a number, not \"high\"");
        let e = set(&mut v, "seed", "1.5").unwrap_err();
        assert_eq!(e, "seed: `seed` is a whole number, not 1.5");
        let e = set(&mut v, "comms", "1").unwrap_err();
        assert_eq!(e, "comms: `comms` is a section: set one of its fields (link, probability)");
        let e = set(&mut v, "robots[0].pose", "(1.0, 2.0)").unwrap_err();
        assert!(e.contains("takes a list of 3 values"), "{e}");
        let e = set(&mut v, "robots[*].controller.Wander.speed", "1").unwrap_err();
        assert!(e.starts_with("robots[*].controller.Wander.speed: no item of `robots` has it:"), "{e}");
        let e = set(&mut v, "seed.x", "1").unwrap_err();
        assert_eq!(e, "seed.x: `seed` is a number, it has no field `x`");
    }

    #[test]
    fn get_reads_one_value() {
        let v = scene();
        let p = ValuePath::parse("robots[beta].battery.initial").unwrap();
        assert_eq!(p.get(&v), Ok(&json!(5.0)));
        assert!(ValuePath::parse("robots[*].name").unwrap().get(&v).is_err());
    }

    #[test]
    fn command_line_values_are_ron_or_text() {
        assert_eq!(parse_value("0.5"), json!(0.5));
        assert_eq!(parse_value("12"), json!(12));
        assert_eq!(parse_value("true"), json!(true));
        assert_eq!(parse_value("\"a b\""), json!("a b"));
        assert_eq!(parse_value("Random"), json!("Random"));
        assert_eq!(parse_value("[1, 2]"), json!([1, 2]));
    }
}
