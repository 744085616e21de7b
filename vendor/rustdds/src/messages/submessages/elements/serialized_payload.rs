use std::{cmp::min, io};

use bytes::{Bytes, BytesMut};
use speedy::{Context, Writable, Writer};
use byteorder::ReadBytesExt;
use log::warn;

use crate::RepresentationIdentifier;

/// A SerializedPayload submessage element contains the serialized
/// representation of either value of an application-defined data-object or
/// the value of the key that uniquely identifies the data-object
/// See RTPS spec v2.3 section 10.
/// Standard representation identifier values are defined in sections 10.2 -
/// 10.5 representation_options "shall be interpreted in the context of the
/// RepresentationIdentifier, such that each RepresentationIdentifier may define
/// the representation_options that it requires." and "The [2.3] version of the
/// protocol does not use the representation_options: The sender shall set the
/// representation_options to zero. The receiver shall ignore the value of the
/// representation_options."
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct SerializedPayload {
  pub representation_identifier: RepresentationIdentifier,
  // Can represent payload protection kind. Currently not used outside security.
  pub representation_options: [u8; 2],
  pub value: Bytes,
}

/// Whether a payload is (P)L_CDR or CDR2 data, whose options carry the padding (other
/// identifiers, such as secured payloads, give the options other meanings).
fn is_cdr(id: RepresentationIdentifier) -> bool {
  [
    RepresentationIdentifier::CDR_BE,
    RepresentationIdentifier::CDR_LE,
    RepresentationIdentifier::PL_CDR_BE,
    RepresentationIdentifier::PL_CDR_LE,
    RepresentationIdentifier::CDR2_BE,
    RepresentationIdentifier::CDR2_LE,
    RepresentationIdentifier::PL_CDR2_BE,
    RepresentationIdentifier::PL_CDR2_LE,
    RepresentationIdentifier::D_CDR2_BE,
    RepresentationIdentifier::D_CDR2_LE,
  ]
  .contains(&id)
}

// header length
// 2 bytes for representation identifier
// + 2 bytes for representation options
const H_LEN: usize = 2 + 2;

impl SerializedPayload {
  pub fn new(rep_id: RepresentationIdentifier, payload: Vec<u8>) -> Self {
    Self {
      representation_identifier: rep_id,
      representation_options: [0, 0],
      value: Bytes::from(payload),
    }
  }

  pub fn new_from_bytes(rep_id: RepresentationIdentifier, payload: Bytes) -> Self {
    Self {
      representation_identifier: rep_id,
      representation_options: [0, 0],
      value: payload,
    }
  }

  pub(crate) fn reallocate(&mut self) {
    self.value = Bytes::copy_from_slice(&self.value);
  }

  /// serialized size in bytes
  pub fn len_serialized(&self) -> usize {
    H_LEN + self.value.len()
  }

  // a slice of serialized data
  // This has a lot of H_LEN offsets, because the data to be sliced
  // is header + value
  pub fn bytes_slice(&self, from: usize, to_before: usize) -> Bytes {
    // sanitize inputs. These are unsigned values, so always at least zero.
    let to_before = min(to_before, self.value.len() + H_LEN);
    let from = min(from, to_before);

    if from >= H_LEN {
      // no need to copy, can return a slice
      self.value.slice(from - H_LEN..to_before - H_LEN)
    } else {
      // We need to copy the payload on order to prefix with header
      let mut b = BytesMut::with_capacity(to_before);
      b.extend_from_slice(&self.representation_identifier.bytes);
      b.extend_from_slice(&self.representation_options);
      assert_eq!(b.len(), H_LEN);
      if to_before > H_LEN {
        b.extend_from_slice(&self.value.slice(..to_before - H_LEN));
      }
      b.freeze().slice(from..to_before)
    }
  }

  // Implement deserialization here, because Speedy just makes it difficult.
  pub fn from_bytes(bytes: &Bytes) -> io::Result<Self> {
    let mut reader = io::Cursor::new(&bytes);
    let representation_identifier = RepresentationIdentifier {
      bytes: [reader.read_u8()?, reader.read_u8()?],
    };
    let representation_options = [reader.read_u8()?, reader.read_u8()?];
    let value = if bytes.len() >= H_LEN {
      bytes.slice(H_LEN..)
    } else {
      warn!("DATA submessage was smaller than submessage header: {bytes:?}");
      return Err(io::Error::other("Too short DATA submessage."));
    };
    // crsim's patch: DDS-XTypes 1.3 (7.6.3.1.2) and RTPS 2.5 (10.2) give the padding a writer
    // added to reach a multiple of 4 bytes in the two low bits of the options; the value is what
    // comes before it (a 47-byte sample padded to 48 would otherwise read as 48 bytes of data).
    let padding = usize::from(representation_options[1] & 0b11);
    let value = if is_cdr(representation_identifier) && padding > 0 {
      if padding > value.len() {
        return Err(io::Error::other("DATA submessage padding is longer than its data."));
      }
      value.slice(..value.len() - padding)
    } else {
      value
    };

    Ok(Self {
      representation_identifier,
      representation_options,
      value,
    })
  }
}

impl<C: Context> Writable<C> for SerializedPayload {
  fn write_to<T: ?Sized + Writer<C>>(&self, writer: &mut T) -> Result<(), C::Error> {
    writer.write_u8(self.representation_identifier.bytes[0])?;
    writer.write_u8(self.representation_identifier.bytes[1])?;
    writer.write_u8(self.representation_options[0])?;
    writer.write_u8(self.representation_options[1])?;
    writer.write_bytes(&self.value)?;
    Ok(())
  }
}

// Infallible: payload is already in memory as Bytes with a fixed 4-byte header.
impl From<SerializedPayload> for Bytes {
  fn from(sp: SerializedPayload) -> Bytes {
    let mut b = BytesMut::with_capacity(sp.len_serialized());
    b.extend_from_slice(&sp.representation_identifier.bytes);
    b.extend_from_slice(&sp.representation_options);
    b.extend_from_slice(&sp.value);
    b.freeze()
  }
}
