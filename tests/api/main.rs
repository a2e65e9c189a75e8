//! Black-box tests of gridd over HTTP: each test starts the real server on port 0 with its own
//! data directory (see `helpers::spawn_app`). One module per area.

mod helpers;

mod branches;
mod cli;
mod columns;
mod compat;
mod crash;
mod databases;
mod dependencies;
mod diffcheck;
mod durability;
mod errors;
mod faults;
mod files;
mod formulas;
mod grids;
mod heavy_work;
mod history_export;
mod hostile_limits;
mod hostile_tenancy;
mod hostile_uploads;
mod import;
mod import_formats;
mod keys;
mod loadtest;
mod localization;
mod merge_options;
mod merge_property;
mod metrics;
mod openapi;
mod projects;
mod query;
mod reads;
mod record_history;
mod records;
mod references;
mod restart;
mod settings;
mod shares;
mod smoke;
mod snapshot_faults;
mod surface;
mod tasks;
mod view_export;
mod views;
