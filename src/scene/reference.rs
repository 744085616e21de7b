//! The manual's field reference of scene files (`docs/scene-reference.md`), written from the
//! scene types themselves: their JSON Schema (schemars, from the serde attributes and the doc
//! comments) gives every field's type, default and meaning, so the reference cannot drift from
//! the code. A unit test fails when the file differs from what this writes;
//! `CRSIM_WRITE_REFERENCE=1 cargo test --lib scene_reference` writes it anew.

use serde_json::Value;

use super::schema::SceneFile;

/// The reference as Markdown.
pub fn scene_reference() -> String {
    let schema = serde_json::to_value(schemars::schema_for!(SceneFile)).unwrap_or(Value::Null);
    let mut out = String::from(
        "# Scene file reference\n\n\
         Every field of a scene file, written from crsim's own scene types (their doc comments and \
         serde defaults) by `CRSIM_WRITE_REFERENCE=1 cargo test --lib scene_reference`; the test \
         fails when this page differs from the code. How the parts work together is in \
         [Scenes](scenes.md). A field without a default must be given; `Some(x)` may be written \
         as plain `x`; a list's items are written `(field: value, ...)`.\n\n",
    );
    out += &section("SceneFile", &schema);
    if let Some(Value::Object(defs)) = schema.get("$defs") {
        for (name, def) in defs {
            out += &section(name, def);
        }
    }
    out
}

/// One type: a table of its fields, or the list of an enum's variants.
fn section(name: &str, def: &Value) -> String {
    let mut out = format!("## {name}\n\n");
    if let Some(d) = description(def) {
        out += &format!("{d}\n\n");
    }
    if let Some(variants) = def.get("oneOf").or_else(|| def.get("anyOf")).and_then(Value::as_array) {
        out += "One of:\n\n";
        for v in variants {
            out += &format!("- {}\n", variant(v));
        }
        out += "\n";
    } else if let Some(Value::Array(names)) = def.get("enum") {
        let names: Vec<String> = names.iter().map(|n| format!("`{}`", plain(n))).collect();
        out += &format!("One of {}.\n\n", names.join(", "));
    } else if let Some(Value::Object(props)) = def.get("properties") {
        out += &fields_table(props, def);
    }
    out
}

fn fields_table(props: &serde_json::Map<String, Value>, def: &Value) -> String {
    let required: Vec<&str> =
        def.get("required").and_then(Value::as_array).map_or(vec![], |r| r.iter().filter_map(Value::as_str).collect());
    let mut out = String::from("| field | type | default | meaning |\n|---|---|---|---|\n");
    for (field, p) in props {
        let default = match p.get("default") {
            Some(d) => format!("`{}`", ron_like(d)),
            None if required.contains(&field.as_str()) => "required".into(),
            None => "none".into(),
        };
        let meaning = description(p).unwrap_or_default();
        out += &format!("| `{field}` | {} | {default} | {} |\n", type_of(p), meaning.replace('|', "\\|"));
    }
    out + "\n"
}

/// An enum variant: a name, or a name with its fields.
fn variant(v: &Value) -> String {
    let said = description(v).map_or(String::new(), |d| format!(": {d}"));
    if let Some(name) = v.get("const").or_else(|| v.get("enum").and_then(|e| e.get(0))) {
        return format!("`{}`{said}", plain(name));
    }
    if let Some(Value::Object(props)) = v.get("properties")
        && let Some((name, inner)) = props.iter().next()
    {
        let fields = match inner.get("properties") {
            Some(Value::Object(f)) => {
                let list: Vec<String> = f
                    .iter()
                    .map(|(k, p)| {
                        let d = p.get("default").map_or(String::new(), |d| format!(" = {}", ron_like(d)));
                        format!("{k}: {}{d}", type_of(p))
                    })
                    .collect();
                list.join(", ")
            }
            _ => String::new(),
        };
        return format!("`{name}({fields})`{said}");
    }
    format!("{}{said}", type_of(v))
}

/// A type in words, with a link to a type of its own.
fn type_of(p: &Value) -> String {
    if let Some(Value::String(r)) = p.get("$ref") {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("[{name}](#{})", name.to_lowercase());
    }
    if let Some(Value::Array(any)) = p.get("anyOf") {
        let kinds: Vec<&Value> = any.iter().filter(|v| v.get("type") != Some(&Value::from("null"))).collect();
        let optional = kinds.len() < any.len();
        let named: Vec<String> = kinds.iter().map(|k| type_of(k)).collect();
        return format!("{}{}", named.join(" or "), if optional { ", optional" } else { "" });
    }
    let kinds: Vec<&str> = match p.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let optional = kinds.contains(&"null");
    let base = kinds.iter().find(|k| **k != "null").copied().unwrap_or("");
    let word = match base {
        "array" => match (p.get("prefixItems"), p.get("items")) {
            (Some(Value::Array(parts)), _) => {
                format!("({})", parts.iter().map(type_of).collect::<Vec<_>>().join(", "))
            }
            (_, Some(items)) => format!("list of {}", type_of(items)),
            _ => "list".into(),
        },
        "integer" => match p.get("format").and_then(Value::as_str) {
            Some(f) => format!("integer ({f})"),
            None => "integer".into(),
        },
        "number" => "number".into(),
        "boolean" => "bool".into(),
        "string" => "text".into(),
        "object" => "(fields)".into(),
        _ => "any".into(),
    };
    if optional { format!("{word}, optional") } else { word }
}

/// A default value as a scene file writes it.
fn ron_like(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(ron_like).collect();
            if items.len() == 2 && items.iter().all(Value::is_number) {
                format!("({})", inner.join(", "))
            } else {
                format!("[{}]", inner.join(", "))
            }
        }
        Value::Object(map) => {
            let inner: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {}", ron_like(v))).collect();
            format!("({})", inner.join(", "))
        }
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or_default();
            // Most scene numbers are f32: shown as the f32 they are (0.05, not 0.0500000007).
            let y = x as f32;
            let shown = if f64::from(y) == x { format!("{y}") } else { format!("{x}") };
            if shown.contains(['.', 'e', 'N', 'i']) { shown } else { format!("{shown}.0") }
        }
        // A variant of an enum is written bare in RON; other text in quotes.
        Value::String(t) if t.starts_with(|c: char| c.is_ascii_uppercase()) && t.chars().all(char::is_alphanumeric) => {
            t.clone()
        }
        other => other.to_string(),
    }
}

fn plain(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// A schema's description on one line.
fn description(v: &Value) -> Option<String> {
    let d = v.get("description")?.as_str()?;
    Some(d.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scene_reference_in_the_manual_is_written_from_the_scene_types() {
        let wanted = scene_reference();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scene-reference.md");
        if std::env::var_os("CRSIM_WRITE_REFERENCE").is_some() {
            std::fs::write(path, &wanted).unwrap();
        }
        let there = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            there == wanted,
            "docs/scene-reference.md differs from the scene types: run CRSIM_WRITE_REFERENCE=1 cargo test --lib \
             scene_reference"
        );
        // Every type a scene names has its section, and the fields carry their defaults.
        for heading in ["## SceneFile", "## RobotSpec", "## ControllerSpec", "## BotlinkSpec", "## ProgramsSpec"] {
            assert!(wanted.contains(heading), "{heading}");
        }
        assert!(wanted.contains("| `connect_timeout` | number | `5.0` |"), "a default from its serde function");
        assert!(wanted.contains("| `arena` | [ArenaSpec](#arenaspec) | required |"));
    }
}
