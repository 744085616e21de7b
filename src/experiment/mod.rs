//! Experiments: parameter sweeps over seeds, planned for any engine (GNU parallel, SLURM, or
//! `crsim sweep --jobs` on this machine), and their results collected into tables and plots.
//! Plain logic over files and child processes, no Bevy systems: each run is a `crsim run`
//! process writing its metrics JSON, so a sweep runs the same on a laptop and on a cluster. The
//! top floor beside `run/`: it reads scenes (`scene/`), stop conditions and result files
//! (`run/`).

pub mod collect;
pub mod command;
pub mod plan;
pub mod plot;
pub mod runner;
pub mod stats;
pub mod sweep;
