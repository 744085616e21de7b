//! Cargo resolves a package's build-dependencies (here the features proc-macro crates share)
//! only when it has a build script; this one does nothing.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
