//! Hostile input for every parser and server's frame reader, as a fuzzer gives it: the shipped
//! scenes with each number made huge, tiny, negative or not a number, damaged recordings (bits
//! flipped across the file, cuts, chunks spliced), program and VirtualRobot frames cut and mangled,
//! sweep files, `--set` values and network files, HTTP requests sent to the VirtualRobot server's
//! reader and bot-link packets. Each must give an answer (a value or an error
//! naming what is wrong), never a panic, an abort or a hang; how many inputs each target tried
//! is printed (`cargo test --test fuzz -- --nocapture`) and quoted in the README.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crsim::record::Recording;

/// Values a mutated number becomes.
const HOSTILE: [&str; 14] = [
    "1e30",
    "-1e30",
    "1e-30",
    "0",
    "-0.0",
    "-1",
    "NaN",
    "inf",
    "-inf",
    "1e20",
    "4294967295",
    "18446744073709551615",
    "1e6",
    "0.0001",
];

/// The byte ranges of the numbers in `text` (an optional sign, digits, a fraction, an exponent).
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit() && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if !starts {
            i += 1;
            continue;
        }
        let from = if i > 0 && b[i - 1] == b'-' { i - 1 } else { i };
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.' || b[j] == b'e' || b[j] == b'E') {
            j += 1;
            if j < b.len() && (b[j - 1] == b'e' || b[j - 1] == b'E') && b[j] == b'-' {
                j += 1;
            }
        }
        out.push((from, j));
        i = j;
    }
    out
}

/// Runs `f`, failing the test with `what` named if it panics or takes more than a generous bound
/// (a hang detector, not a speed target).
fn survives<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| panic!("panicked on {what}"));
    assert!(start.elapsed() < Duration::from_secs(20), "{what} took {:?}", start.elapsed());
    out
}

fn shipped(folder: &str, ext: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

#[test]
fn every_number_of_every_shipped_scene_made_hostile_is_answered() {
    let (mut tried, mut rejected) = (0u64, 0u64);
    let started = Instant::now();
    for path in shipped("scenes", "ron") {
        let text = std::fs::read_to_string(&path).unwrap();
        let shown = path.file_name().unwrap().to_string_lossy().to_string();
        for (from, to) in numbers(&text) {
            for value in HOSTILE {
                let mutant = format!("{}{value}{}", &text[..from], &text[to..]);
                let what = format!("{shown} with {} made {value}", &text[from..to]);
                let result = survives(&what, || crsim::scene::parse_scene(&mutant, &shown));
                tried += 1;
                if let Err(e) = result {
                    rejected += 1;
                    assert!(e.to_string().contains(&shown), "{what}: the error names the file: {e}");
                }
            }
        }
    }
    println!("scenes: {tried} mutants, {rejected} rejected with an error, in {:.1} s", started.elapsed().as_secs_f64());
    assert!(tried > 5_000, "{tried}");
}

#[test]
fn scenes_that_demand_unbounded_memory_are_refused_by_check_within_a_memory_cap() {
    let dir = common::Scratch::new("fuzz-huge");
    let explorer = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/explorer.ron")).unwrap();
    let arena = explorer.find("arena: (").expect("the explorer scene has an arena");
    let end = arena + explorer[arena..].find(')').unwrap() + 1;
    let cases = [
        ("huge-arena.ron", format!("{}arena: (width: 1e30, height: 1e30){}", &explorer[..arena], &explorer[end..])),
        ("wide-room.ron", format!("{}arena: (width: 1e20, height: 10.0){}", &explorer[..arena], &explorer[end..])),
    ];
    for (name, text) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        // Under a 4 GiB address-space cap, as the fuzzing that found it ran.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v 4194304; exec '{}' check '{}'", env!("CARGO_BIN_EXE_crsim"), file.display()))
            .output()
            .unwrap();
        let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{name}: {shown}");
        assert!(shown.contains("arena: size") && shown.contains("each side from 0.001 to 100000 m"), "{name}: {shown}");
    }
}

