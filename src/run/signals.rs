//! Ctrl-C, SIGTERM and SIGHUP during a headless run or a sweep ask the run to stop at the next
//! chunk of steps, so what is done is written (marked interrupted) and nothing is left
//! half-written. Every one of them asks the same: a second signal while the run writes its
//! results (a launcher that dies sends its SIGTERM from two threads) must not end it before they
//! are written. SIGQUIT (`Ctrl-\`) or SIGKILL end the process at once.

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

use crate::sim::stop;

extern "C" fn on_signal(_: nix::libc::c_int) {
    // Only an atomic store: nothing else is safe in a signal handler.
    stop::request();
}

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP, which stay installed: a repeated
/// signal asks again for the stop already asked for.
pub fn install() -> Result<(), String> {
    let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::empty(), SigSet::empty());
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { sigaction(signal, &action) }.map_err(|e| format!("cannot handle {signal}: {e}"))?;
    }
    Ok(())
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    stop::requested()
}

/// Asks for a stop, as a signal would (tests, and a sweep stopping its workers).
pub fn request() {
    stop::request();
}
