//! What a command prints on standard output. A reader that goes away early (`crsim collect DIR |
//! head -1`, `crsim run ... | true`) must neither end the work nor make crsim panic: the first
//! write that finds the pipe closed quietly stops all further printing, and the command finishes
//! its work, writes its files and exits as it would have.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Prints `text` to standard output as it is; nothing once the reader has gone.
pub fn print_str(text: &str) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            // Output that cannot be written for another reason (a full disk) is said once.
            let _ = writeln!(std::io::stderr(), "cannot write to standard output: {e}");
        }
    }
}

/// `println!` that ends quietly on a closed pipe (see the module's doc).
#[macro_export]
macro_rules! say {
    () => { $crate::sim::output::print_str("\n") };
    ($($arg:tt)*) => { $crate::sim::output::print_str(&format!("{}\n", format_args!($($arg)*))) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn printing_after_the_reader_went_is_quiet() {
        // The flag is what every later print obeys; a closed pipe sets it.
        super::CLOSED.store(true, super::Ordering::Relaxed);
        crate::say!("not printed: {}", 1);
        assert!(super::CLOSED.load(super::Ordering::Relaxed));
        super::CLOSED.store(false, super::Ordering::Relaxed);
    }
}
