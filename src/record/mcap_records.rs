//! The few MCAP records a recording is read by (header, channel, metadata, chunk, message),
//! parsed from a record's body with every length checked against the bytes that are there, and
//! a chunk's records decompressed within the size it declares, its CRC checked before any record
//! in it is read. A damaged file (a flipped bit in a length, a cut, chunks spliced together) is
//! an error naming what is wrong, never an allocation the file's numbers ask for.
//!
//! The layouts are those of the MCAP specification (lengths little-endian; a string is a `u32`
//! byte length then UTF-8; a map is a `u32` byte length then key/value strings).

use std::collections::BTreeMap;
use std::io::Read;

/// Opcodes of the records read here.
pub const OP_HEADER: u8 = 0x01;
pub const OP_FOOTER: u8 = 0x02;
pub const OP_CHANNEL: u8 = 0x04;
pub const OP_MESSAGE: u8 = 0x05;
pub const OP_CHUNK: u8 = 0x06;
pub const OP_METADATA: u8 = 0x0C;
pub const OP_DATA_END: u8 = 0x0F;

/// A record's body, read field by field; every read fails cleanly past the end.
pub struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], String> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(format!("{what} claims {n} bytes where {left} are left"));
        }
        let out = &self.bytes[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(out)
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap_or_default()))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap_or_default()))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap_or_default()))
    }

    pub fn string(&mut self, what: &str) -> Result<String, String> {
        let n = self.u32(what)?;
        let bytes = self.take(u64::from(n), what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    }

    pub fn map(&mut self, what: &str) -> Result<BTreeMap<String, String>, String> {
        let n = self.u32(what)?;
        let mut inner = Fields::new(self.take(u64::from(n), what)?);
        let mut out = BTreeMap::new();
        while inner.at < inner.bytes.len() {
            let key = inner.string(what)?;
            let value = inner.string(what)?;
            out.insert(key, value);
        }
        Ok(out)
    }

    /// What is left of the body.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.bytes[self.at..];
        self.at = self.bytes.len();
        out
    }
}

/// A header record's profile.
pub fn header_profile(body: &[u8]) -> Result<String, String> {
    Fields::new(body).string("the header's profile")
}

/// A channel record: its id and topic.
pub fn channel(body: &[u8]) -> Result<(u16, String), String> {
    let mut f = Fields::new(body);
    let id = f.u16("a channel's id")?;
    let _schema = f.u16("a channel's schema id")?;
    let topic = f.string("a channel's topic")?;
    Ok((id, topic))
}

/// A metadata record: its name and its map.
pub fn metadata(body: &[u8]) -> Result<(String, BTreeMap<String, String>), String> {
    let mut f = Fields::new(body);
    let name = f.string("the metadata's name")?;
    let map = f.map("the metadata's map")?;
    Ok((name, map))
}

/// A message record: its channel, log time and data.
pub fn message(body: &[u8]) -> Result<(u16, u64, &[u8]), String> {
    let mut f = Fields::new(body);
    let channel = f.u16("a message's channel")?;
    let _sequence = f.u32("a message's sequence")?;
    let log_time = f.u64("a message's log time")?;
    let _publish_time = f.u64("a message's publish time")?;
    Ok((channel, log_time, f.rest()))
}

/// A chunk's records, decompressed and checked: at most `limit` bytes (and exactly as many as
/// the chunk says), their CRC as the chunk gives it (a CRC of 0 means none was written).
pub fn chunk_records(body: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let mut f = Fields::new(body);
    let _start = f.u64("the chunk's start time")?;
    let _end = f.u64("the chunk's end time")?;
    let size = f.u64("the chunk's uncompressed size")?;
    let crc = f.u32("the chunk's CRC")?;
    let compression = f.string("the chunk's compression")?;
    let length = f.u64("the chunk's records")?;
    let data = f.take(length, "the chunk's records")?;
    if size > limit {
        return Err(format!("the chunk claims {size} bytes uncompressed, more than {limit}"));
    }
    let records = match compression.as_str() {
        "" => data.to_vec(),
        "zstd" => {
            // Read as the stream yields, never more than the chunk says: memory follows the data
            // that is there, not the size a damaged header claims.
            let decoder = zstd::stream::read::Decoder::with_buffer(data)
                .map_err(|e| format!("the chunk cannot be decompressed: {e}"))?;
            let mut out = Vec::with_capacity(size.min(data.len() as u64 * 4) as usize);
            decoder
                .take(size + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("the chunk cannot be decompressed: {e}"))?;
            out
        }
        other => return Err(format!("the chunk is compressed with {other:?}, which crsim does not write")),
    };
    if records.len() as u64 != size {
        return Err(format!("the chunk holds {} bytes uncompressed where it says {size}", records.len()));
    }
    if crc != 0 && crc32fast::hash(&records) != crc {
        return Err("the chunk's CRC does not match its records".into());
    }
    Ok(records)
}

