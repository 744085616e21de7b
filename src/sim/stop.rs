//! A stop asked for from outside the simulation (Ctrl-C, SIGTERM, a sweep stopping its workers),
//! as one flag every floor can read: whatever waits on the world outside (the program server for
//! its programs' answers, the headless runner for programs to register) stops waiting when it is
//! set, so a stop never waits on a program that stays silent.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Asks for a stop. Only an atomic store: safe in a signal handler.
pub fn request() {
    STOP.store(true, Ordering::SeqCst);
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
