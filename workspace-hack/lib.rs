//! No code: this crate's manifest asks for the features every build of crsim shares (see its
//! `Cargo.toml`).
