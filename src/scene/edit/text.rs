//! Saving an edited scene into the text it came from: every value the editor did not change
//! keeps its text as written, comments and layout included; changed values are replaced in
//! place, field by field; new items are appended to their list in the list's own layout, and
//! deleted items are cut out.
//!
//! The text is read with a small RON scanner that knows strings, comments (nested `/* */` too)
//! and brackets, and finds the byte spans of a struct's fields and a list's elements. Values are
//! compared through their compact serialisation (`ron::to_string`), so `2.0` and `2.00`, or
//! `range: 3.0` and `range: Some(3.0)`, count as the same value and keep their text.

use std::ops::Range;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a scene's text could not be edited in place.
#[derive(Debug, Clone, PartialEq)]
pub struct TextError {
    /// Byte offset in the text.
    pub at: usize,
    pub message: String,
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {}: {}", self.at, self.message)
    }
}

fn fail<T>(at: usize, message: impl Into<String>) -> Result<T, TextError> {
    Err(TextError { at, message: message.into() })
}

/// One token of RON text: a bracket, a comma, a colon, or an atom (identifier, number, string,
/// character).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    Open(u8),
    Close(u8),
    Comma,
    Colon,
    Atom,
    /// The end of the text.
    End,
}

/// Skips whitespace, comments and `#![...]` attributes from `i`.
fn skip_trivia(s: &[u8], mut i: usize) -> Result<usize, TextError> {
    loop {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if s[i..].starts_with(b"//") {
            while i < s.len() && s[i] != b'\n' {
                i += 1;
            }
        } else if s[i..].starts_with(b"/*") {
            let start = i;
            let mut depth = 0;
            loop {
                if i >= s.len() {
                    return fail(start, "comment not closed");
                }
                if s[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if s[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if s[i..].starts_with(b"#!") {
            let (_, end) = balanced(s, i + 2)?;
            i = end;
        } else {
            return Ok(i);
        }
    }
}

/// The token at `i` (after trivia): its kind and span.
fn token(s: &[u8], i: usize) -> Result<(Tok, usize, usize), TextError> {
    let i = skip_trivia(s, i)?;
    let Some(&c) = s.get(i) else { return Ok((Tok::End, i, i)) };
    let one = |t| Ok((t, i, i + 1));
    match c {
        b'(' | b'[' | b'{' => one(Tok::Open(c)),
        b')' | b']' | b'}' => one(Tok::Close(c)),
        b',' => one(Tok::Comma),
        b':' => one(Tok::Colon),
        b'"' | b'\'' => Ok((Tok::Atom, i, quoted_end(s, i, c)?)),
        b'r' if matches!(s.get(i + 1), Some(b'"' | b'#')) => Ok((Tok::Atom, i, raw_string_end(s, i)?)),
        b'b' if s.get(i + 1) == Some(&b'"') => Ok((Tok::Atom, i, quoted_end(s, i + 1, b'"')?)),
        _ => {
            let mut j = i;
            while j < s.len() && !b"()[]{},:\"'/ \t\r\n".contains(&s[j]) {
                j += 1;
            }
            if j == i {
                return fail(i, format!("unexpected character {:?}", c as char));
            }
            Ok((Tok::Atom, i, j))
        }
    }
}

fn quoted_end(s: &[u8], i: usize, q: u8) -> Result<usize, TextError> {
    let mut j = i + 1;
    while j < s.len() {
        match s[j] {
            b'\\' => j += 2,
            c if c == q => return Ok(j + 1),
            _ => j += 1,
        }
    }
    fail(i, "string not closed")
}

fn raw_string_end(s: &[u8], i: usize) -> Result<usize, TextError> {
    let hashes = s[i + 1..].iter().take_while(|&&c| c == b'#').count();
    let open = i + 1 + hashes;
    if s.get(open) != Some(&b'"') {
        return fail(i, "bad raw string");
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    s[open + 1..]
        .windows(close.len())
        .position(|w| w == close.as_slice())
        .map(|p| open + 1 + p + close.len())
        .ok_or(TextError { at: i, message: "raw string not closed".into() })
}

/// From an opening bracket at `i`: its span up to and including the matching close.
fn balanced(s: &[u8], i: usize) -> Result<(usize, usize), TextError> {
    let (t, start, mut end) = token(s, i)?;
    let Tok::Open(_) = t else { return fail(start, "expected a bracket") };
    let mut depth = 1;
    while depth > 0 {
        let (t, _, e) = token(s, end)?;
        match t {
            Tok::Open(_) => depth += 1,
            Tok::Close(_) => depth -= 1,
            Tok::End => return fail(start, "bracket not closed"),
            _ => {}
        }
        end = e;
    }
    Ok((start, end))
}

/// One value starting at `i` (after trivia): its span, up to the comma or closing bracket that
/// ends it.
fn value(s: &[u8], i: usize) -> Result<Range<usize>, TextError> {
    let (_, start, _) = token(s, i)?;
    let mut end = start;
    loop {
        let (t, ts, te) = token(s, end)?;
        match t {
            Tok::Comma | Tok::Close(_) | Tok::Colon | Tok::End if end > start => return Ok(start..end),
            Tok::Comma | Tok::Close(_) | Tok::Colon | Tok::End => return fail(ts, "expected a value"),
            Tok::Open(_) => end = balanced(s, ts)?.1,
            Tok::Atom => end = te,
        }
    }
}

/// One entry of a struct or list from `at`: its value's span and, when a comma follows, the
/// position just after it.
fn entry(s: &[u8], at: usize) -> Result<(Range<usize>, Option<usize>), TextError> {
    let v = value(s, at)?;
    let (t, _, after) = token(s, v.end)?;
    Ok((v, (t == Tok::Comma).then_some(after)))
}

/// A struct as written: `Name(field: value, …)` or `(field: value, …)`.
#[derive(Debug)]
struct StructSpans {
    /// The variant or struct name, if written.
    name: Option<Range<usize>>,
    /// Just after `(`, and the position of `)`.
    open: usize,
    close: usize,
    fields: Vec<FieldSpans>,
}

#[derive(Debug)]
struct FieldSpans {
    name: String,
    /// Where the field's name starts.
    start: usize,
    value: Range<usize>,
    /// Just after the field's comma, when it has one.
    comma: Option<usize>,
}

impl StructSpans {
    fn field(&self, name: &str) -> Option<&FieldSpans> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Reads `span` of `s` as a struct with named fields; `None` when it is something else (a tuple,
/// a list, a number, a unit variant).
fn struct_at(s: &[u8], span: Range<usize>) -> Result<Option<StructSpans>, TextError> {
    let (t, start, end) = token(s, span.start)?;
    let (name, open_at) = match t {
        Tok::Atom => {
            let (t2, s2, _) = token(s, end)?;
            if t2 != Tok::Open(b'(') || s2 >= span.end {
                return Ok(None);
            }
            (Some(start..end), s2)
        }
        Tok::Open(b'(') => (None, start),
        _ => return Ok(None),
    };
    let (_, close_end) = balanced(s, open_at)?;
    if close_end != span.end {
        return Ok(None);
    }
    let close = close_end - 1;
    let mut fields = Vec::new();
    let mut i = open_at + 1;
    loop {
        let (t, ts, te) = token(s, i)?;
        if ts >= close {
            break;
        }
        if t != Tok::Atom {
            return Ok(None);
        }
        let (t2, _, colon_end) = token(s, te)?;
        if t2 != Tok::Colon {
            return Ok(None);
        }
        let (v, comma) = entry(s, colon_end)?;
        let name = String::from_utf8_lossy(&s[ts..te]).into_owned();
        fields.push(FieldSpans { name, start: ts, value: v.clone(), comma });
        i = comma.unwrap_or(v.end);
        if comma.is_none() {
            break;
        }
    }
    Ok(Some(StructSpans { name, open: open_at + 1, close, fields }))
}

/// A list as written: `[a, b, …]`.
#[derive(Debug)]
struct ListSpans {
    /// Just after `[`, and the position of `]`.
    open: usize,
    close: usize,
    /// Each element's value span and the end of its comma, if any.
    items: Vec<(Range<usize>, Option<usize>)>,
}

fn list_at(s: &[u8], span: Range<usize>) -> Result<Option<ListSpans>, TextError> {
    let (t, start, _) = token(s, span.start)?;
    if t != Tok::Open(b'[') {
        return Ok(None);
    }
    let (_, end) = balanced(s, start)?;
    if end != span.end {
        return Ok(None);
    }
    let close = end - 1;
    let mut items = Vec::new();
    let mut i = start + 1;
    loop {
        let (_, ts, _) = token(s, i)?;
        if ts >= close {
            break;
        }
        let (v, comma) = entry(s, ts)?;
        items.push((v.clone(), comma));
        match comma {
            Some(c) => i = c,
            None => break,
        }
    }
    Ok(Some(ListSpans { open: start + 1, close, items }))
}

/// The whole text's top-level value: its span.
fn top_value(s: &[u8]) -> Result<Range<usize>, TextError> {
    value(s, 0)
}

/// Compact RON as people write it: a space after every comma and colon outside strings.
pub fn spaced(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len() + compact.len() / 4);
    let mut in_str = false;
    let mut escaped = false;
    for c in compact.chars() {
        out.push(c);
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
        } else if c == '"' {
            in_str = true;
        } else if c == ',' || c == ':' {
            out.push(' ');
        }
    }
    out
}

/// The compact serialisation used to compare values.
pub fn compact<T: Serialize>(v: &T) -> String {
    ron::to_string(v).unwrap_or_default()
}

/// `item` in RON with only the fields that differ from what leaving them out gives (defaults
/// dropped), spaced; written over several lines indented by `indent` when longer than a line.
pub fn minimal<T: Serialize + DeserializeOwned + PartialEq>(item: &T, indent: &str) -> String {
    let full = compact(item);
    let s = full.as_bytes();
    let Ok(Some(st)) = struct_at(s, 0..s.len()) else { return spaced(&full) };
    let mut keep: Vec<bool> = vec![true; st.fields.len()];
    let render = |keep: &[bool]| -> String {
        let parts: Vec<&str> =
            st.fields.iter().zip(keep).filter(|(_, k)| **k).map(|(f, _)| &full[f.start..f.value.end]).collect();
        let name = st.name.clone().map_or("", |r| &full[r]);
        format!("{name}({})", parts.join(","))
    };
    for i in 0..keep.len() {
        keep[i] = false;
        let same = ron::from_str::<T>(&render(&keep)).is_ok_and(|back| back == *item);
        if !same {
            keep[i] = true;
        }
    }
    let one_line = spaced(&render(&keep));
    if one_line.len() + indent.len() <= 96 {
        return one_line;
    }
    // Several lines, one field per line.
    let name = st.name.clone().map_or("", |r| &full[r]);
    let mut out = format!("{name}(\n");
    for (f, _) in st.fields.iter().zip(&keep).filter(|(_, k)| **k) {
        out.push_str(&format!("{indent}    {}: {},\n", f.name, spaced(&full[f.value.clone()])));
    }
    out.push_str(&format!("{indent})"));
    out
}

/// Replacements of byte ranges in the original text.
#[derive(Debug, Default)]
struct Edits(Vec<(Range<usize>, String)>);

impl Edits {
    fn replace(&mut self, r: Range<usize>, text: String) {
        self.0.push((r, text));
    }
    fn insert(&mut self, at: usize, text: String) {
        self.0.push((at..at, text));
    }
    fn apply(mut self, text: &str) -> String {
        // Stable by position; several inserts at one place keep the order they were made in.
        self.0.sort_by_key(|(r, _)| (r.start, r.end));
        let mut out = String::with_capacity(text.len() + 256);
        let mut at = 0;
        // New lines end as the file's lines do.
        let crlf = text.contains("\r\n");
        for (r, t) in self.0 {
            out.push_str(&text[at..r.start.max(at)]);
            if crlf {
                out.push_str(&t.replace('\n', "\r\n"));
            } else {
                out.push_str(&t);
            }
            at = at.max(r.end);
        }
        out.push_str(&text[at..]);
        out
    }
}

/// The indentation of the line `at` is on.
fn indent_of(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let rest = &text[line_start..];
    &rest[..rest.len() - rest.trim_start_matches([' ', '\t']).len()]
}

/// Changes the value written at `span` from `old` to `new` (both compact serialisations):
/// unchanged fields and elements keep their text.
fn diff_value(text: &str, span: Range<usize>, old: &str, new: &str, edits: &mut Edits) -> Result<(), TextError> {
    if old == new {
        return Ok(());
    }
    let s = text.as_bytes();
    if let (Some(t), Some(o), Some(n)) = (
        struct_at(s, span.clone())?,
        struct_at(old.as_bytes(), 0..old.len())?,
        struct_at(new.as_bytes(), 0..new.len())?,
    ) {
        let name = |st: &StructSpans, src: &str| st.name.clone().map(|r| src[r].to_string());
        // A struct keeps its text only while it is the same variant.
        let same_kind = name(&o, old) == name(&n, new)
            && t.name.as_ref().is_none_or(|r| Some(&text[r.clone()]) == name(&n, new).as_deref());
        if same_kind {
            return diff_fields(text, &t, old, &o, new, &n, edits);
        }
    }
    if let (Some(t), Some(o), Some(n)) =
        (list_at(s, span.clone())?, list_at(old.as_bytes(), 0..old.len())?, list_at(new.as_bytes(), 0..new.len())?)
        && t.items.len() == o.items.len()
        && o.items.len() == n.items.len()
    {
        for ((tv, _), ((ov, _), (nv, _))) in t.items.iter().zip(o.items.iter().zip(&n.items)) {
            diff_value(text, tv.clone(), &old[ov.clone()], &new[nv.clone()], edits)?;
        }
        return Ok(());
    }
    edits.replace(span, spaced(new));
    Ok(())
}

/// Field by field: changed fields get new values, fields the text leaves out are appended.
fn diff_fields(
    text: &str,
    t: &StructSpans,
    old: &str,
    o: &StructSpans,
    new: &str,
    n: &StructSpans,
    edits: &mut Edits,
) -> Result<(), TextError> {
    let mut appended = Vec::new();
    for nf in &n.fields {
        let nv = &new[nf.value.clone()];
        let ov = o.field(&nf.name).map(|f| &old[f.value.clone()]);
        if ov == Some(nv) {
            continue;
        }
        match (t.field(&nf.name), ov) {
            (Some(tf), Some(ov)) => diff_value(text, tf.value.clone(), ov, nv, edits)?,
            (Some(tf), None) => edits.replace(tf.value.clone(), spaced(nv)),
            (None, _) => appended.push(format!("{}: {}", nf.name, spaced(nv))),
        }
    }
    append_entries(text, t.open, t.close, t.fields.last().map(|f| (f.start, f.value.end, f.comma)), &appended, edits);
    Ok(())
}

/// Appends `entries` (fields or list elements) inside the brackets `open..close`, after the last
/// entry (its start, end and comma), in the layout the brackets already have: one per line when
/// they span lines.
fn append_entries(
    text: &str,
    open: usize,
    close: usize,
    last: Option<(usize, usize, Option<usize>)>,
    entries: &[String],
    edits: &mut Edits,
) {
    if entries.is_empty() {
        return;
    }
    let multiline = text[open..close].contains('\n');
    match last {
        Some((start, end, comma)) if multiline => {
            let indent = indent_of(text, start).to_string();
            let mut add = String::new();
            if comma.is_none() {
                add.push(',');
            }
            for e in entries {
                add.push_str(&format!("\n{indent}{e},"));
            }
            edits.insert(comma.unwrap_or(end), add);
        }
        Some((_, end, _)) => {
            // One line: `(a: 1, b: 2)` gains `, c: 3` after its last entry.
            let add: String = entries.iter().map(|e| format!(", {e}")).collect();
            edits.insert(end, add);
        }
        None if multiline => {
            let outer = indent_of(text, open.saturating_sub(1)).to_string();
            let add: String = entries.iter().map(|e| format!("\n{outer}    {e},")).collect();
            edits.insert(open, add);
        }
        None => edits.replace(open..close, entries.join(", ")),
    }
}

/// One of the scene's lists of items, as the editor changed it.
pub struct ListChange {
    /// The field's name in the scene: `robots`, `pens`, …
    pub field: &'static str,
    /// Each element's compact serialisation in the text's scene, by index in the text.
    pub old: Vec<String>,
    /// Each element now: where it came from in the text (`None` for new ones), its compact
    /// serialisation, and its text when new.
    pub new: Vec<(Option<usize>, String, String)>,
}

/// Writes the edited scene into `text`: `old` and `new` are the compact serialisations of the
/// whole scene before and after (with the item lists left to `lists`).
pub fn save_into(text: &str, old: &str, new: &str, lists: &[ListChange]) -> Result<String, TextError> {
    let s = text.as_bytes();
    let top = top_value(s)?;
    let Some(t) = struct_at(s, top.clone())? else { return fail(top.start, "the scene is not a struct") };
    let o = struct_at(old.as_bytes(), 0..old.len())?.ok_or(TextError { at: 0, message: "old scene".into() })?;
    let n = struct_at(new.as_bytes(), 0..new.len())?.ok_or(TextError { at: 0, message: "new scene".into() })?;
    let mut edits = Edits::default();
    let mut appended = Vec::new();
    for nf in &n.fields {
        let nv = &new[nf.value.clone()];
        if let Some(list) = lists.iter().find(|l| l.field == nf.name) {
            let tf = t.field(&nf.name);
            match tf.map(|f| list_at(s, f.value.clone())).transpose()?.flatten() {
                Some(spans) => diff_list(text, &spans, list, &mut edits)?,
                None if list.new.is_empty() => {}
                None => {
                    // The text has no such list: write it whole, one item per line.
                    let outer = t.fields.last().map_or("", |f| indent_of(text, f.start)).to_string();
                    let mut body = format!("{}: [", nf.name);
                    for (_, _, item) in &list.new {
                        body.push_str(&format!("\n{outer}    {item},"));
                    }
                    body.push_str(&format!("\n{outer}]"));
                    match tf {
                        Some(f) => edits.replace(f.value.clone(), body[nf.name.len() + 2..].to_string()),
                        None => appended.push(body),
                    }
                }
            }
            continue;
        }
        let ov = o.field(&nf.name).map(|f| &old[f.value.clone()]);
        if ov == Some(nv) {
            continue;
        }
        match (t.field(&nf.name), ov) {
            (Some(tf), Some(ov)) => diff_value(text, tf.value.clone(), ov, nv, &mut edits)?,
            (Some(tf), None) => edits.replace(tf.value.clone(), spaced(nv)),
            (None, _) => appended.push(format!("{}: {}", nf.name, spaced(nv))),
        }
    }
    append_entries(
        text,
        t.open,
        t.close,
        t.fields.last().map(|f| (f.start, f.value.end, f.comma)),
        &appended,
        &mut edits,
    );
    Ok(edits.apply(text))
}

/// One list: deleted elements cut out with their comma and, when they had a line to themselves,
/// the line; kept ones diffed; new ones appended.
fn diff_list(text: &str, spans: &ListSpans, list: &ListChange, edits: &mut Edits) -> Result<(), TextError> {
    let mut kept = vec![false; spans.items.len()];
    for (origin, now, _) in &list.new {
        if let Some(j) = *origin
            && j < spans.items.len()
        {
            kept[j] = true;
            diff_value(text, spans.items[j].0.clone(), &list.old[j], now, edits)?;
        }
    }
    let b = text.as_bytes();
    for (j, (span, comma)) in spans.items.iter().enumerate() {
        if kept[j] {
            continue;
        }
        let mut start = span.start;
        let mut end = comma.unwrap_or(span.end);
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let rest_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
        if text[line_start..start].trim().is_empty() && text[end..rest_end].trim().is_empty() {
            // The element had its line(s) to itself: remove them whole.
            start = line_start;
            end = (rest_end + 1).min(text.len());
        } else {
            while end < b.len() && b[end] == b' ' {
                end += 1;
            }
        }
        edits.replace(start..end, String::new());
    }
    let last_kept = spans.items.iter().zip(&kept).rev().find(|(_, k)| **k).map(|((v, c), _)| (v.start, v.end, *c));
    let added: Vec<String> = list.new.iter().filter(|(o, _, _)| o.is_none()).map(|(_, _, t)| t.clone()).collect();
    if last_kept.is_none() && !added.is_empty() {
        // Every element was deleted, or there were none: the new ones go first in the brackets.
        let outer = indent_of(text, spans.open.saturating_sub(1)).to_string();
        let mut add: String = added.iter().map(|e| format!("\n{outer}    {e},")).collect();
        if !text[spans.open..spans.close].contains('\n') {
            add.push('\n');
            add.push_str(&outer);
        }
        edits.insert(spans.open, add);
        return Ok(());
    }
    append_entries(text, spans.open, spans.close, last_kept, &added, edits);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_fields_and_elements_skip_comments_and_strings() {
        let text = "// head\nS(\n  a: 1, // one, two\n  b: \"x, y)\", /* c: 3 */\n  l: [(p: 1), (p: 2)],\n)";
        let s = text.as_bytes();
        let top = top_value(s).unwrap();
        let st = struct_at(s, top).unwrap().unwrap();
        let names: Vec<&str> = st.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "l"]);
        assert_eq!(&text[st.fields[1].value.clone()], "\"x, y)\"");
        let l = list_at(s, st.fields[2].value.clone()).unwrap().unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!(&text[l.items[1].0.clone()], "(p: 2)");
    }

    #[test]
    fn spaced_adds_spaces_outside_strings_only() {
        assert_eq!(spaced("(name:\"a,b:c\",pos:(1.0,2.0))"), "(name: \"a,b:c\", pos: (1.0, 2.0))");
    }

    #[test]
    fn a_changed_field_is_replaced_and_the_rest_kept() {
        let text = "(a: 1, /* keep */ b: (x: 2.0,  y: 3.00))";
        let out = save_like(text, "(a:1,b:(x:2.0,y:3.0))", "(a:1,b:(x:2.5,y:3.0))");
        assert_eq!(out, "(a: 1, /* keep */ b: (x: 2.5,  y: 3.00))");
    }

    #[test]
    fn a_field_the_text_leaves_out_is_appended_in_its_layout() {
        let one = save_like("(a: 1)", "(a:1,b:None)", "(a:1,b:Some(2.0))");
        assert_eq!(one, "(a: 1, b: Some(2.0))");
        let lines = save_like("(\n    a: 1,\n)", "(a:1,b:None)", "(a:1,b:Some(2.0))");
        assert_eq!(lines, "(\n    a: 1,\n    b: Some(2.0),\n)");
        let no_comma = save_like("(\n    a: 1\n)", "(a:1,b:None)", "(a:1,b:Some(2.0))");
        assert_eq!(no_comma, "(\n    a: 1,\n    b: Some(2.0),\n)");
    }

    #[test]
    fn another_variant_is_written_whole() {
        let text = "(c: Explorer(strategy: Rings))";
        let out = save_like(text, "(c:Explorer(strategy:Rings,sonar:false))", "(c:Wander(speed:0.5))");
        assert_eq!(out, "(c: Wander(speed: 0.5))");
        let same =
            save_like(text, "(c:Explorer(strategy:Rings,sonar:false))", "(c:Explorer(strategy:Rings,sonar:true))");
        assert_eq!(same, "(c: Explorer(strategy: Rings, sonar: true))");
    }

    fn save_like(text: &str, old: &str, new: &str) -> String {
        let s = text.as_bytes();
        let t = struct_at(s, top_value(s).unwrap()).unwrap().unwrap();
        let o = struct_at(old.as_bytes(), 0..old.len()).unwrap().unwrap();
        let n = struct_at(new.as_bytes(), 0..new.len()).unwrap().unwrap();
        let mut edits = Edits::default();
        diff_fields(text, &t, old, &o, new, &n, &mut edits).unwrap();
        edits.apply(text)
    }

    #[test]
    fn bad_text_is_an_error_not_a_panic() {
        for text in ["", "(", "(a: ", "(a: \"x)", "/* open", "(a: 1,, b: 2)", "[1, 2", "r#\"x", "#!["] {
            let s = text.as_bytes();
            let r = top_value(s).and_then(|v| struct_at(s, v));
            assert!(r.is_err() || r.as_ref().is_ok_and(|o| o.is_none()), "{text:?}: {r:?}");
        }
    }
}
