//! The registry of run-report sections: each subsystem registers a function that adds its own
//! section (for example `comms`, `collect`, `explore`) to what `crsim run` writes; `run/` builds
//! the report and calls them all.

use bevy::prelude::*;

/// A function that adds one section to the report: its key and its JSON value, or nothing when
/// the subsystem has nothing to say about this run.
pub type SectionFn = fn(&mut World) -> Option<(String, serde_json::Value)>;

/// The registered section functions, in registration order.
#[derive(Resource, Default)]
pub struct ReportSections(pub Vec<SectionFn>);

/// Registers a report section.
pub fn add_report_section(app: &mut App, section: SectionFn) {
    app.world_mut().get_resource_or_init::<ReportSections>().0.push(section);
}