/// A recording of `steps` steps of a shipped scene.
fn recording(dir: &Path, scene: &str, steps: u64) -> PathBuf {
    let file = dir.join("run.mcap");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crsim"))
        .args(["run", scene, "--steps", &steps.to_string(), "--record", &file.to_string_lossy()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    file
}

/// Opens `bytes` as a recording and reads every step of it, as inspect and replay do.
fn read_all(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).unwrap();
    let mut r = Recording::open(path)?;
    let (first, last) = r.steps();
    for step in [first, (first + last) / 2, last] {
        r.frame(step)?;
    }
    Ok(())
}

#[test]
fn damaged_recordings_are_errors_never_aborts() {
    let dir = common::Scratch::new("fuzz-mcap");
    let file = recording(&dir, "scenes/pens.ron", 300);
    let good = std::fs::read(&file).unwrap();
    read_all(&dir.join("same.mcap"), &good).unwrap();
    let damaged = dir.join("damaged.mcap");
    let (mut tried, mut refused) = (0u64, 0u64);
    let mut try_bytes = |what: String, bytes: &[u8]| {
        tried += 1;
        if survives(&what, || read_all(&damaged, bytes)).is_err() {
            refused += 1;
        }
    };
    // Bytes across the whole file (every one of the first 2 KiB, then evenly spaced) have one of
    // their bits flipped, in turn.
    let spread = (good.len() / 4000).max(1);
    for i in (0..good.len()).filter(|i| *i < 2048 || i % spread == 0) {
        let mut bytes = good.clone();
        bytes[i] ^= 1 << (i % 8);
        try_bytes(format!("bit {} of byte {i} flipped", i % 8), &bytes);
    }
    // The top bit of every byte of the first 2 KiB: lengths become huge.
    for i in 0..good.len().min(2048) {
        let mut bytes = good.clone();
        bytes[i] ^= 0x80;
        try_bytes(format!("the top bit of byte {i} flipped"), &bytes);
    }
    // Cut at 500 places.
    for k in 0..500 {
        let at = good.len() * k / 500;
        try_bytes(format!("cut at byte {at}"), &good[..at]);
    }
    // Chunks spliced: a stretch of the file repeated, or moved elsewhere.
    for k in 1..100 {
        let (a, b) = (good.len() * k / 200, good.len() * (k + 50) / 200);
        let mut bytes = good[..b].to_vec();
        bytes.extend_from_slice(&good[a..]);
        try_bytes(format!("bytes {a}..{b} repeated"), &bytes);
        let mut moved = good[..a].to_vec();
        moved.extend_from_slice(&good[b..]);
        moved.extend_from_slice(&good[a..b]);
        try_bytes(format!("bytes {a}..{b} moved to the end"), &moved);
    }
    println!("recordings: {tried} damaged files, {refused} refused with an error, {} read", tried - refused);
    assert!(refused > 0 && tried > 4_000, "{tried}");
    // The command line says what is wrong and exits 2 (a bit in a chunk's uncompressed size).
    let mut bytes = good.clone();
    let mut chunk = 8;
    while good[chunk] != 0x06 {
        chunk += 9 + u64::from_le_bytes(good[chunk + 1..chunk + 9].try_into().unwrap()) as usize;
    }
    // The top byte of its uncompressed size: about 9e18 bytes claimed.
    bytes[chunk + 9 + 16 + 7] ^= 0x7f;
    std::fs::write(&damaged, &bytes).unwrap();
    for command in ["inspect", "verify"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_crsim"))
            .args([command, &damaged.to_string_lossy()])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {shown}");
        assert!(shown.contains("damaged.mcap") && !shown.contains("panicked"), "{command}: {shown}");
    }
}

#[test]
fn program_and_virtualrobot_frames_cut_and_mangled_are_answered() {
    let frames = [
        r#"{"type":"register","robots":[{"name":"a","comm":"both"}],"encoding":"binary"}"#,
        r#"{"type":"act","step":3,"robots":[{"name":"a","drive":[0.3,-0.2],"grip":"close","send":[{"to":"b","content":{"x":1}}]}],"drives":2}"#,
        r#"{"type":"act","step":0,"robots":[{"name":"a","skill":{"kind":"MoveTo","x":1.0,"y":2.0}}]}"#,
        r#"{"type":"reset","seed":18446744073709551615}"#,
    ];
    let requests = [
        r#"{"robotmove":"moveForward","time":300}"#,
        r#"{"robotmove":"turnLeft","time":"-1"}"#,
        r#"{"robotmove":"alarm"}"#,
    ];
    let mut tried = 0u64;
    let mut mangle = |line: &str, parse: &dyn Fn(&str) -> bool| {
        for cut in 0..=line.len() {
            if line.is_char_boundary(cut) {
                survives(&format!("{line:?} cut at {cut}"), || parse(&line[..cut]));
                tried += 1;
            }
        }
        for (from, to) in numbers(line) {
            for value in HOSTILE {
                let m = format!("{}{value}{}", &line[..from], &line[to..]);
                survives(&m, || parse(&m));
                tried += 1;
            }
        }
        for i in 0..line.len() {
            let mut b = line.as_bytes().to_vec();
            let junk = b"{}[]\":,\\\0x9";
            b[i] = junk[i % junk.len()];
            let m = String::from_utf8_lossy(&b).to_string();
            survives(&m, || parse(&m));
            tried += 1;
        }
    };
    for f in frames {
        mangle(f, &|l| crsim::control::programs::protocol::parse_frame(l).is_ok());
    }
    for r in requests {
        mangle(r, &|l| crsim::control::remote::parse_request(l).is_ok());
    }
    // Binary drive records of any length.
    for n in 0..64 {
        let block: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
        survives("drive records", || crsim::control::programs::protocol::parse_drives(&block).len());
        tried += 1;
    }
    println!("frames: {tried} mangled program and VirtualRobot frames answered");
}

#[test]
fn sweep_files_set_values_and_network_files_made_hostile_are_answered() {
    let dir = common::Scratch::new("fuzz-sweep");
    let mut tried = 0u64;
    for path in shipped("experiments", "ron") {
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.replace("\"../scenes/", &format!("\"{}/scenes/", env!("CARGO_MANIFEST_DIR")));
        let file = dir.join("sweep.ron");
        for (from, to) in numbers(&text) {
            for value in HOSTILE {
                std::fs::write(&file, format!("{}{value}{}", &text[..from], &text[to..])).unwrap();
                let what = format!("{} with {} made {value}", path.display(), &text[from..to]);
                let planned = survives(&what, || crsim::experiment::sweep::load_sweep(&file));
                if let Ok(s) = planned {
                    assert!(s.runs.len() <= 1_000_000, "{what}: {} runs", s.runs.len());
                }
                tried += 1;
            }
        }
    }
    let scene = common::shipped_scene("pens.ron");
    for path in ["comms.probability", "robots[alpha].battery.initial", "robots[*].radius", "arena.width", "dt", "seed"]
    {
        for value in HOSTILE.iter().chain(&["(1.0, 2.0)", "\"text\"", "[", "Random", "true", ""]) {
            let set = format!("{path}={value}");
            survives(&set, || {
                if let Ok(v) = set.parse::<crsim::scene::overrides::SetValue>() {
                    let o = crsim::scene::SceneOverrides { programs: vec![], sets: vec![v] };
                    let mut s = scene.clone();
                    let mut errors = o.apply(&mut s);
                    errors.extend(crsim::scene::validate::validate(&s));
                }
            });
            tried += 1;
        }
    }
    let network = crsim::scene::network::default_network();
    let text = ron::ser::to_string_pretty(&network, ron::ser::PrettyConfig::default()).unwrap();
    for (from, to) in numbers(&text) {
        for value in HOSTILE {
            let m = format!("{}{value}{}", &text[..from], &text[to..]);
            survives(&m, || {
                if let Ok(n) = crsim::scene::network::parse_network(&m, "net.ron") {
                    crsim::scene::network::validate(&n);
                }
            });
            tried += 1;
        }
    }
    println!("sweeps, --set values and network files: {tried} hostile inputs answered");
}

#[test]
fn http_requests_and_udp_packets_cut_and_mangled_are_answered() {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    // The VirtualRobot's HTTP reader, over a real loopback connection whose client sends the
    // mangled bytes and closes its side.
    let body = r#"{"robotmove":"moveForward","time":300}"#;
    let request = format!(
        "POST /api/move HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut variants: Vec<Vec<u8>> = Vec::new();
    for cut in 0..=request.len() {
        variants.push(request.as_bytes()[..cut].to_vec());
    }
    for length in ["-1", "99999999999999999999", "1e9", "0x10", "", "65537", "18446744073709551615"] {
        variants.push(
            request
                .replace(&format!("Content-Length: {}", body.len()), &format!("Content-Length: {length}"))
                .into_bytes(),
        );
    }
    for i in 0..request.len() {
        let mut b = request.clone().into_bytes();
        b[i] = [0u8, b'\r', b'\n', b':', 0xff][i % 5];
        variants.push(b);
    }
    let mut tried = 0u64;
    for bytes in &variants {
        let mut client = TcpStream::connect(addr).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(bytes).unwrap();
        client.shutdown(std::net::Shutdown::Write).unwrap();
        survives(&format!("{:?}", String::from_utf8_lossy(bytes)), || {
            let _ = crsim::control::remote::http::read_request(&mut server);
        });
        tried += 1;
    }
    // The bot link's packets: every valid kind cut at every byte and each byte replaced.
    use crsim::botlink::packet::{Command, UpdateSlot, decode, encode};
    let slot = UpdateSlot { bot: 1, linear: 0.3, angular: -0.2, lateral: 0.0, grip: true, lamp: false };
    let packets = [
        encode(&Command::Move { linear: 0.3, angular: 0.1 }),
        encode(&Command::UpdateAll([slot; 5])),
        encode(&Command::Error { code: crsim::botlink::packet::ErrorCode::NotAllowed, reason: "no".into() }),
        encode(&Command::Grip { close: true }),
    ];
    for p in &packets {
        for cut in 0..=p.len() {
            survives("a cut packet", || decode(&p[..cut]).is_ok());
            tried += 1;
        }
        for i in 0..p.len() {
            for byte in [0u8, 0x7f, 0xff] {
                let mut m = p.clone();
                m[i] = byte;
                survives("a mangled packet", || decode(&m).is_ok());
                tried += 1;
            }
        }
    }
    println!("HTTP requests and UDP packets: {tried} mangled inputs answered");
}