/// The records of a decompressed chunk, as (opcode, body), each length checked.
pub fn records(bytes: &[u8]) -> impl Iterator<Item = Result<(u8, &[u8]), String>> {
    let mut f = Fields::new(bytes);
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || f.at == f.bytes.len() {
            return None;
        }
        let at = f.at;
        let record = (|| {
            let op = f.take(1, "a record's opcode")?[0];
            let len = f.u64("a record's length")?;
            Ok((op, f.take(len, "a record")?))
        })();
        failed = record.is_err();
        Some(record.map_err(|e: String| format!("at byte {at} of the chunk's records: {e}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> Vec<u8> {
        let mut out = (s.len() as u32).to_le_bytes().to_vec();
        out.extend(s.as_bytes());
        out
    }

    #[test]
    fn lengths_past_the_end_are_errors_not_allocations() {
        let mut body = string("crsim");
        assert_eq!(header_profile(&body).unwrap(), "crsim");
        body[3] = 0x7f; // the length's top byte: about 2 GB claimed
        let e = header_profile(&body).unwrap_err();
        assert!(e.contains("claims 2130706437 bytes where 5 are left"), "{e}");
        let mut meta = string("run");
        let mut map = string("k");
        map.extend(string("v"));
        meta.extend((map.len() as u32).to_le_bytes());
        meta.extend(&map);
        let (name, m) = metadata(&meta).unwrap();
        assert_eq!((name.as_str(), m.get("k").map(String::as_str)), ("run", Some("v")));
        let n = meta.len();
        meta[n - 1 - map.len()] = 0xff;
        assert!(metadata(&meta).is_err());
    }

    fn chunk(records: &[u8], compression: &str, size: u64, crc: u32) -> Vec<u8> {
        let data = if compression == "zstd" { zstd::bulk::compress(records, 3).unwrap() } else { records.to_vec() };
        let mut body = Vec::new();
        body.extend(0u64.to_le_bytes());
        body.extend(0u64.to_le_bytes());
        body.extend(size.to_le_bytes());
        body.extend(crc.to_le_bytes());
        body.extend(string(compression));
        body.extend((data.len() as u64).to_le_bytes());
        body.extend(data);
        body
    }

    #[test]
    fn a_chunk_is_checked_before_its_records_are_read() {
        let mut records = vec![OP_MESSAGE];
        records.extend(22u64.to_le_bytes());
        records.extend([1, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let crc = crc32fast::hash(&records);
        let n = records.len() as u64;
        for compression in ["", "zstd"] {
            let out = chunk_records(&chunk(&records, compression, n, crc), 1 << 20).unwrap();
            let all: Vec<_> = super::records(&out).collect::<Result<_, _>>().unwrap();
            assert_eq!(all.len(), 1);
            assert_eq!(message(all[0].1).unwrap(), (1, 7, &[][..]));
            // A size too big, a size that lies, a CRC that does not match.
            let e = chunk_records(&chunk(&records, compression, 185_498_045_644_811_321, crc), 1 << 20).unwrap_err();
            assert!(e.contains("more than 1048576"), "{e}");
            let e = chunk_records(&chunk(&records, compression, n + 100, crc), 1 << 20).unwrap_err();
            assert!(e.contains("where it says"), "{e}");
            let e = chunk_records(&chunk(&records, compression, n, crc ^ 1), 1 << 20).unwrap_err();
            assert!(e.contains("CRC"), "{e}");
        }
        let mut bad = records.clone();
        bad[1] = 0xff;
        let e = super::records(&bad).find_map(Result::err).unwrap();
        assert!(e.contains("at byte 0"), "{e}");
    }
}
