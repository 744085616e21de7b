//! The `crsim` binary: the library's command line ([`crsim::cli`]), which a crate extending crsim
//! makes its own binary from with its plugins added.

fn main() -> std::process::ExitCode {
    crsim::cli::main()
}
