//! Grid branches: the `GridActor` and everything it owns (schema, views, dependencies,
//! records, history), with the pure functions that validate and apply changes to them.

pub mod actor;
mod apply;
mod cell_memo;
pub mod codec;
pub mod columns;
pub mod damage;
pub mod diff;
pub mod error;
pub mod feed;
pub mod formula;
pub mod history;
pub mod image;
pub mod merge;
pub mod merge_resolve;
pub mod ops;
pub mod paths;
pub mod planner;
pub mod preconditions;
pub mod query;
pub mod read;
pub mod read_json;
pub mod read_pool;
pub mod records;
pub mod references;
pub mod render;
pub mod schema;
pub mod schema_error;
pub mod statistic;
pub mod store;
pub mod value;
pub mod write_error;

pub use actor::GridActor;
